// SPDX-License-Identifier: MIT
#include "ui/designer/fault_table.h"

#include "ui/designer/field_docs.h"

#include "core/spec/spec.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLocale>
#include <QPushButton>
#include <QStyledItemDelegate>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <functional>

namespace dasp::ui {

namespace {

QString number(double v) { return QString::number(v, 'g', QLocale::FloatingPointShortest); }

QString actionText(v1::FaultSpec::Action action) { return QString::fromStdString(faultActionName(action)); }

Status parseSeconds(const QString& text, const std::string& field, double* out) {
  bool ok = false;
  *out = text.toDouble(&ok);
  if (!ok) return Status::error(field + ": '" + text.toStdString() + "' is not a number");
  if (!std::isfinite(*out)) return Status::error(field + ": '" + text.toStdString() + "' is not a finite number");
  return Status::ok();
}

// The node column edits with a combo of the known names (still free text: "server-3" of a
// longer chain, a renamed worker); the action column with kill / pause / disconnect.
class FaultDelegate : public QStyledItemDelegate {
 public:
  FaultDelegate(const QStringList* names, QObject* parent) : QStyledItemDelegate(parent), m_names(names) {}

  QWidget* createEditor(QWidget* parent, const QStyleOptionViewItem& option, const QModelIndex& index) const override {
    if (index.column() == FaultTable::Node) {
      auto* combo = new QComboBox(parent);
      combo->setEditable(true);
      combo->setInsertPolicy(QComboBox::NoInsert);
      combo->addItems(*m_names);
      return combo;
    }
    if (index.column() == FaultTable::Action) {
      auto* combo = new QComboBox(parent);
      combo->addItems({QStringLiteral("kill"), QStringLiteral("pause"), QStringLiteral("disconnect")});
      return combo;
    }
    return QStyledItemDelegate::createEditor(parent, option, index);
  }

  void setEditorData(QWidget* editor, const QModelIndex& index) const override {
    if (auto* combo = qobject_cast<QComboBox*>(editor)) {
      const QString text = index.data(Qt::EditRole).toString();
      const int found = combo->findText(text, Qt::MatchFixedString);
      if (found >= 0) {
        combo->setCurrentIndex(found);
      } else if (combo->isEditable()) {
        combo->setEditText(text);
      }
      return;
    }
    QStyledItemDelegate::setEditorData(editor, index);
  }

  void setModelData(QWidget* editor, QAbstractItemModel* model, const QModelIndex& index) const override {
    if (auto* combo = qobject_cast<QComboBox*>(editor)) {
      model->setData(index, combo->currentText().trimmed(), Qt::EditRole);
      return;
    }
    QStyledItemDelegate::setModelData(editor, model, index);
  }

