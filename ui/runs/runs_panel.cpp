// SPDX-License-Identifier: MIT
#include "ui/runs/runs_panel.h"

#include "ui/charts/run_data.h"
#include "ui/runs/run_table_model.h"

#include <QAction>
#include <QDialog>
#include <QDialogButtonBox>
#include <QFont>
#include <QHeaderView>
#include <QInputDialog>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QScrollBar>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QStringList>
#include <QTableView>
#include <QTableWidget>
#include <QTimer>
#include <QVBoxLayout>

#include <algorithm>
#include <map>

namespace dasp::ui {

namespace {

constexpr int kReloadIntervalMs = 2000;

// "run 3" or "runs 3, 5, 8".
QString describeRuns(const std::vector<std::int64_t>& ids) {
  QStringList numbers;
  for (std::int64_t id : ids) numbers << QString::number(id);
  return (ids.size() == 1 ? QObject::tr("run %1") : QObject::tr("runs %1")).arg(numbers.join(QStringLiteral(", ")));
}

QString exitText(const NodeRow& n) {
  if (n.signal) return QObject::tr("killed by signal %1").arg(*n.signal);
  if (n.exitCode) return QObject::tr("exit %1").arg(*n.exitCode);
  return QObject::tr("no exit recorded");
}

}  // namespace

RunsPanel::RunsPanel(QWidget* parent) : QWidget(parent) {
  m_model = new RunTableModel(this);
  m_proxy = new QSortFilterProxyModel(this);
  m_proxy->setSourceModel(m_model);
  m_proxy->setSortRole(RunTableModel::SortRole);
  m_proxy->setFilterKeyColumn(-1);  // every column
  m_proxy->setFilterCaseSensitivity(Qt::CaseInsensitive);
  m_proxy->setSortCaseSensitivity(Qt::CaseInsensitive);

  auto* layout = new QVBoxLayout(this);
  m_banner = new QLabel(this);
  m_banner->setObjectName(QStringLiteral("errorBanner"));
  m_banner->setWordWrap(true);
  m_banner->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_banner->setStyleSheet(
      QStringLiteral("QLabel { background: #fdecea; color: #611a15; border: 1px solid #f5c2c0; padding: 6px; }"));
  m_banner->hide();
  layout->addWidget(m_banner);

  m_filter = new QLineEdit(this);
  m_filter->setObjectName(QStringLiteral("runFilter"));
  m_filter->setPlaceholderText(tr("Filter runs (any column)"));
  m_filter->setClearButtonEnabled(true);
  connect(m_filter, &QLineEdit::textChanged, this, [this](const QString& text) {
    m_proxy->setFilterFixedString(text);
    updateCount();
  });
  layout->addWidget(m_filter);

  m_table = new QTableView(this);
  m_table->setObjectName(QStringLiteral("runTable"));
  m_table->setModel(m_proxy);
  m_table->setSortingEnabled(true);
  m_table->sortByColumn(RunTableModel::Run, Qt::DescendingOrder);
  m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_table->setSelectionMode(QAbstractItemView::ExtendedSelection);
  m_table->setAlternatingRowColors(true);
  m_table->setWordWrap(false);
  m_table->verticalHeader()->hide();
  // Compact rows: the dock's default height shows kVisibleRows of them (heightForRows()).
  m_table->verticalHeader()->setMinimumSectionSize(fontMetrics().height() + 4);
  m_table->verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 4);
  m_table->horizontalHeader()->setStretchLastSection(true);
  m_table->setContextMenuPolicy(Qt::ActionsContextMenu);
  layout->addWidget(m_table, 1);

