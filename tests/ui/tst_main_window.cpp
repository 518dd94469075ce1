// SPDX-License-Identifier: MIT
// Tests of the workbench main window and its runs model (ui/) over real run stores in
// temporary directories. Run headless: QT_QPA_PLATFORM=offscreen.

#include "core/store/run_store.h"
#include "ui/main_window.h"
#include "ui/runs/run_table_model.h"
#include "ui/designer/spec_designer.h"
#include "tests/support/stores.h"

#include "resources/resources.h"

#include <sqlite3.h>

#include <QAction>
#include <QDir>
#include <QFile>
#include <QToolBar>
#include <QProcess>
#include <QLabel>
#include <QLineEdit>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <utility>

using namespace dasp;
using dasp::ui::MainWindow;
using dasp::ui::RunTableModel;

namespace {

using test_support::openStore;

std::int64_t addRun(RunStore& store, const std::string& name, const std::string& strategy,
                    std::int64_t seed = 1, const std::string& tags = {}) {
  NewRun run = test_support::testRun(name, strategy, seed);
  run.tags = tags;
  return test_support::createRun(store, run);
}

// The Status cell of a run, by id.
QString statusOf(const RunTableModel& model, std::int64_t runId) {
  const int row = model.rowOfRun(runId);
  if (row < 0) return QStringLiteral("<missing>");
  return model.data(model.index(row, RunTableModel::Status)).toString();
}

}  // namespace

class TestMainWindow : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase();
  void listsRunsWithStatuses();
  void newRunAppearsAfterReload();
  void editingTagsWritesTheStore();
  void notSqliteStoreOpensEmpty();
  void filterNarrowsRows();
  void storeLockedByAnotherProcess();
  void iconsAndEmbeddedPresets();
  void startupOptionsNameBadValues();
};

void TestMainWindow::initTestCase() {
  // QSettings("dasp", "workbench") goes to a test location, not the user's configuration.
  QStandardPaths::setTestModeEnabled(true);
}

void TestMainWindow::listsRunsWithStatuses() {
  QTemporaryDir dir;
  QVERIFY(dir.isValid());
  const QString path = dir.filePath(QStringLiteral("runs.sqlite"));
  std::int64_t first = 0, second = 0, third = 0;
  {
    auto store = openStore(path);
    first = addRun(*store, "a", "bsp", 100);
    second = addRun(*store, "b", "asp", 9);
    third = addRun(*store, "c", "ssp", 10);
    QVERIFY(store->finishRun(second, RunStatus::Completed).isOk());
  }

  MainWindow window(path);
  QCOMPARE(window.storePath(), path);
  QVERIFY2(window.lastError().isEmpty(), qPrintable(window.lastError()));
  RunTableModel* model = window.runModel();
  QCOMPARE(model->rowCount(), 3);
  QCOMPARE(model->columnCount(), int(RunTableModel::ColumnCount));
  QCOMPARE(statusOf(*model, first), QStringLiteral("running"));
  QCOMPARE(statusOf(*model, second), QStringLiteral("completed"));
  QCOMPARE(statusOf(*model, third), QStringLiteral("running"));
  QCOMPARE(window.storedRunIds(), (QList<qint64>{first, second, third}));  // what --compare all opens
  QCOMPARE(model->data(model->index(model->rowOfRun(second), RunTableModel::Name)).toString(),
           QStringLiteral("b"));
  QVERIFY(!model->data(model->index(model->rowOfRun(second), RunTableModel::Duration))
               .toString()
               .isEmpty());

  auto* count = window.findChild<QLabel*>(QStringLiteral("runCountLabel"));
  QVERIFY(count);
  QCOMPARE(count->text(), QStringLiteral("3 runs in %1").arg(path));

  // Newest first by default; Seed sorts as a number (9 < 10 < 100), not as text.
  QSortFilterProxyModel* proxy = window.proxyModel();
  QCOMPARE(proxy->rowCount(), 3);
  QCOMPARE(proxy->index(0, RunTableModel::Run).data().toLongLong(), third);
  proxy->sort(RunTableModel::Seed, Qt::AscendingOrder);
  QCOMPARE(proxy->index(0, RunTableModel::Seed).data().toLongLong(), 9);
  QCOMPARE(proxy->index(1, RunTableModel::Seed).data().toLongLong(), 10);
  QCOMPARE(proxy->index(2, RunTableModel::Seed).data().toLongLong(), 100);
}

