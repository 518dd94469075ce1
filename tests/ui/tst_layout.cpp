// SPDX-License-Identifier: MIT
// The workbench's layout and help (issue 17, part B) in a real MainWindow at its default
// size: the node table shows 16 workers with the server and the evaluator without
// scrolling, the run list 8 rows, the charts most of the live dock; the geometry and dock
// state come back after a restart (settings in a temporary directory); no run header or
// legend before a run exists; the shortcuts; the designer's tooltips are the proto's
// comments; Help → Getting Started. Run headless: QT_QPA_PLATFORM=offscreen.

#include "ui/charts/convergence_chart.h"
#include "ui/charts/run_data.h"
#include "ui/designer/cluster_table.h"
#include "ui/designer/field_docs.h"
#include "ui/designer/spec_designer.h"
#include "ui/help/getting_started.h"
#include "ui/live/live_charts.h"
#include "ui/live/live_panel.h"
#include "ui/main_window.h"
#include "ui/runs/runs_panel.h"
#include "tests/support/stores.h"

#include <QAction>
#include <QApplication>
#include <QChart>
#include <QDockWidget>
#include <QFile>
#include <QHeaderView>
#include <QLabel>
#include <QLegend>
#include <QLegendMarker>
#include <QLineEdit>
#include <QScrollArea>
#include <QScrollBar>
#include <QSettings>
#include <QTableView>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTextBrowser>
#include <QtTest>

using namespace dasp;
using namespace dasp::ui;

namespace {

// A run with `workers` workers, each with a few iterations.
RunData runOf(int workers) {
  RunData r;
  r.runId = 7;
  r.strategy = QStringLiteral("dasp");
  r.status = QStringLiteral("completed");
  r.kind = QStringLiteral("distributed");  // a server and an evaluator row
  r.specJson = QStringLiteral("{}");
  for (int w = 0; w < workers; ++w) {
    NodeData& n = r.node(QStringLiteral("worker-%1").arg(w));
    for (int i = 1; i <= 20; ++i) {
      n.intervals.push_back({i - 1.0, i - 0.2, NodeState::Compute, Parallel::Sync});
      n.wait.push_back({static_cast<double>(i), i, 0.01});
    }
    n.iterations = 20;
  }
  r.evaluations.push_back({10, 100, 6400, 0.5, 0.8});
  r.endT = 20;
  return r;
}

// The layout settles after the show (queued): run what is queued, without waiting.
void settle() {
  for (int i = 0; i < 5; ++i) QCoreApplication::processEvents();
}

}  // namespace

class TestLayout : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase();
  void init();
  void tablesShowTheirRowsAtTheDefaultSize();
  void nodeTableShowsTheStragglerScore();
  void geometryAndDocksAreRemembered();
  void placeholdersBeforeARun();
  void shortcutsInMenusAndTooltips();
  void designerTooltipsAreTheProtoComments();
  void gettingStarted();

 private:
  QString m_store;
  QTemporaryDir m_dir;
};

void TestLayout::initTestCase() {
  QVERIFY(m_dir.isValid());
  // QSettings("dasp", "workbench") in a directory of this test only.
  QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, m_dir.filePath(QStringLiteral("settings")));
  m_store = m_dir.filePath(QStringLiteral("runs.sqlite"));
  auto store = test_support::openStore(m_store);
  QVERIFY(store);
  for (int i = 0; i < 12; ++i) test_support::createRun(*store, test_support::testRun("r" + std::to_string(i), "bsp", i));
}

void TestLayout::init() {
  // Every test starts from the default layout, none from another test's saved one.
  QSettings(QStringLiteral("dasp"), QStringLiteral("workbench")).clear();
}

