// SPDX-License-Identifier: MIT
#include "ui/main_window.h"

#include "core/build_info.h"
#include "ui/run_table_model.h"

#include <QAction>
#include <QCloseEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QHeaderView>
#include <QInputDialog>
#include <QItemSelectionModel>
#include <QKeySequence>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QSettings>
#include <QSortFilterProxyModel>
#include <QStatusBar>
#include <QStringList>
#include <QTableView>
#include <QTimer>
#include <QVBoxLayout>

#include <algorithm>

namespace dasp::ui {

namespace {

constexpr int kReloadIntervalMs = 2000;

// "run 3" or "runs 3, 5, 8".
QString describeRuns(const std::vector<std::int64_t>& ids) {
  QStringList numbers;
  for (std::int64_t id : ids) numbers << QString::number(id);
  return (ids.size() == 1 ? QObject::tr("run %1") : QObject::tr("runs %1"))
      .arg(numbers.join(QStringLiteral(", ")));
}

}  // namespace

MainWindow::MainWindow(const QString& storePath, QWidget* parent) : QMainWindow(parent) {
  m_model = new RunTableModel(this);
  m_proxy = new QSortFilterProxyModel(this);
  m_proxy->setSourceModel(m_model);
  m_proxy->setSortRole(RunTableModel::SortRole);
  m_proxy->setFilterKeyColumn(-1);  // every column
  m_proxy->setFilterCaseSensitivity(Qt::CaseInsensitive);
  m_proxy->setSortCaseSensitivity(Qt::CaseInsensitive);

  createCentralWidget();
  createMenus();
  m_countLabel = new QLabel(this);
  m_countLabel->setObjectName(QStringLiteral("runCountLabel"));
  statusBar()->addWidget(m_countLabel, 1);

  connect(m_model, &RunTableModel::editFailed, this, [this](const QString& message) {
    m_lastError = message;
    statusBar()->showMessage(message, 10000);
    announce(tr("Edit Failed"), message);
  });
  connect(m_proxy, &QAbstractItemModel::rowsInserted, this, &MainWindow::updateCountLabel);
  connect(m_proxy, &QAbstractItemModel::rowsRemoved, this, &MainWindow::updateCountLabel);
  connect(m_proxy, &QAbstractItemModel::modelReset, this, &MainWindow::updateCountLabel);
  connect(m_proxy, &QAbstractItemModel::modelReset, this, &MainWindow::updateActions);
  connect(m_table->selectionModel(), &QItemSelectionModel::selectionChanged, this,
          &MainWindow::updateActions);

  m_reloadTimer = new QTimer(this);
  m_reloadTimer->setInterval(kReloadIntervalMs);
  connect(m_reloadTimer, &QTimer::timeout, this, &MainWindow::onTimer);

  restoreSettings();
  openStore(storePath);
  updateActions();
  m_reloadTimer->start();
}

// The model keeps a pointer to m_store, which goes before the model (a child QObject).
MainWindow::~MainWindow() { m_model->clear(); }

void MainWindow::createCentralWidget() {
  auto* central = new QWidget(this);
  auto* layout = new QVBoxLayout(central);

  m_banner = new QLabel(central);
  m_banner->setObjectName(QStringLiteral("errorBanner"));
  m_banner->setWordWrap(true);
  m_banner->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_banner->setStyleSheet(QStringLiteral(
      "QLabel { background: #fdecea; color: #611a15; border: 1px solid #f5c2c0; padding: 6px; }"));
  m_banner->hide();
  layout->addWidget(m_banner);

  m_filter = new QLineEdit(central);
  m_filter->setObjectName(QStringLiteral("runFilter"));
  m_filter->setPlaceholderText(tr("Filter runs (any column)"));
  m_filter->setClearButtonEnabled(true);
  connect(m_filter, &QLineEdit::textChanged, this, [this](const QString& text) {
    m_proxy->setFilterFixedString(text);
    updateCountLabel();
  });
  layout->addWidget(m_filter);

  m_table = new QTableView(central);
  m_table->setObjectName(QStringLiteral("runTable"));
  m_table->setModel(m_proxy);
  m_table->setSortingEnabled(true);
  m_table->sortByColumn(RunTableModel::Run, Qt::DescendingOrder);
  m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_table->setSelectionMode(QAbstractItemView::ExtendedSelection);
  m_table->setAlternatingRowColors(true);
  m_table->setWordWrap(false);
  m_table->verticalHeader()->hide();
  m_table->horizontalHeader()->setStretchLastSection(true);
  m_table->setContextMenuPolicy(Qt::ActionsContextMenu);
  layout->addWidget(m_table, 1);

  setCentralWidget(central);
}

void MainWindow::createMenus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  QAction* open = file->addAction(tr("&Open Run Store…"), this, &MainWindow::chooseStore);
  open->setShortcut(QKeySequence::Open);
  QAction* reloadAction = file->addAction(tr("&Reload"), this, &MainWindow::reload);
  reloadAction->setShortcut(QKeySequence(Qt::Key_F5));
  file->addSeparator();
  QAction* quit = file->addAction(tr("&Quit"), this, &QWidget::close);
  quit->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Q));
  quit->setMenuRole(QAction::QuitRole);

  QMenu* runs = menuBar()->addMenu(tr("&Runs"));
  m_editTagsAction = runs->addAction(tr("Edit &Tags…"), this, &MainWindow::editTags);
  m_deleteAction = runs->addAction(tr("&Delete…"), this, &MainWindow::deleteRuns);
  m_table->addAction(m_editTagsAction);
  m_table->addAction(m_deleteAction);

  QMenu* view = menuBar()->addMenu(tr("&View"));
  m_statusBarAction = view->addAction(tr("Show &Status Bar"));
  m_statusBarAction->setCheckable(true);
  m_statusBarAction->setChecked(true);
  connect(m_statusBarAction, &QAction::toggled, statusBar(), &QWidget::setVisible);

  QMenu* help = menuBar()->addMenu(tr("&Help"));
  QAction* about = help->addAction(tr("&About DASP Workbench"), this, &MainWindow::showAbout);
  about->setMenuRole(QAction::AboutRole);
}