void TestMainWindow::newRunAppearsAfterReload() {
  QTemporaryDir dir;
  QVERIFY(dir.isValid());
  const QString path = dir.filePath(QStringLiteral("runs.sqlite"));
  auto writer = openStore(path);  // stays open, like a CLI writing runs next to the GUI
  addRun(*writer, "first", "bsp");

  MainWindow window(path);
  QCOMPARE(window.runModel()->rowCount(), 1);
  const std::int64_t later = addRun(*writer, "second", "asp");
  window.reload();
  QVERIFY2(window.lastError().isEmpty(), qPrintable(window.lastError()));
  QCOMPARE(window.runModel()->rowCount(), 2);
  QVERIFY(window.runModel()->rowOfRun(later) >= 0);

  // While the window is visible the timer picks up runs (and status changes) by itself.
  window.show();
  QVERIFY(QTest::qWaitForWindowExposed(&window));
  const std::int64_t third = addRun(*writer, "third", "ssp");
  QVERIFY(writer->finishRun(later, RunStatus::Failed, "worker-1 crashed").isOk());
  QTRY_COMPARE_WITH_TIMEOUT(window.runModel()->rowCount(), 3, 10000);
  QVERIFY(window.runModel()->rowOfRun(third) >= 0);
  QTRY_COMPARE_WITH_TIMEOUT(statusOf(*window.runModel(), later), QStringLiteral("failed"), 10000);
}

void TestMainWindow::editingTagsWritesTheStore() {
  QTemporaryDir dir;
  QVERIFY(dir.isValid());
  const QString path = dir.filePath(QStringLiteral("runs.sqlite"));
  std::int64_t id = 0, doomed = 0;
  {
    auto store = openStore(path);
    id = addRun(*store, "tagged", "bsp");
    doomed = addRun(*store, "doomed", "asp");
  }

  MainWindow window(path);
  RunTableModel* model = window.runModel();
  QCOMPARE(model->rowCount(), 2);
  const int row = model->rowOfRun(id);
  QVERIFY(row >= 0);
  QCOMPARE(model->runIdAt(row), id);
  QCOMPARE(model->runIdAt(99), std::int64_t(-1));
  const QModelIndex tags = model->index(row, RunTableModel::Tags);
  const QModelIndex notes = model->index(row, RunTableModel::Notes);
  QVERIFY(model->flags(tags) & Qt::ItemIsEditable);
  QVERIFY(model->flags(notes) & Qt::ItemIsEditable);
  QVERIFY(!(model->flags(model->index(row, RunTableModel::Name)) & Qt::ItemIsEditable));

  QSignalSpy failed(model, &RunTableModel::editFailed);
  QVERIFY(model->setData(tags, QStringLiteral("baseline,fast")));
  QVERIFY(model->setData(notes, QStringLiteral("first try\nlooks good")));
  QCOMPARE(model->data(tags).toString(), QStringLiteral("baseline,fast"));
  QCOMPARE(failed.count(), 0);

  {
    auto reader = openStore(path);  // a second connection sees what the GUI wrote
    Result<RunRow> stored = reader->run(id);
    QVERIFY2(stored.isOk(), stored.message().c_str());
    QCOMPARE(QString::fromStdString(stored->tags), QStringLiteral("baseline,fast"));
    QCOMPARE(QString::fromStdString(stored->notes), QStringLiteral("first try\nlooks good"));
    // A run deleted behind the window's back: the edit fails and says so.
    QVERIFY(reader->deleteRun(doomed).isOk());
  }
  const QModelIndex doomedTags = model->index(model->rowOfRun(doomed), RunTableModel::Tags);
  QVERIFY(!model->setData(doomedTags, QStringLiteral("x")));
  QCOMPARE(failed.count(), 1);
  QVERIFY(!failed.at(0).at(0).toString().isEmpty());
  QVERIFY(!window.lastError().isEmpty());
  window.reload();
  QCOMPARE(model->rowCount(), 1);
}