  m_openSpecAction = new QAction(tr("Open in &Designer"), this);
  m_openSpecAction->setToolTip(tr("Put the run's spec into the designer; Launch runs it again."));
  m_replayAction = new QAction(tr("Open in &Live View"), this);
  m_replayAction->setObjectName(QStringLiteral("replayAction"));
  m_replayAction->setToolTip(tr("Replay the run in the live view, with a time cursor"));
  m_compareAction = new QAction(tr("&Compare Selected"), this);
  m_compareAction->setObjectName(QStringLiteral("compareAction"));
  m_compareAction->setToolTip(tr("Overlay the selected runs in the compare view, with a summary table"));
  m_predictAction = new QAction(tr("&Predict Other Strategies on This Cluster…"), this);
  m_predictAction->setObjectName(QStringLiteral("predictAction"));
  m_predictAction->setToolTip(tr("Measure the run's cluster and predict every strategy on it with the engine"));
  m_logsAction = new QAction(tr("Node &Logs…"), this);
  m_editTagsAction = new QAction(tr("Edit &Tags…"), this);
  m_deleteAction = new QAction(tr("&Delete…"), this);
  connect(m_openSpecAction, &QAction::triggered, this, &RunsPanel::openSelectedSpec);
  connect(m_replayAction, &QAction::triggered, this, [this] {
    const auto ids = selectedRunIds();
    if (ids.size() == 1) Q_EMIT replayRequested(ids.front());
  });
  connect(m_compareAction, &QAction::triggered, this, [this] {
    const auto ids = selectedRunIds();
    if (!ids.empty()) Q_EMIT compareRequested(QList<qint64>(ids.begin(), ids.end()));
  });
  connect(m_predictAction, &QAction::triggered, this, [this] {
    const auto ids = selectedRunIds();
    if (ids.size() == 1) Q_EMIT predictRequested(ids.front());
  });
  connect(m_logsAction, &QAction::triggered, this, &RunsPanel::showLogsOfSelection);
  connect(m_editTagsAction, &QAction::triggered, this, &RunsPanel::editTags);
  connect(m_deleteAction, &QAction::triggered, this, &RunsPanel::deleteRuns);
  m_table->addActions(
      {m_openSpecAction, m_replayAction, m_compareAction, m_predictAction, m_logsAction, m_editTagsAction, m_deleteAction});

  connect(m_model, &RunTableModel::editFailed, this, [this](const QString& message) {
    m_lastError = message;
    Q_EMIT statusMessage(message, 10000);
    announce(tr("Edit Failed"), message);
  });
  connect(m_proxy, &QAbstractItemModel::rowsInserted, this, &RunsPanel::updateCount);
  connect(m_proxy, &QAbstractItemModel::rowsRemoved, this, &RunsPanel::updateCount);
  connect(m_proxy, &QAbstractItemModel::modelReset, this, &RunsPanel::updateCount);
  connect(m_proxy, &QAbstractItemModel::modelReset, this, &RunsPanel::updateActions);
  connect(m_table->selectionModel(), &QItemSelectionModel::selectionChanged, this, &RunsPanel::updateActions);
  connect(m_table, &QAbstractItemView::doubleClicked, this, &RunsPanel::onDoubleClicked);

  m_reloadTimer = new QTimer(this);
  m_reloadTimer->setInterval(kReloadIntervalMs);
  connect(m_reloadTimer, &QTimer::timeout, this, &RunsPanel::onTimer);
  m_reloadTimer->start();
  updateActions();
}

// The model keeps a pointer to m_store, which goes before the model (a child QObject).
RunsPanel::~RunsPanel() { m_model->clear(); }

void RunsPanel::openStore(const QString& path) {
  m_model->clear();
  m_store.reset();
  m_storePath = path;
  tryOpenStore(true);
}

bool RunsPanel::tryOpenStore(bool announceFailure) {
  Result<std::unique_ptr<RunStore>> opened = RunStore::open(m_storePath.toStdString());
  if (!opened) {
    QString message = QString::fromStdString(opened.message());
    if (!message.contains(m_storePath)) message = m_storePath + QStringLiteral(": ") + message;
    message = tr("Cannot open the run store: %1").arg(message);
    const bool isNew = message != m_lastError;
    showError(message);
    updateCount();
    if (announceFailure || isNew) announce(tr("Run Store"), message);
    return false;
  }
  m_store = std::move(opened).value();
  reload();
  return true;
}

void RunsPanel::reload() {
  if (!m_store) {
    tryOpenStore(false);
    return;
  }
  const dasp::Status status = m_model->reload(*m_store);
  if (status) {
    clearError();
    if (!m_columnsSized && m_model->rowCount() > 0) {  // first runs, no saved layout
      m_table->resizeColumnsToContents();
      for (int c = 0; c < RunTableModel::ColumnCount; ++c) {
        m_table->setColumnWidth(c, std::min(m_table->columnWidth(c), 320));
      }
      m_columnsSized = true;
    }
  } else {
    showError(tr("Cannot read the runs: %1").arg(QString::fromStdString(status.message())));
  }
  updateCount();
  updateActions();
}

void RunsPanel::showError(const QString& message) {
  m_lastError = message;
  m_banner->setText(message);
  m_banner->show();
}

void RunsPanel::announce(const QString& title, const QString& message) {
  auto* box = new QMessageBox(QMessageBox::Warning, title, message, QMessageBox::Ok, this);
  box->setAttribute(Qt::WA_DeleteOnClose);
  box->open();  // non-blocking: the window stays usable (and tests are not held up)
}

void RunsPanel::clearError() {
  m_lastError.clear();
  m_banner->hide();
}