void TestLayout::tablesShowTheirRowsAtTheDefaultSize() {
  MainWindow window(m_store);
  QCOMPARE(window.size(), QSize(1400, 900));  // the default, nothing saved
  window.show();
  QVERIFY(QTest::qWaitForWindowExposed(&window));
  settle();
  // 16 workers, the server and the evaluator: every row visible, no scroll bar.
  const RunData sixteen = runOf(16);
  window.livePanel()->showReplay(&sixteen);
  settle();
  QTableWidget* nodes = window.livePanel()->nodeTable();
  QCOMPARE(nodes->rowCount(), 16 + 2);
  const int last = nodes->rowCount() - 1;
  QVERIFY2(nodes->rowViewportPosition(last) + nodes->rowHeight(last) <= nodes->viewport()->height(),
           qPrintable(QStringLiteral("row %1 ends at %2, viewport %3")
                          .arg(last)
                          .arg(nodes->rowViewportPosition(last) + nodes->rowHeight(last))
                          .arg(nodes->viewport()->height())));
  QCOMPARE(nodes->verticalScrollBar()->maximum(), 0);
  QVERIFY2(window.height() == 900, qPrintable(QStringLiteral("window %1, live panel min %2, charts min %3, table %4")
                                                  .arg(window.height())
                                                  .arg(window.livePanel()->minimumSizeHint().height())
                                                  .arg(window.livePanel()->charts()->minimumSizeHint().height())
                                                  .arg(nodes->height())));
  // The bars of 16 workers scroll: none is cut off.
  auto* bars16 = window.livePanel()->findChild<QWidget*>(QStringLiteral("nodeBars"));
  QVERIFY(bars16);
  QVERIFY2(bars16->height() >= bars16->sizeHint().height(),
           qPrintable(QStringLiteral("bars need %1, have %2").arg(bars16->sizeHint().height()).arg(bars16->height())));
  // Compact rows: a line of text and a little padding.
  QVERIFY(nodes->rowHeight(0) <= nodes->fontMetrics().height() + 6);
  // The run list: at least 8 rows in view.
  QTableView* runs = window.runTable();
  QVERIFY(runs->model()->rowCount() >= 8);
  const int rowH = runs->rowHeight(0);
  QVERIFY2(runs->viewport()->height() >= RunsPanel::kVisibleRows * rowH,
           qPrintable(QStringLiteral("viewport %1, rows of %2; runs dock %3, panel %4, designer dock %5 (min %6), window %7")
                          .arg(runs->viewport()->height())
                          .arg(rowH)
                          .arg(window.findChild<QDockWidget*>(QStringLiteral("runsDock"))->height())
                          .arg(window.runsPanel()->height())
                          .arg(window.findChild<QDockWidget*>(QStringLiteral("designerDock"))->height())
                          .arg(window.findChild<QDockWidget*>(QStringLiteral("designerDock"))->minimumSizeHint().height())
                          .arg(window.height())));
  // A four-worker run: the charts take most of the live dock.
  const RunData four = runOf(4);
  window.livePanel()->showReplay(&four);
  settle();
  QVERIFY2(window.livePanel()->charts()->height() > window.livePanel()->height() / 2,
           qPrintable(QStringLiteral("charts %1 of %2").arg(window.livePanel()->charts()->height()).arg(window.livePanel()->height())));
  // ... and the bars show all four workers, none cut off or behind a scroll bar.
  auto* bars = window.livePanel()->findChild<QWidget*>(QStringLiteral("nodeBars"));
  QVERIFY(bars);
  auto* barsArea = qobject_cast<QScrollArea*>(bars->parentWidget()->parentWidget());
  QVERIFY(barsArea);
  QVERIFY2(bars->height() >= bars->sizeHint().height() && barsArea->verticalScrollBar()->maximum() == 0,
           qPrintable(QStringLiteral("bars need %1, have %2 in a viewport of %3")
                          .arg(bars->sizeHint().height())
                          .arg(bars->height())
                          .arg(barsArea->viewport()->height())));
  window.livePanel()->showLive(nullptr);  // the runs above go before the window
}

void TestLayout::nodeTableShowsTheStragglerScore() {
  // worker-3 makes 3 iterations a second where the others make 10 (the whole run is in the
  // bars' window): its score is 0.30, the lowest and under the threshold.
  RunData run = runOf(0);
  for (int w = 0; w < 4; ++w) {
    NodeData& n = run.node(QStringLiteral("worker-%1").arg(w));
    const int count = w == 3 ? 30 : 100;
    for (int i = 1; i <= count; ++i) n.wait.push_back({10.0 * i / count, i, 0.01});
    n.iterations = count;
  }
  run.endT = 10;
  MainWindow window(m_store);
  window.livePanel()->showReplay(&run);
  QTableWidget* nodes = window.livePanel()->nodeTable();
  auto score = [&](int row) { return nodes->item(row, LivePanel::Score)->text(); };
  QCOMPARE(nodes->item(3, LivePanel::Node)->text(), QStringLiteral("worker-3"));
  QCOMPARE(score(3), QStringLiteral("0.30 straggler"));
  for (int row = 0; row < 3; ++row) QCOMPARE(score(row), QStringLiteral("1.00"));
  QCOMPARE(nodes->item(3, LivePanel::Score)->foreground().color(), QColor(0xD0, 0x10, 0x10));
  QVERIFY(!nodes->horizontalHeaderItem(LivePanel::Score)->toolTip().isEmpty());
}

void TestLayout::geometryAndDocksAreRemembered() {
  {
    MainWindow window(m_store);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    settle();
    window.resize(1500, 860);  // not the default 1400×900, and above the minimum width
    window.findChild<QDockWidget*>(QStringLiteral("designerDock"))->hide();
    settle();
    window.close();  // saves the settings
  }
  MainWindow again(m_store);
  again.show();
  QVERIFY(QTest::qWaitForWindowExposed(&again));
  settle();
  QCOMPARE(again.size(), QSize(1500, 860));
  QVERIFY(!again.findChild<QDockWidget*>(QStringLiteral("designerDock"))->isVisible());
  QVERIFY(again.findChild<QDockWidget*>(QStringLiteral("liveDock"))->isVisible());
}

