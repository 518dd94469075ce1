// SPDX-License-Identifier: MIT
#include "ui/designer/cluster_table.h"

#include "ui/designer/field_docs.h"

#include "core/spec/spec.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLocale>
#include <QPushButton>
#include <QSet>
#include <QStringList>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>

namespace dasp::ui {

namespace {

constexpr int kNodeRole = Qt::UserRole + 1;  // the row's NodeSpec, serialized

QString number(double v) { return QString::number(v, 'g', QLocale::FloatingPointShortest); }

// "8:3, 20:1" — at 8 s slowdown 3, at 20 s slowdown 1.
QString changesText(const v1::SpeedProfile& speed) {
  QStringList parts;
  for (const auto& c : speed.changes()) parts << number(c.at_s()) + QLatin1Char(':') + number(c.slowdown());
  return parts.join(QStringLiteral(", "));
}

Status parseNumber(const QString& text, const std::string& field, double* out) {
  bool ok = false;
  *out = text.trimmed().toDouble(&ok);
  if (!ok) return Status::error(field + ": '" + text.trimmed().toStdString() + "' is not a number");
  return Status::ok();
}

}  // namespace

ClusterTable::ClusterTable(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  m_table = new QTableWidget(0, ColumnCount, this);
  m_table->setObjectName(QStringLiteral("clusterTable"));
  m_table->setHorizontalHeaderLabels(
      {tr("Name"), tr("Slowdown ×"), tr("Base iteration (ms)"), tr("Jitter"), tr("Speed changes (s:×)")});
  // The proto's own comments (field_docs.h): each column is a field of cluster.workers.
  const char* const fields[ColumnCount] = {"cluster.workers.name", "cluster.workers.speed.slowdown",
                                           "cluster.workers.speed.base_iteration_ms", "cluster.workers.speed.jitter",
                                           "cluster.workers.speed.changes"};
  for (int c = 0; c < ColumnCount; ++c) m_table->horizontalHeaderItem(c)->setToolTip(fieldToolTip(fields[c]));
  m_table->verticalHeader()->hide();
  m_table->horizontalHeader()->setStretchLastSection(true);
  m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_table->setMinimumHeight(120);
  layout->addWidget(m_table);

  auto* buttons = new QHBoxLayout;
  auto* add = new QPushButton(tr("Add worker"), this);
  add->setObjectName(QStringLiteral("addWorkerButton"));
  m_remove = new QPushButton(tr("Remove"), this);
  m_remove->setObjectName(QStringLiteral("removeWorkerButton"));
  m_remove->setEnabled(false);
  buttons->addWidget(add);
  buttons->addWidget(m_remove);
  buttons->addStretch(1);
  layout->addLayout(buttons);
  m_note = new QLabel(this);
  m_note->setWordWrap(true);
  m_note->setStyleSheet(QStringLiteral("QLabel { color: palette(mid); }"));
  layout->addWidget(m_note);

  connect(add, &QPushButton::clicked, this, &ClusterTable::addWorker);
  connect(m_remove, &QPushButton::clicked, this, &ClusterTable::removeSelectedWorkers);
  connect(m_table, &QTableWidget::itemChanged, this, [this] { markEdited(); });
  connect(m_table->selectionModel(), &QItemSelectionModel::selectionChanged, this,
          [this] { m_remove->setEnabled(m_table->selectionModel()->hasSelection()); });
}

void ClusterTable::setCluster(const v1::ClusterSpec& cluster) {
  m_original = cluster;
  m_edited = false;
  ExperimentSpec holder;
  *holder.mutable_cluster() = cluster;
  const QSignalBlocker block(m_table);  // filling is not an edit
  m_table->setRowCount(0);
  for (const auto& node : expandWorkers(holder)) appendRow(node);
  updateNote();
}

void ClusterTable::appendRow(const v1::NodeSpec& node) {
  const int row = m_table->rowCount();
  m_table->insertRow(row);
  const auto& speed = node.speed();
  auto* name = new QTableWidgetItem(QString::fromStdString(node.name()));
  const std::string bytes = node.SerializeAsString();
  name->setData(kNodeRole, QByteArray(bytes.data(), static_cast<int>(bytes.size())));
  m_table->setItem(row, Name, name);
  m_table->setItem(row, Slowdown, new QTableWidgetItem(speed.has_slowdown() ? number(speed.slowdown()) : QString()));
  m_table->setItem(row, BaseMs, new QTableWidgetItem(number(speed.base_iteration_ms())));
  m_table->setItem(row, Jitter, new QTableWidgetItem(number(speed.jitter())));
  m_table->setItem(row, Changes, new QTableWidgetItem(changesText(speed)));
}

Result<v1::ClusterSpec> ClusterTable::cluster() const {
  if (!m_edited) return m_original;  // keeps `count` + pattern exactly as written
  v1::ClusterSpec out = m_original;
  out.clear_workers();
  out.clear_count();
  out.clear_slowdowns();
  out.clear_base_iteration_ms();
  auto text = [this](int row, int column) {
    const QTableWidgetItem* item = m_table->item(row, column);
    return item ? item->text().trimmed() : QString();
  };
  for (int row = 0; row < m_table->rowCount(); ++row) {
    v1::NodeSpec node;
    if (const QTableWidgetItem* item = m_table->item(row, Name)) {
      const QByteArray bytes = item->data(kNodeRole).toByteArray();
      if (!bytes.isEmpty()) (void)node.ParseFromArray(bytes.constData(), static_cast<int>(bytes.size()));
    }
    const std::string field = "cluster.workers[" + std::to_string(row) + "]";
    node.set_name(text(row, Name).toStdString());
    auto* speed = node.mutable_speed();
    double v = 0;
    speed->clear_slowdown();
    if (!text(row, Slowdown).isEmpty()) {
      if (auto st = parseNumber(text(row, Slowdown), field + ".speed.slowdown", &v); !st) return st;
      speed->set_slowdown(v);
    }
    speed->set_base_iteration_ms(0);
    if (!text(row, BaseMs).isEmpty()) {
      if (auto st = parseNumber(text(row, BaseMs), field + ".speed.base_iteration_ms", &v); !st) return st;
      speed->set_base_iteration_ms(v);
    }
    speed->set_jitter(0);
    if (!text(row, Jitter).isEmpty()) {
      if (auto st = parseNumber(text(row, Jitter), field + ".speed.jitter", &v); !st) return st;
      speed->set_jitter(v);
    }
    speed->clear_changes();
    const QStringList changes = text(row, Changes).split(QLatin1Char(','), Qt::SkipEmptyParts);
    for (int c = 0; c < changes.size(); ++c) {
      const QStringList pair = changes[c].split(QLatin1Char(':'));
      const std::string changeField = field + ".speed.changes[" + std::to_string(c) + "]";
      if (pair.size() != 2) {
        return Status::error(changeField + ": '" + changes[c].trimmed().toStdString() +
                             "' is not at_s:slowdown (e.g. 8:3)");
      }
      double at = 0, slowdown = 0;
      if (auto st = parseNumber(pair[0], changeField + ".at_s", &at); !st) return st;
      if (auto st = parseNumber(pair[1], changeField + ".slowdown", &slowdown); !st) return st;
      auto* change = speed->add_changes();
      change->set_at_s(at);
      change->set_slowdown(slowdown);
    }
    *out.add_workers() = node;
  }
  return out;
}

int ClusterTable::workerCount() const { return m_table->rowCount(); }

QStringList ClusterTable::workerNames() const {
  QStringList names;
  for (int row = 0; row < m_table->rowCount(); ++row) {
    const QTableWidgetItem* item = m_table->item(row, Name);
    if (item != nullptr && !item->text().trimmed().isEmpty()) names << item->text().trimmed();
  }
  return names;
}

void ClusterTable::addWorker() {
  QSet<QString> taken;
  for (int row = 0; row < m_table->rowCount(); ++row) {
    if (const QTableWidgetItem* item = m_table->item(row, Name)) taken.insert(item->text());
  }
  int n = m_table->rowCount();
  while (taken.contains(QStringLiteral("worker-%1").arg(n))) ++n;
  v1::NodeSpec node;
  node.set_name(QStringLiteral("worker-%1").arg(n).toStdString());
  node.mutable_speed()->set_slowdown(1.0);
  // A new worker runs like the last one by default.
  if (const QTableWidgetItem* base = m_table->item(m_table->rowCount() - 1, BaseMs)) {
    node.mutable_speed()->set_base_iteration_ms(base->text().toDouble());
  }
  {
    const QSignalBlocker block(m_table);
    appendRow(node);
  }
  markEdited();
}

void ClusterTable::removeSelectedWorkers() {
  QList<int> rows;
  for (const QModelIndex& index : m_table->selectionModel()->selectedRows()) rows << index.row();
  if (rows.isEmpty()) return;
  std::sort(rows.begin(), rows.end(), std::greater<int>());
  for (int row : rows) m_table->removeRow(row);
  markEdited();
}

void ClusterTable::markEdited() {
  m_edited = true;
  updateNote();
  Q_EMIT changed();
}

void ClusterTable::updateNote() {
  if (!m_edited && m_original.workers_size() == 0) {
    QStringList pattern;
    for (double s : m_original.slowdowns()) pattern << number(s);
    m_note->setText(tr("Written as count %1 with slowdown pattern [%2], base %3 ms; editing the table writes "
                       "one entry per worker.")
                        .arg(m_original.has_count() ? m_original.count() : 1)
                        .arg(pattern.join(QStringLiteral(", ")))
                        .arg(number(m_original.base_iteration_ms())));
    m_note->show();
  } else {
    m_note->hide();
  }
}

}  // namespace dasp::ui