void RunsPanel::updateActions() {
  const bool any = m_store && m_table->selectionModel()->hasSelection();
  const bool one = any && m_table->selectionModel()->selectedRows().size() == 1;
  m_editTagsAction->setEnabled(any);
  m_deleteAction->setEnabled(any);
  m_logsAction->setEnabled(one);
  m_openSpecAction->setEnabled(one);
  m_replayAction->setEnabled(one);
  m_compareAction->setEnabled(any);
  m_predictAction->setEnabled(one);
}

QString RunsPanel::countText() const {
  if (!m_store) return tr("No run store open (%1)").arg(m_storePath);
  const int total = m_model->rowCount();
  QString text = total == 1 ? tr("1 run in %1").arg(m_storePath) : tr("%1 runs in %2").arg(total).arg(m_storePath);
  if (!m_filter->text().isEmpty()) text += tr(" (%1 shown)").arg(m_proxy->rowCount());
  return text;
}

void RunsPanel::updateCount() { Q_EMIT countTextChanged(countText()); }

void RunsPanel::onTimer() {
  const QWidget* top = window();
  if (!top->isVisible() || top->isMinimized()) return;
  reload();
}

int RunsPanel::heightForRows(int rows) const {
  // From the size hints, so that it holds before the first layout too: the margins, the
  // banner when shown, the filter line, the table's header, frame and horizontal scroll
  // bar (the columns are wider than the designer's column), then the rows.
  const QMargins margins = layout()->contentsMargins();
  const int spacing = layout()->spacing();
  int h = margins.top() + margins.bottom() + m_filter->sizeHint().height() + spacing;
  if (!m_banner->isHidden()) h += m_banner->sizeHint().height() + spacing;
  h += m_table->horizontalHeader()->sizeHint().height() + 2 * m_table->frameWidth();
  h += m_table->horizontalScrollBar()->sizeHint().height();
  return h + rows * m_table->verticalHeader()->defaultSectionSize();
}

void RunsPanel::focusFilter() {
  m_filter->setFocus(Qt::ShortcutFocusReason);
  m_filter->selectAll();
}