void TestLayout::placeholdersBeforeARun() {
  MainWindow window(m_store);
  window.show();
  QVERIFY(QTest::qWaitForWindowExposed(&window));
  settle();
  // The live data exists (run id 0) before any run: no header of a run, no legend entry.
  const QString summary = window.livePanel()->summaryLabel()->text();
  QVERIFY2(!summary.contains(QStringLiteral("Run 0")) && !summary.contains(QStringLiteral("running")), qPrintable(summary));
  QVERIFY2(summary.contains(QStringLiteral("No run yet")), qPrintable(summary));
  ConvergenceChart* chart = window.livePanel()->charts()->convergence();
  QVERIFY(chart->chart()->series().isEmpty());
  QVERIFY(chart->chart()->legend()->markers().isEmpty());
  QCOMPARE(window.livePanel()->nodeTable()->rowCount(), 0);
}

void TestLayout::shortcutsInMenusAndTooltips() {
  MainWindow window(m_store);
  window.show();
  QVERIFY(QTest::qWaitForWindowExposed(&window));
  const std::pair<QAction*, QKeySequence> expected[] = {
      {window.launchAction(), QKeySequence(Qt::CTRL | Qt::Key_R)},
      {window.stopAction(), QKeySequence(Qt::CTRL | Qt::Key_Period)},
      {window.exportReportAction(), QKeySequence(Qt::CTRL | Qt::Key_E)},
      {window.filterAction(), QKeySequence(QKeySequence::Find)},
  };
  for (const auto& [action, keys] : expected) {
    QCOMPARE(action->shortcut(), keys);
    QVERIFY2(action->toolTip().contains(keys.toString(QKeySequence::NativeText)), qPrintable(action->toolTip()));
  }
  // Filter: the run list's filter line takes the keyboard.
  window.activateWindow();
  QVERIFY(QTest::qWaitForWindowActive(&window));
  window.filterAction()->trigger();
  QLineEdit* filter = window.runsPanel()->filterEdit();
  QVERIFY(filter->isVisible());
  QCOMPARE(QApplication::focusWidget(), filter);
}

void TestLayout::designerTooltipsAreTheProtoComments() {
  // The comments as the proto has them, every comment line in order, joined by spaces.
  QFile proto(QStringLiteral(DASP_SOURCE_DIR "/proto/dasp/v1/experiment.proto"));
  QVERIFY(proto.open(QIODevice::ReadOnly | QIODevice::Text));
  QStringList comments;
  for (const QByteArray& raw : proto.readAll().split('\n')) {
    const QString line = QString::fromUtf8(raw).trimmed();
    if (line.startsWith(QStringLiteral("//"))) comments << line.mid(2).trimmed();
  }
  const QString stream = comments.join(QLatin1Char(' '));
  SpecDesigner designer;
  int fields = 0;
  for (QWidget* w : designer.findChildren<QWidget*>()) {
    if (!w->objectName().startsWith(QStringLiteral("spec."))) continue;
    const std::string path = w->objectName().mid(5).toStdString();
    const QString doc = fieldDoc(path);
    QVERIFY2(!doc.isEmpty(), path.c_str());                       // every field is documented
    QVERIFY2(stream.contains(doc), path.c_str());                 // with the proto's own words
    QVERIFY2(w->toolTip() == fieldToolTip(path), path.c_str());  // and that is its tooltip
    QVERIFY(w->toolTip().contains(doc.left(20).toHtmlEscaped()));
    ++fields;
  }
  QVERIFY2(fields > 40, qPrintable(QString::number(fields)));
  // The tables' columns too.
  auto* cluster = designer.findChild<QTableWidget*>(QStringLiteral("clusterTable"));
  QVERIFY(cluster);
  for (int c = 0; c < cluster->columnCount(); ++c) {
    QVERIFY2(cluster->horizontalHeaderItem(c)->toolTip().contains(QStringLiteral("<br>")),
             qPrintable(cluster->horizontalHeaderItem(c)->toolTip()));
  }
  auto* faults = designer.findChild<QTableWidget*>(QStringLiteral("faultTable"));
  QVERIFY(faults);
  for (int c = 0; c < faults->columnCount(); ++c) QVERIFY(faults->horizontalHeaderItem(c)->toolTip().contains(QStringLiteral("<br>")));
  // A path that names no field has no doc.
  QVERIFY(fieldDoc("strategy.no_such_field").isEmpty());
  QVERIFY(fieldDoc("").isEmpty());
}

void TestLayout::gettingStarted() {
  MainWindow window(m_store);
  window.show();
  QVERIFY(QTest::qWaitForWindowExposed(&window));
  QAction* help = window.findChild<QAction*>(QStringLiteral("gettingStartedAction"));
  QVERIFY(help);
  help->trigger();
  auto* page = window.findChild<GettingStarted*>(QStringLiteral("gettingStarted"));
  QVERIFY(page);
  QVERIFY(page->isVisible());
  const QString html = page->page()->toHtml();
  QCOMPARE(html.count(QStringLiteral("<li")), 4);  // four steps
  const QString text = page->page()->toPlainText();
  QVERIFY2(text.contains(window.launchAction()->shortcut().toString(QKeySequence::NativeText)), qPrintable(text));
  QVERIFY(text.contains(window.exportReportAction()->shortcut().toString(QKeySequence::NativeText)));
  // Shown again: the same page, raised.
  QCOMPARE(window.showGettingStarted(), page);
}

QTEST_MAIN(TestLayout)
#include "tst_layout.moc"