void MainWindow::openStore(const QString& path) {
  m_model->clear();
  m_store.reset();
  m_storePath = path;
  setWindowTitle(tr("%1 — DASP Workbench").arg(QFileInfo(path).fileName()));
  tryOpenStore(true);
}

bool MainWindow::tryOpenStore(bool announceFailure) {
  Result<std::unique_ptr<RunStore>> opened = RunStore::open(m_storePath.toStdString());
  if (!opened) {
    QString message = QString::fromStdString(opened.message());
    if (!message.contains(m_storePath)) message = m_storePath + QStringLiteral(": ") + message;
    message = tr("Cannot open the run store: %1").arg(message);
    const bool isNew = message != m_lastError;
    showError(message);
    updateCountLabel();
    if (announceFailure || isNew) announce(tr("Run Store"), message);
    return false;
  }
  m_store = std::move(opened).value();
  reload();
  return true;
}

void MainWindow::reload() {
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
  updateCountLabel();
  updateActions();
}

void MainWindow::showError(const QString& message) {
  m_lastError = message;
  m_banner->setText(message);
  m_banner->show();
}

void MainWindow::announce(const QString& title, const QString& message) {
  auto* box = new QMessageBox(QMessageBox::Warning, title, message, QMessageBox::Ok, this);
  box->setAttribute(Qt::WA_DeleteOnClose);
  box->open();  // non-blocking: the window stays usable (and tests are not held up)
}

void MainWindow::clearError() {
  m_lastError.clear();
  m_banner->hide();
}

void MainWindow::updateActions() {
  const bool any = m_store && m_table->selectionModel()->hasSelection();
  m_editTagsAction->setEnabled(any);
  m_deleteAction->setEnabled(any);
}

void MainWindow::updateCountLabel() {
  if (!m_store) {
    m_countLabel->setText(tr("No run store open (%1)").arg(m_storePath));
    return;
  }
  const int total = m_model->rowCount();
  QString text = total == 1 ? tr("1 run in %1").arg(m_storePath)
                            : tr("%1 runs in %2").arg(total).arg(m_storePath);
  if (!m_filter->text().isEmpty()) text += tr(" (%1 shown)").arg(m_proxy->rowCount());
  m_countLabel->setText(text);
}

void MainWindow::onTimer() {
  if (!isVisible() || isMinimized()) return;
  reload();
}