std::vector<std::int64_t> RunsPanel::selectedRunIds() const {
  std::vector<std::int64_t> ids;
  for (const QModelIndex& proxyIndex : m_table->selectionModel()->selectedRows()) {
    const std::int64_t id = m_model->runIdAt(m_proxy->mapToSource(proxyIndex).row());
    if (id >= 0) ids.push_back(id);
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

void RunsPanel::onDoubleClicked(const QModelIndex& proxyIndex) {
  // Double-clicking Tags or Notes edits the cell; anywhere else opens the run's spec.
  if (proxyIndex.column() == RunTableModel::Tags || proxyIndex.column() == RunTableModel::Notes) return;
  const RunRow* run = m_model->runAt(m_proxy->mapToSource(proxyIndex).row());
  if (run) Q_EMIT specRequested(run->id, QString::fromStdString(run->specJson));
}

void RunsPanel::openSelectedSpec() {
  const auto ids = selectedRunIds();
  if (ids.size() != 1) return;
  if (const RunRow* run = m_model->runAt(m_model->rowOfRun(ids.front()))) {
    Q_EMIT specRequested(run->id, QString::fromStdString(run->specJson));
  }
}

void RunsPanel::editTags() {
  const std::vector<std::int64_t> ids = selectedRunIds();
  if (ids.empty() || !m_store) return;
  QString initial;  // prefilled when one run is selected
  if (const RunRow* run = m_model->runAt(m_model->rowOfRun(ids.front())); run && ids.size() == 1) {
    initial = QString::fromStdString(run->tags);
  }
  bool ok = false;
  const QString tags = QInputDialog::getText(this, tr("Edit Tags"),
                                             tr("Tags of %1 (comma-separated):").arg(describeRuns(ids)),
                                             QLineEdit::Normal, initial, &ok);
  if (!ok) return;
  for (std::int64_t id : ids) {
    const int row = m_model->rowOfRun(id);  // the list may have been reloaded meanwhile
    if (row >= 0) m_model->setData(m_model->index(row, RunTableModel::Tags), tags);
  }
}

void RunsPanel::deleteRuns() {
  const std::vector<std::int64_t> ids = selectedRunIds();
  if (ids.empty() || !m_store) return;
  const auto answer = QMessageBox::question(
      this, tr("Delete Runs"), tr("Delete %1 and all recorded data? This cannot be undone.").arg(describeRuns(ids)),
      QMessageBox::Yes | QMessageBox::Cancel, QMessageBox::Cancel);
  if (answer != QMessageBox::Yes || !m_store) return;
  QStringList failures;
  for (std::int64_t id : ids) {
    if (const dasp::Status s = m_store->deleteRun(id); !s) failures << QString::fromStdString(s.message());
  }
  reload();
  if (failures.isEmpty()) {
    Q_EMIT statusMessage(tr("Deleted %1.").arg(describeRuns(ids)), 5000);
  } else {
    m_lastError = failures.join(QLatin1Char('\n'));
    announce(tr("Delete Runs"), m_lastError);
  }
}

void RunsPanel::showLogsOfSelection() {
  const auto ids = selectedRunIds();
  if (ids.size() == 1) showLogs(ids.front());
}

QDialog* RunsPanel::showLogs(std::int64_t runId) {
  if (!m_store) return nullptr;
  auto nodes = m_store->nodes(runId);
  auto lines = nodes ? m_store->logs(runId) : Result<std::vector<LogRow>>(nodes.status());
  if (!nodes || !lines) {
    m_lastError = tr("Cannot read the logs of run %1: %2")
                      .arg(runId)
                      .arg(QString::fromStdString(nodes ? lines.message() : nodes.message()));
    announce(tr("Node Logs"), m_lastError);
    return nullptr;
  }
  // Everything is read now: the dialog keeps no store pointer and outlives a store switch.
  std::map<QString, QString> logText;
  for (const LogRow& l : lines.value()) {
    QString& text = logText[QString::fromStdString(l.node)];
    if (l.stream == "stderr") text += QStringLiteral("[stderr] ");
    text += QString::fromStdString(l.line) + QLatin1Char('\n');
  }

  auto* dialog = new QDialog(this);
  dialog->setObjectName(QStringLiteral("nodeLogsDialog"));
  dialog->setAttribute(Qt::WA_DeleteOnClose);
  dialog->setWindowTitle(tr("Run %1 — node logs").arg(runId));
  dialog->resize(900, 600);
  auto* layout = new QVBoxLayout(dialog);
  auto* splitter = new QSplitter(Qt::Vertical, dialog);
  auto* table = new QTableWidget(static_cast<int>(nodes->size()), 8, splitter);
  table->setObjectName(QStringLiteral("nodeTable"));
  table->setHorizontalHeaderLabels({tr("Node"), tr("Role"), tr("Host"), tr("PID"), tr("Exit"), tr("CPU (s)"),
                                    tr("Max RSS (MB)"), tr("Sent / received (MB)")});
  table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table->setSelectionBehavior(QAbstractItemView::SelectRows);
  table->setSelectionMode(QAbstractItemView::SingleSelection);
  table->verticalHeader()->hide();
  table->horizontalHeader()->setStretchLastSection(true);
  for (int row = 0; row < static_cast<int>(nodes->size()); ++row) {
    const NodeRow& n = nodes.value()[static_cast<std::size_t>(row)];
    const QStringList cells{QString::fromStdString(n.node),
                            QString::fromStdString(n.role),
                            placementText(QString::fromStdString(n.host), QString::fromStdString(n.slurmStep)),
                            QString::number(n.pid),
                            exitText(n),
                            QString::number(n.cpuS, 'f', 1),
                            QString::number(static_cast<double>(n.maxRssKb) / 1024.0, 'f', 1),
                            QStringLiteral("%1 / %2")
                                .arg(static_cast<double>(n.bytesSent) / 1e6, 0, 'f', 1)
                                .arg(static_cast<double>(n.bytesReceived) / 1e6, 0, 'f', 1)};
    for (int c = 0; c < cells.size(); ++c) table->setItem(row, c, new QTableWidgetItem(cells[c]));
  }
  table->resizeColumnsToContents();
  auto* text = new QPlainTextEdit(splitter);
  text->setObjectName(QStringLiteral("nodeLogText"));
  text->setReadOnly(true);
  text->setLineWrapMode(QPlainTextEdit::NoWrap);
  text->setFont(QFont(QStringLiteral("monospace")));
  splitter->addWidget(table);
  splitter->addWidget(text);
  splitter->setStretchFactor(1, 1);
  layout->addWidget(splitter, 1);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, dialog);
  connect(buttons, &QDialogButtonBox::rejected, dialog, &QDialog::close);
  layout->addWidget(buttons);
  connect(table, &QTableWidget::currentCellChanged, dialog, [table, text, logText](int row) {
    const QTableWidgetItem* item = table->item(row, 0);
    const auto it = item ? logText.find(item->text()) : logText.end();
    text->setPlainText(it == logText.end() ? QObject::tr("(no output)") : it->second);
  });
  if (table->rowCount() > 0) table->setCurrentCell(0, 0);
  dialog->show();  // non-modal: the run table stays usable
  return dialog;
}

QByteArray RunsPanel::headerState() const { return m_table->horizontalHeader()->saveState(); }

void RunsPanel::restoreHeaderState(const QByteArray& state) {
  m_columnsSized = m_table->horizontalHeader()->restoreState(state);
}

}  // namespace dasp::ui