void TestMainWindow::notSqliteStoreOpensEmpty() {
  QTemporaryDir dir;
  QVERIFY(dir.isValid());
  const QString path = dir.filePath(QStringLiteral("not-a-store.sqlite"));
  const QByteArray junk = QByteArray("this is a text file, not an SQLite database\n").repeated(40);
  {
    QFile file(path);
    QVERIFY(file.open(QIODevice::WriteOnly));
    QCOMPARE(file.write(junk), qint64(junk.size()));
  }

  MainWindow window(path);
  QVERIFY(!window.lastError().isEmpty());
  QVERIFY2(window.lastError().contains(path), qPrintable(window.lastError()));
  QCOMPARE(window.runModel()->rowCount(), 0);
  QCOMPARE(window.proxyModel()->rowCount(), 0);
  window.show();
  QVERIFY(QTest::qWaitForWindowExposed(&window));
  auto* banner = window.findChild<QLabel*>(QStringLiteral("errorBanner"));
  QVERIFY(banner);
  QVERIFY(banner->isVisible());
  QVERIFY(banner->text().contains(path));
  window.reload();  // retrying must not crash either
  QCOMPARE(window.runModel()->rowCount(), 0);
  QVERIFY(!window.lastError().isEmpty());
  {
    QFile file(path);  // and the file was left alone
    QVERIFY(file.open(QIODevice::ReadOnly));
    QCOMPARE(file.readAll(), junk);
  }

  // Once the file is fixed (here: removed, so a fresh store is created) the window recovers.
  QVERIFY(QFile::remove(path));
  window.reload();
  QVERIFY2(window.lastError().isEmpty(), qPrintable(window.lastError()));
  QVERIFY(!banner->isVisible());
  QCOMPARE(window.runModel()->rowCount(), 0);
}

void TestMainWindow::filterNarrowsRows() {
  QTemporaryDir dir;
  QVERIFY(dir.isValid());
  const QString path = dir.filePath(QStringLiteral("runs.sqlite"));
  {
    auto store = openStore(path);
    addRun(*store, "alpha-bsp", "bsp");
    addRun(*store, "beta-asp", "asp");
    addRun(*store, "gamma", "ssp", 1, "Baseline,long");
  }

  MainWindow window(path);
  auto* filter = window.findChild<QLineEdit*>(QStringLiteral("runFilter"));
  QVERIFY(filter);
  QSortFilterProxyModel* proxy = window.proxyModel();
  QCOMPARE(proxy->rowCount(), 3);

  filter->setText(QStringLiteral("ASP"));  // case-insensitive, any column
  QCOMPARE(proxy->rowCount(), 1);
  QCOMPARE(proxy->index(0, RunTableModel::Name).data().toString(), QStringLiteral("beta-asp"));
  filter->setText(QStringLiteral("baseline"));  // the Tags column
  QCOMPARE(proxy->rowCount(), 1);
  QCOMPARE(proxy->index(0, RunTableModel::Name).data().toString(), QStringLiteral("gamma"));
  filter->setText(QStringLiteral("no such run"));
  QCOMPARE(proxy->rowCount(), 0);
  filter->clear();
  QCOMPARE(proxy->rowCount(), 3);
  QCOMPARE(window.runModel()->rowCount(), 3);
}