 private:
  const QStringList* m_names;
};

}  // namespace

FaultTable::FaultTable(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  m_table = new QTableWidget(0, ColumnCount, this);
  m_table->setObjectName(QStringLiteral("faultTable"));
  m_table->setHorizontalHeaderLabels({tr("Node"), tr("Action"), tr("At (s)"), tr("Restart after (s)")});
  // The proto's own comments (field_docs.h): each column is a field of faults.
  const char* const fields[ColumnCount] = {"faults.node", "faults.action", "faults.at_s", "faults.restart_after_s"};
  for (int c = 0; c < ColumnCount; ++c) m_table->horizontalHeaderItem(c)->setToolTip(fieldToolTip(fields[c]));
  m_table->setItemDelegate(new FaultDelegate(&m_nodeNames, m_table));
  m_table->verticalHeader()->hide();
  m_table->horizontalHeader()->setStretchLastSection(true);
  m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_table->setMinimumHeight(90);
  layout->addWidget(m_table);

  auto* buttons = new QHBoxLayout;
  auto* add = new QPushButton(tr("Add drill"), this);
  add->setObjectName(QStringLiteral("addFaultButton"));
  m_remove = new QPushButton(tr("Remove"), this);
  m_remove->setObjectName(QStringLiteral("removeFaultButton"));
  m_remove->setEnabled(false);
  buttons->addWidget(add);
  buttons->addWidget(m_remove);
  buttons->addStretch(1);
  layout->addLayout(buttons);

  connect(add, &QPushButton::clicked, this, &FaultTable::addFault);
  connect(m_remove, &QPushButton::clicked, this, &FaultTable::removeSelectedFaults);
  connect(m_table, &QTableWidget::itemChanged, this, [this] { Q_EMIT changed(); });
  connect(m_table->selectionModel(), &QItemSelectionModel::selectionChanged, this,
          [this] { m_remove->setEnabled(m_table->selectionModel()->hasSelection()); });
}

void FaultTable::setFaults(const google::protobuf::RepeatedPtrField<v1::FaultSpec>& faults) {
  const QSignalBlocker block(m_table);  // filling is not an edit
  m_table->setRowCount(0);
  for (const auto& f : faults) appendRow(f);
  m_remove->setEnabled(false);
}

void FaultTable::appendRow(const v1::FaultSpec& fault) {
  const int row = m_table->rowCount();
  m_table->insertRow(row);
  m_table->setItem(row, Node, new QTableWidgetItem(QString::fromStdString(fault.node())));
  m_table->setItem(row, Action, new QTableWidgetItem(actionText(fault.action())));
  m_table->setItem(row, AtS, new QTableWidgetItem(number(fault.at_s())));
  m_table->setItem(row, RestartAfterS,
                   new QTableWidgetItem(fault.has_restart_after_s() ? number(fault.restart_after_s()) : QString()));
}

Result<std::vector<v1::FaultSpec>> FaultTable::faults() const {
  auto text = [this](int row, int column) {
    const QTableWidgetItem* item = m_table->item(row, column);
    return item ? item->text().trimmed() : QString();
  };
  std::vector<v1::FaultSpec> out;
  for (int row = 0; row < m_table->rowCount(); ++row) {
    const std::string field = "faults[" + std::to_string(row) + "]";
    v1::FaultSpec f;
    f.set_node(text(row, Node).toStdString());
    const QString action = text(row, Action).toLower();
    if (action == QLatin1String("kill") || action.isEmpty()) {
      f.set_action(v1::FaultSpec::KILL);
    } else if (action == QLatin1String("pause")) {
      f.set_action(v1::FaultSpec::PAUSE);
    } else if (action == QLatin1String("disconnect")) {
      f.set_action(v1::FaultSpec::DISCONNECT);
    } else {
      return Status::error(field + ".action: '" + text(row, Action).toStdString() +
                           "' is not kill, pause or disconnect");
    }
    const QString at = text(row, AtS);
    if (at.isEmpty()) return Status::error(field + ".at_s: empty (the run time of the fault, in seconds)");
    double v = 0;
    if (auto st = parseSeconds(at, field + ".at_s", &v); !st) return st;
    f.set_at_s(v);
    const QString restart = text(row, RestartAfterS);
    if (!restart.isEmpty()) {
      if (auto st = parseSeconds(restart, field + ".restart_after_s", &v); !st) return st;
      f.set_restart_after_s(v);
    }
    out.push_back(std::move(f));
  }
  return out;
}

int FaultTable::faultCount() const { return m_table->rowCount(); }

void FaultTable::setNodeNames(const QStringList& names) { m_nodeNames = names; }

void FaultTable::addFault() {
  double at = 10;
  for (int row = 0; row < m_table->rowCount(); ++row) {
    bool ok = false;
    const double v = m_table->item(row, AtS) ? m_table->item(row, AtS)->text().toDouble(&ok) : 0;
    if (ok && std::isfinite(v)) at = std::max(at, v + 10);
  }
  v1::FaultSpec fault;
  fault.set_node("server");
  fault.set_action(v1::FaultSpec::KILL);
  fault.set_at_s(at);
  fault.set_restart_after_s(5);
  {
    const QSignalBlocker block(m_table);
    appendRow(fault);
  }
  Q_EMIT changed();
}

void FaultTable::removeSelectedFaults() {
  QList<int> rows;
  for (const QModelIndex& index : m_table->selectionModel()->selectedRows()) rows << index.row();
  if (rows.isEmpty()) return;
  std::sort(rows.begin(), rows.end(), std::greater<int>());
  for (int row : rows) m_table->removeRow(row);
  Q_EMIT changed();
}

}  // namespace dasp::ui