void MainWindow::chooseStore() {
  const QString start = QFileInfo(m_storePath).absolutePath();
  const QString path = QFileDialog::getOpenFileName(
      this, tr("Open Run Store"), start, tr("Run stores (*.sqlite);;All files (*)"));
  if (!path.isEmpty()) openStore(path);
}

std::vector<std::int64_t> MainWindow::selectedRunIds() const {
  std::vector<std::int64_t> ids;
  for (const QModelIndex& proxyIndex : m_table->selectionModel()->selectedRows()) {
    const std::int64_t id = m_model->runIdAt(m_proxy->mapToSource(proxyIndex).row());
    if (id >= 0) ids.push_back(id);
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

void MainWindow::editTags() {
  const std::vector<std::int64_t> ids = selectedRunIds();
  if (ids.empty() || !m_store) return;
  QString initial;  // prefilled when one run is selected
  if (const RunRow* run = m_model->runAt(m_model->rowOfRun(ids.front())); run && ids.size() == 1) {
    initial = QString::fromStdString(run->tags);
  }
  bool ok = false;
  const QString tags = QInputDialog::getText(
      this, tr("Edit Tags"), tr("Tags of %1 (comma-separated):").arg(describeRuns(ids)),
      QLineEdit::Normal, initial, &ok);
  if (!ok) return;
  for (std::int64_t id : ids) {
    const int row = m_model->rowOfRun(id);  // the list may have been reloaded meanwhile
    if (row >= 0) m_model->setData(m_model->index(row, RunTableModel::Tags), tags);
  }
}

void MainWindow::deleteRuns() {
  const std::vector<std::int64_t> ids = selectedRunIds();
  if (ids.empty() || !m_store) return;
  const auto answer = QMessageBox::question(
      this, tr("Delete Runs"),
      tr("Delete %1 and all recorded data? This cannot be undone.").arg(describeRuns(ids)),
      QMessageBox::Yes | QMessageBox::Cancel, QMessageBox::Cancel);
  if (answer != QMessageBox::Yes || !m_store) return;
  QStringList failures;
  for (std::int64_t id : ids) {
    if (const dasp::Status s = m_store->deleteRun(id); !s) {
      failures << QString::fromStdString(s.message());
    }
  }
  reload();
  if (failures.isEmpty()) {
    statusBar()->showMessage(tr("Deleted %1.").arg(describeRuns(ids)), 5000);
  } else {
    m_lastError = failures.join(QLatin1Char('\n'));
    announce(tr("Delete Runs"), m_lastError);
  }
}

void MainWindow::showAbout() {
  QMessageBox::about(
      this, tr("About DASP Workbench"),
      tr("<h3>DASP Workbench</h3><p>Version %1</p><p>Distributed-training research: design "
         "experiments, run them, compare synchronisation strategies.</p>"
         "<p>Run store: %2 (schema version %3)</p>")
          .arg(QString::fromStdString(dasp::codeVersion()).toHtmlEscaped(),
               m_storePath.toHtmlEscaped(), QString::number(RunStore::schemaVersion())));
}

void MainWindow::restoreSettings() {
  QSettings settings(QStringLiteral("dasp"), QStringLiteral("workbench"));
  if (!restoreGeometry(settings.value(QStringLiteral("mainWindow/geometry")).toByteArray())) {
    resize(1100, 600);
  }
  restoreState(settings.value(QStringLiteral("mainWindow/state")).toByteArray());
  m_columnsSized = m_table->horizontalHeader()->restoreState(
      settings.value(QStringLiteral("runsTable/header")).toByteArray());
  m_statusBarAction->setChecked(settings.value(QStringLiteral("mainWindow/statusBar"), true).toBool());
}

void MainWindow::saveSettings() const {
  QSettings settings(QStringLiteral("dasp"), QStringLiteral("workbench"));
  settings.setValue(QStringLiteral("mainWindow/geometry"), saveGeometry());
  settings.setValue(QStringLiteral("mainWindow/state"), saveState());
  settings.setValue(QStringLiteral("runsTable/header"), m_table->horizontalHeader()->saveState());
  settings.setValue(QStringLiteral("mainWindow/statusBar"), m_statusBarAction->isChecked());
}

void MainWindow::closeEvent(QCloseEvent* event) {
  saveSettings();
  QMainWindow::closeEvent(event);
}

}  // namespace dasp::ui