void TestMainWindow::storeLockedByAnotherProcess() {
  // Another process holds the write lock (an open write transaction): the GUI's edit waits
  // the busy timeout, then fails with a message; listing still works (WAL readers are not
  // blocked); once the lock is gone the edit goes through.
  QTemporaryDir dir;
  const QString path = dir.filePath(QStringLiteral("locked.sqlite"));
  std::int64_t id = 0;
  {
    auto store = openStore(path);
    id = addRun(*store, "locked", "bsp");
  }
  MainWindow window(path);
  QCOMPARE(window.runModel()->rowCount(), 1);
  sqlite3* locker = nullptr;
  QCOMPARE(sqlite3_open(path.toLocal8Bit().constData(), &locker), SQLITE_OK);
  QCOMPARE(sqlite3_exec(locker, "BEGIN IMMEDIATE; UPDATE runs SET notes='x';", nullptr,
                        nullptr, nullptr),
           SQLITE_OK);
  const QModelIndex tags = window.runModel()->index(window.runModel()->rowOfRun(id), RunTableModel::Tags);
  QVERIFY(!window.runModel()->setData(tags, QStringLiteral("blocked")));  // waits the busy timeout, then fails
  QVERIFY(!window.lastError().isEmpty());
  window.reload();
  QCOMPARE(window.runModel()->rowCount(), 1);  // reading goes on
  QCOMPARE(sqlite3_exec(locker, "ROLLBACK;", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(locker);
  QVERIFY(window.runModel()->setData(tags, QStringLiteral("free")));
}

void TestMainWindow::iconsAndEmbeddedPresets() {
  QTemporaryDir dir;
  QVERIFY(dir.isValid());
  MainWindow window(dir.filePath(QStringLiteral("runs.sqlite")));
  // The window icon and the toolbar's icons come from resources/workbench.qrc.
  QVERIFY(!window.windowIcon().isNull());
  QVERIFY(!window.windowIcon().pixmap(48, 48).isNull());
  auto* bar = window.findChild<QToolBar*>(QStringLiteral("experimentToolBar"));
  QVERIFY(bar != nullptr);
  int withIcon = 0;
  for (QAction* a : bar->actions()) {
    if (a->isSeparator()) continue;
    QVERIFY2(!a->icon().isNull(), qPrintable(a->text()));
    ++withIcon;
  }
  QVERIFY(withIcon >= 5);
  // The presets are compiled in, so an installed workbench that finds no experiments/
  // folder still offers them, and they load.
  dasp::resources::initResources();
  const QDir embedded(dasp::resources::embeddedPresetsDir());
  QVERIFY(embedded.exists(QStringLiteral("default.json")));
  QVERIFY(embedded.exists(QStringLiteral("matrix/hetero-4.json")));
  QVERIFY2(window.designer()->loadFile(embedded.filePath(QStringLiteral("default.json"))),
           qPrintable(window.designer()->message()));
}

QTEST_MAIN(TestMainWindow)
// dasp-workbench's --compare and --replay: a value that is not a run id is refused before
// any window opens, with the option and the value named.
void TestMainWindow::startupOptionsNameBadValues() {
  auto run = [](const QStringList& args) {
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
    p.setProcessEnvironment(env);
    p.start(QStringLiteral(DASP_BINARY_DIR "/bin/dasp-workbench"), args);
    if (!p.waitForFinished(30000)) {
      p.kill();
      p.waitForFinished();
    }
    return std::make_pair(p.exitCode(), QString::fromLocal8Bit(p.readAllStandardError()));
  };
  auto [code, err] = run({QStringLiteral("--compare"), QStringLiteral("3,x")});
  QCOMPARE(code, 2);
  QVERIFY2(err.contains(QStringLiteral("--compare: 'x' is not a run id")), qPrintable(err));
  std::tie(code, err) = run({QStringLiteral("--compare"), QStringLiteral("-4")});
  QCOMPARE(code, 2);
  QVERIFY2(err.contains(QStringLiteral("'-4' is not a run id")), qPrintable(err));
  std::tie(code, err) = run({QStringLiteral("--replay"), QStringLiteral("1,2")});
  QCOMPARE(code, 2);
  QVERIFY2(err.contains(QStringLiteral("--replay: give one run id")), qPrintable(err));
  std::tie(code, err) = run({QStringLiteral("--replay"), QStringLiteral("all")});
  QCOMPARE(code, 2);
  QVERIFY2(err.contains(QStringLiteral("--replay")), qPrintable(err));
}

#include "tst_main_window.moc"
