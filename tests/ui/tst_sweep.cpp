// SPDX-License-Identifier: MIT
// Tests of the sweep heatmap (ui/charts/sweep_heatmap.h) and its report section over a
// store built with RunStore/RunRecorder: a 3 × 2 grid (strategy.dasp.delta ×
// cluster.count) × 2 strategies × 2 seeds, 24 runs whose evaluations cross the target at
// known times. Checks the axes found, the cells (mean, sample std, reached counts, not
// reached), explicit axes and their errors, the rendered colours, the HTML/PDF section,
// dasp-report's --sweep-axes, and the compare view's Sweep tab (the grid points' table and
// their parallel coordinates). Run headless: QT_QPA_PLATFORM=offscreen.

#include "core/store/run_store.h"
#include "ui/charts/report.h"
#include "ui/charts/chart_export.h"
#include "ui/charts/chart_images.h"
#include "ui/charts/sweep_heatmap.h"
#include "ui/charts/sweep_parallel.h"
#include "ui/charts/run_data.h"
#include "ui/runs/compare_panel.h"
#include "ui/runs/sweep_view.h"

#include <QFile>
#include <QFileInfo>
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QTabWidget>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

using namespace dasp;
using namespace dasp::ui;

namespace {

constexpr double kTarget = 0.8;
// Written out of order: the axes must sort them by value.
const std::vector<double> kDeltas{0.5, 0.1, 0.3};
const std::vector<int> kCounts{16, 4};
const std::vector<std::string> kStrategies{"dasp", "bsp"};
const std::vector<int> kSeeds{1, 2};

const char* kReportTool = DASP_BINARY_DIR "/bin/dasp-report";

// When a run reaches the target, by construction; nullopt: never.
//   dasp: 10·delta + count/4 + seed/2 (every run reaches it)
//   bsp:  2·count + seed, except count 16 with delta 0.5 (never) and delta 0.3 (seed 1 only, at 20 s)
std::optional<double> plannedTime(const std::string& strategy, double delta, int count, int seed) {
  if (strategy == "dasp") return 10 * delta + count / 4.0 + seed / 2.0;
  if (count == 16 && delta == 0.5) return std::nullopt;
  if (count == 16 && delta == 0.3) return seed == 1 ? std::optional<double>(20.0) : std::nullopt;
  return 2.0 * count + seed;
}

// BSP runs with 4 workers carry time_to_target_s in their summary; their evaluations
// cross the target 5 s later, so only a reader that prefers the summary gets the planned time.
bool summaryCarriesTime(const std::string& strategy, int count) { return strategy == "bsp" && count == 4; }

struct Planned {
  std::string strategy;
  double delta = 0;
  int count = 0;
  int seed = 0;
};

std::int64_t writeRun(RunStore& store, const std::string& path, const Planned& p, int index) {
  QJsonObject strategy{{QStringLiteral("name"), QString::fromStdString(p.strategy)},
                       {QStringLiteral("dasp"), QJsonObject{{QStringLiteral("delta"), p.delta}}},
                       // a suite entry's own knob: differs only between the strategies
                       {QStringLiteral("barrier_timeout_s"), p.strategy == "bsp" ? 30 : 60}};
  const QJsonObject spec{
      {QStringLiteral("name"), QStringLiteral("sweep-test")},
      {QStringLiteral("description"), QStringLiteral("run %1").arg(index)},  // differs, ignored
      {QStringLiteral("seed"), p.seed},                                       // differs, ignored
      {QStringLiteral("engine"), QStringLiteral("sim")},
      {QStringLiteral("strategy"), strategy},
      {QStringLiteral("cluster"), QJsonObject{{QStringLiteral("count"), p.count},
                                              {QStringLiteral("slowdowns"), QJsonArray{1, 1, 2}}}},
      // measured per run: differs, ignored
      {QStringLiteral("sim"), QJsonObject{{QStringLiteral("compute_ms"), 5 + 0.25 * index},
                                          {QStringLiteral("gradients"), QStringLiteral("POLICY_ONLY")}}},
      {QStringLiteral("stop"), QJsonObject{{QStringLiteral("target_accuracy"), kTarget},
                                           {QStringLiteral("max_updates"), QStringLiteral("5000")}}},
  };
  NewRun run;
  run.kind = "sim";
  run.name = "sweep-test";
  run.specJson = QJsonDocument(spec).toJson(QJsonDocument::Compact).toStdString();
  run.model = "logreg";
  run.dataset = "synthetic";
  run.strategy = p.strategy;
  run.recovery = "none";
  run.engine = "sim";
  run.seed = p.seed;
  run.codeVersion = "test";
  Result<std::int64_t> id = store.createRun(run);
  if (!id) qFatal("createRun: %s", id.message().c_str());
  auto rec = RunRecorder::open(path, *id);
  if (!rec) qFatal("recorder: %s", rec.message().c_str());
  RunRecorder& r = **rec;
  const std::optional<double> t = plannedTime(p.strategy, p.delta, p.count, p.seed);
  auto eval = [&](double at, std::int64_t version, double accuracy) {
    r.record(EvaluationRow{*id, at, version, version, version * 64, 1.0 - accuracy, accuracy});
  };
  std::vector<SummaryRow> summary{{"final_accuracy", t ? 0.9 : 0.75, ""}};
  if (t) {
    const double crossing = summaryCarriesTime(p.strategy, p.count) ? *t + 5 : *t;
    eval(0, 0, 0.1);
    eval(crossing / 2, 10, 0.6);
    // Exactly the target for the second seed: reaching it means >=.
    eval(crossing, 20, p.seed == 2 ? kTarget : 0.85);
    eval(crossing + 1, 30, 0.9);
    if (summaryCarriesTime(p.strategy, p.count)) summary.push_back({"time_to_target_s", *t, ""});
  } else {
    eval(0, 0, 0.1);
    eval(5, 10, 0.5);
    eval(10, 20, 0.7);
    eval(20, 30, 0.75);
  }
  r.setSummary(summary);
  if (Status s = r.finish(RunStatus::Completed); !s) qFatal("finish: %s", s.message().c_str());
  return *id;
}

// The colour most pixels of `rect` have: the cell's fill, whatever its label and hatching.
QRgb dominant(const QImage& image, const QRect& rect) {
  std::map<QRgb, int> counts;
  const QRect r = rect.intersected(image.rect());
  for (int y = r.top(); y <= r.bottom(); ++y) {
    for (int x = r.left(); x <= r.right(); ++x) ++counts[image.pixel(x, y) | 0xff000000u];
  }
  QRgb best = 0;
  int most = -1;
  for (const auto& [rgb, n] : counts) {
    if (n > most) {
      best = rgb;
      most = n;
    }
  }
  return best;
}

QString readAll(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return {};
  return QString::fromUtf8(f.readAll());
}

const SweepRow* findRow(const SweepTable& t, const QString& strategy, const QString& count, const QString& delta) {
  for (const SweepRow& row : t.rows) {
    if (row.strategy == strategy && row.values == std::vector<QString>{count, delta}) return &row;
  }
  return nullptr;
}

QString num(double v) { return QString::number(v); }

}  // namespace

class TestSweep : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase();
  void findsTheSweptPaths();
  void cellsHaveMeanStdAndReachedCounts();
  void automaticAxesFacetByStrategy();
  void explicitAxesAndErrors();
  void oneOrNoSweptPath();
  void rendersColoursAndHatching();
  void reportHasTheSweepSection();
  void toolTakesSweepAxes();
  void parallelCoordinatesLayOutTheGrid();
  void parallelChartDrawsTheLines();
  void compareViewHasTheSweepTab();
  void chartsGroupBySweptField();
  void reportsGroupBySweptField();

 private:
  std::vector<RunData> subset(const std::function<bool(const Planned&)>& keep) const;

  QTemporaryDir m_dir;
  QString m_db;
  std::vector<Planned> m_planned;
  std::vector<RunData> m_runs;
};

void TestSweep::initTestCase() {
  QVERIFY(m_dir.isValid());
  m_db = m_dir.filePath(QStringLiteral("runs.sqlite"));
  auto store = RunStore::open(m_db.toStdString());
  QVERIFY2(store.isOk(), store.message().c_str());
  // Grid × strategies × seeds, in the order dasp run expands them.
  for (double delta : kDeltas) {
    for (int count : kCounts) {
      for (const std::string& strategy : kStrategies) {
        for (int seed : kSeeds) m_planned.push_back({strategy, delta, count, seed});
      }
    }
  }
  for (std::size_t i = 0; i < m_planned.size(); ++i) {
    const std::int64_t id = writeRun(**store, m_db.toStdString(), m_planned[i], static_cast<int>(i));
    auto data = loadRunData(**store, id);
    QVERIFY2(data.isOk(), data.message().c_str());
    m_runs.push_back(std::move(data).value());
  }
  QCOMPARE(m_runs.size(), std::size_t{24});
  QCOMPARE(m_runs.front().engine, QStringLiteral("sim"));
  QCOMPARE(m_runs.front().evaluations.size(), std::size_t{4});
}

std::vector<RunData> TestSweep::subset(const std::function<bool(const Planned&)>& keep) const {
  std::vector<RunData> out;
  for (std::size_t i = 0; i < m_planned.size(); ++i) {
    if (keep(m_planned[i])) out.push_back(m_runs[i]);
  }
  return out;
}

void TestSweep::findsTheSweptPaths() {
  const SweepTable t = SweepTable::fromRuns(m_runs);
  // seed, description and sim.compute_ms differ too, but are never axes.
  QCOMPARE(t.varyingPaths(), (QStringList{QStringLiteral("cluster.count"), QStringLiteral("strategy.barrier_timeout_s"),
                                          QStringLiteral("strategy.dasp.delta"), QStringLiteral("strategy.name")}));
  QCOMPARE(t.sweepPaths, (QStringList{QStringLiteral("cluster.count"), QStringLiteral("strategy.dasp.delta")}));
  QVERIFY(t.isSweep());
  QVERIFY(t.axis(QStringLiteral("strategy.barrier_timeout_s"))->strategyKnob);
  QVERIFY(!t.axis(QStringLiteral("cluster.count"))->strategyKnob);
  QVERIFY(t.axis(QStringLiteral("seed")) == nullptr);
  QVERIFY(t.axis(QStringLiteral("sim.compute_ms")) == nullptr);
  QVERIFY(t.axis(QStringLiteral("cluster.slowdowns")) == nullptr);  // the same array everywhere
  // Numeric values sorted by value, not as text ("16" < "4").
  const SweepAxis* count = t.axis(QStringLiteral("cluster.count"));
  QVERIFY(count->numeric);
  QCOMPARE(count->values, (std::vector<QString>{QStringLiteral("4"), QStringLiteral("16")}));
  const SweepAxis* delta = t.axis(QStringLiteral("strategy.dasp.delta"));
  QVERIFY(delta->numeric);
  QCOMPARE(delta->values, (std::vector<QString>{QStringLiteral("0.1"), QStringLiteral("0.3"), QStringLiteral("0.5")}));
  QVERIFY(!t.axis(QStringLiteral("strategy.name"))->numeric);
  QCOMPARE(t.runs.size(), m_runs.size());
  QCOMPARE(t.runs.front().engine, QStringLiteral("sim"));
}

void TestSweep::cellsHaveMeanStdAndReachedCounts() {
  const SweepTable t = SweepTable::fromRuns(m_runs);
  QCOMPARE(t.rows.size(), kDeltas.size() * kCounts.size() * kStrategies.size());
  // Order: by strategy, then count, then delta.
  QCOMPARE(t.rows.front().strategy, QStringLiteral("bsp"));
  QCOMPARE(t.rows.front().values, (std::vector<QString>{QStringLiteral("4"), QStringLiteral("0.1")}));
  QCOMPARE(t.rows.back().strategy, QStringLiteral("dasp"));
  QCOMPARE(t.rows.back().values, (std::vector<QString>{QStringLiteral("16"), QStringLiteral("0.5")}));

  // Every row against the plan.
  for (const std::string& strategy : kStrategies) {
    for (int count : kCounts) {
      for (double delta : kDeltas) {
        std::vector<double> times;
        for (int seed : kSeeds) {
          if (auto time = plannedTime(strategy, delta, count, seed)) times.push_back(*time);
        }
        const SweepRow* row = findRow(t, QString::fromStdString(strategy), num(count), num(delta));
        QVERIFY2(row != nullptr, qPrintable(QStringLiteral("%1 %2 %3").arg(QString::fromStdString(strategy)).arg(count).arg(delta)));
        QCOMPARE(row->runs, static_cast<int>(kSeeds.size()));
        QCOMPARE(row->reached, static_cast<int>(times.size()));
        QCOMPARE(row->engines, QStringList{QStringLiteral("sim")});
        QCOMPARE(row->mean.has_value(), !times.empty());
        QCOMPARE(row->stddev.has_value(), times.size() > 1);
        if (times.size() == 2) {
          QVERIFY(std::fabs(*row->mean - (times[0] + times[1]) / 2) < 1e-9);
          QVERIFY(std::fabs(*row->stddev - std::fabs(times[0] - times[1]) / std::sqrt(2.0)) < 1e-9);
        }
      }
    }
  }
  // A few by hand. DASP, 16 workers, δ 0.3: 7.5 and 8.0 s (the second exactly at the target).
  const SweepRow* r = findRow(t, QStringLiteral("dasp"), QStringLiteral("16"), QStringLiteral("0.3"));
  QVERIFY(std::fabs(*r->mean - 7.75) < 1e-9);
  QVERIFY(std::fabs(*r->stddev - 0.3535533905932738) < 1e-9);
  // BSP, 4 workers: the summary's 9 and 10 s, not the evaluations' 14 and 15 s.
  r = findRow(t, QStringLiteral("bsp"), QStringLiteral("4"), QStringLiteral("0.1"));
  QVERIFY(std::fabs(*r->mean - 9.5) < 1e-9);
  // One of two reached: its time, no spread.
  r = findRow(t, QStringLiteral("bsp"), QStringLiteral("16"), QStringLiteral("0.3"));
  QCOMPARE(r->reached, 1);
  QVERIFY(std::fabs(*r->mean - 20.0) < 1e-9);
  // None reached.
  r = findRow(t, QStringLiteral("bsp"), QStringLiteral("16"), QStringLiteral("0.5"));
  QCOMPARE(r->reached, 0);
  QVERIFY(!r->mean);
}

void TestSweep::automaticAxesFacetByStrategy() {
  const SweepTable t = SweepTable::fromRuns(m_runs);
  const Result<SweepAxes> axes = chooseAxes(t);
  QVERIFY2(axes.isOk(), axes.message().c_str());
  QCOMPARE(axes->x, QStringLiteral("strategy.dasp.delta"));  // three values across
  QCOMPARE(axes->y, QStringLiteral("cluster.count"));
  QCOMPARE(axes->facets, QStringList{QStringLiteral("strategy.name")});

  const std::vector<SweepHeatmap> maps = sweepHeatmaps(t, axes.value());
  QCOMPARE(maps.size(), std::size_t{2});
  QCOMPARE(maps[0].facet, QStringLiteral("strategy bsp"));
  QCOMPARE(maps[1].facet, QStringLiteral("strategy dasp"));
  for (const SweepHeatmap& m : maps) {
    QCOMPARE(m.columns(), 3);
    QCOMPARE(m.rows(), 2);
    QCOMPARE(m.xValues.front(), QStringLiteral("0.1"));
    QCOMPARE(m.yValues.front(), QStringLiteral("4"));
    QCOMPARE(m.target, QStringLiteral("0.8"));
    QCOMPARE(m.engines, QStringList{QStringLiteral("sim")});
  }
  const SweepHeatmap& bsp = maps[0];
  QCOMPARE(bsp.cell(2, 1).runs, 2);      // δ 0.5, 16 workers
  QCOMPARE(bsp.cell(2, 1).reached, 0);
  QCOMPARE(bsp.cell(1, 1).reached, 1);   // δ 0.3, 16 workers
  QVERIFY(std::fabs(*bsp.cell(0, 0).mean - 9.5) < 1e-9);
  QVERIFY(std::fabs(*maps[1].cell(1, 1).mean - 7.75) < 1e-9);
  // One colour scale over both maps: the fastest and slowest grid points of the sweep.
  QVERIFY(std::fabs(bsp.lo - 2.75) < 1e-9);  // DASP, δ 0.1, 4 workers: 2.5 and 3.0 s
  QVERIFY(std::fabs(bsp.hi - 33.5) < 1e-9);  // BSP, 16 workers, δ 0.1: 33 and 34 s
  QCOMPARE(maps[1].lo, bsp.lo);
  QCOMPARE(maps[1].hi, bsp.hi);
}

void TestSweep::explicitAxesAndErrors() {
  const SweepTable t = SweepTable::fromRuns(m_runs);
  Result<SweepAxes> axes = chooseAxes(t, QStringLiteral("cluster.count, strategy.dasp.delta"));
  QVERIFY2(axes.isOk(), axes.message().c_str());
  QCOMPARE(axes->x, QStringLiteral("cluster.count"));
  QCOMPARE(axes->y, QStringLiteral("strategy.dasp.delta"));
  QCOMPARE(axes->facets, QStringList{QStringLiteral("strategy.name")});
  std::vector<SweepHeatmap> maps = sweepHeatmaps(t, axes.value());
  QCOMPARE(maps.size(), std::size_t{2});
  QCOMPARE(maps[0].columns(), 2);
  QCOMPARE(maps[0].rows(), 3);
  QCOMPARE(maps[0].cell(1, 2).reached, 0);  // 16 workers, δ 0.5

  // The strategy as an axis: the other swept path becomes the facet.
  axes = chooseAxes(t, QStringLiteral("strategy.name,cluster.count"));
  QVERIFY2(axes.isOk(), axes.message().c_str());
  QCOMPARE(axes->facets, QStringList{QStringLiteral("strategy.dasp.delta")});
  maps = sweepHeatmaps(t, axes.value());
  QCOMPARE(maps.size(), std::size_t{3});
  QCOMPARE(maps[0].facet, QStringLiteral("strategy.dasp.delta=0.1"));
  QCOMPARE(maps[2].facet, QStringLiteral("strategy.dasp.delta=0.5"));
  QCOMPARE(maps[0].xValues, (std::vector<QString>{QStringLiteral("bsp"), QStringLiteral("dasp")}));

  // One path: one row per map, the rest facets.
  axes = chooseAxes(t, QStringLiteral("cluster.count"));
  QVERIFY2(axes.isOk(), axes.message().c_str());
  QVERIFY(axes->y.isEmpty());
  QCOMPARE(axes->facets, (QStringList{QStringLiteral("strategy.name"), QStringLiteral("strategy.dasp.delta")}));
  QCOMPARE(sweepHeatmaps(t, axes.value()).size(), std::size_t{6});

  // Errors name the request and list what varies.
  axes = chooseAxes(t, QStringLiteral("cluster.count,optimizer.lr"));
  QVERIFY(!axes.isOk());
  QString msg = QString::fromStdString(axes.message());
  QVERIFY2(msg.contains(QStringLiteral("'optimizer.lr'")), qPrintable(msg));
  QVERIFY2(msg.contains(QStringLiteral("cluster.count, strategy.barrier_timeout_s, strategy.dasp.delta, strategy.name")),
           qPrintable(msg));
  axes = chooseAxes(t, QStringLiteral("seed,cluster.count"));
  QVERIFY(!axes.isOk());
  msg = QString::fromStdString(axes.message());
  QVERIFY2(msg.contains(QStringLiteral("'seed' is never a sweep axis")), qPrintable(msg));
  QVERIFY(!chooseAxes(t, QStringLiteral("cluster.count,strategy.name,strategy.dasp.delta")).isOk());
  QVERIFY(!chooseAxes(t, QStringLiteral("cluster.count,cluster.count")).isOk());
  QVERIFY(!chooseAxes(t, QStringLiteral("cluster.count,")).isOk());
}

void TestSweep::oneOrNoSweptPath() {
  // Only δ varies (4 workers): a 1×3 map per strategy.
  const SweepTable one = SweepTable::fromRuns(subset([](const Planned& p) { return p.count == 4; }));
  QCOMPARE(one.sweepPaths, QStringList{QStringLiteral("strategy.dasp.delta")});
  Result<SweepAxes> axes = chooseAxes(one);
  QVERIFY2(axes.isOk(), axes.message().c_str());
  QCOMPARE(axes->x, QStringLiteral("strategy.dasp.delta"));
  QVERIFY(axes->y.isEmpty());
  const std::vector<SweepHeatmap> maps = sweepHeatmaps(one, axes.value());
  QCOMPARE(maps.size(), std::size_t{2});
  QCOMPARE(maps[0].rows(), 1);
  QCOMPARE(maps[0].columns(), 3);
  const QImage image = renderSweepHeatmap(maps[0]);
  QVERIFY(image.width() >= 300 && image.height() >= 150);

  // A grid point without runs: an empty (white) cell, not a hatched one.
  const SweepTable gap = SweepTable::fromRuns(
      subset([](const Planned& p) { return !(p.strategy == "dasp" && p.count == 16 && p.delta == 0.5); }));
  axes = chooseAxes(gap);
  QVERIFY2(axes.isOk(), axes.message().c_str());
  const std::vector<SweepHeatmap> gapMaps = sweepHeatmaps(gap, axes.value());
  QCOMPARE(gapMaps.size(), std::size_t{2});
  QCOMPARE(gapMaps[1].cell(2, 1).runs, 0);
  QCOMPARE(sweepCellColor(gapMaps[1], 2, 1), QColor(Qt::white));

  // Only the strategy (and its knob) differs: no sweep, no heatmap.
  const SweepTable none = SweepTable::fromRuns(subset([](const Planned& p) { return p.count == 4 && p.delta == 0.1; }));
  QVERIFY(!none.isSweep());
  QCOMPARE(none.varyingPaths(), (QStringList{QStringLiteral("strategy.barrier_timeout_s"), QStringLiteral("strategy.name")}));
  axes = chooseAxes(none);
  QVERIFY(axes.isOk());
  QVERIFY(axes->empty());
  QVERIFY(sweepHeatmaps(none, axes.value()).empty());
}

void TestSweep::rendersColoursAndHatching() {
  const SweepTable t = SweepTable::fromRuns(m_runs);
  const Result<SweepAxes> axes = chooseAxes(t);
  QVERIFY(axes.isOk());
  const std::vector<SweepHeatmap> maps = sweepHeatmaps(t, axes.value());
  QCOMPARE(maps.size(), std::size_t{2});
  const SweepHeatmap& bsp = maps[0];
  const QImage image = renderSweepHeatmap(bsp);
  QVERIFY(!image.isNull());
  QCOMPARE(image.size(), sweepHeatmapSize(bsp));
  QVERIFY(image.width() >= 300 && image.height() >= 150);

  const QRgb notReached = dominant(image, sweepCellRect(bsp, image.size(), 2, 1));  // δ 0.5, 16 workers
  const QRgb reached = dominant(image, sweepCellRect(bsp, image.size(), 0, 0));     // δ 0.1, 4 workers: 9.5 s
  const QRgb partly = dominant(image, sweepCellRect(bsp, image.size(), 1, 1));      // δ 0.3, 16 workers: 20 s, 1/2
  QCOMPARE(QColor(notReached), sweepNotReachedColor());
  QCOMPARE(QColor(reached), viridis((9.5 - 2.75) / (33.5 - 2.75)));
  QCOMPARE(QColor(partly), viridis((20.0 - 2.75) / (33.5 - 2.75)));
  QCOMPARE(QColor(reached), sweepCellColor(bsp, 0, 0));
  QVERIFY(reached != notReached);
  QVERIFY(reached != partly);
  // The slowest grid point of the sweep is the colormap's top (yellow) ...
  QCOMPARE(QColor(dominant(image, sweepCellRect(bsp, image.size(), 0, 1))), QColor(0xfd, 0xe7, 0x25));
  // ... the fastest its bottom (dark violet), in the other map.
  const QImage dasp = renderSweepHeatmap(maps[1]);
  QCOMPARE(QColor(dominant(dasp, sweepCellRect(maps[1], dasp.size(), 0, 0))), QColor(0x44, 0x01, 0x54));
  // An explicit size is kept, and the cells still lie where sweepCellRect says.
  const QImage big = renderSweepHeatmap(bsp, QSize(1200, 500));
  QCOMPARE(big.size(), QSize(1200, 500));
  QCOMPARE(QColor(dominant(big, sweepCellRect(bsp, big.size(), 2, 1))), sweepNotReachedColor());
}

void TestSweep::reportHasTheSweepSection() {
  const QString path = m_dir.filePath(QStringLiteral("sweep.html"));
  Status s = writeHtmlReport(m_runs, path);
  QVERIFY2(s.isOk(), s.message().c_str());
  const QString html = readAll(path);
  QVERIFY(html.contains(QStringLiteral("<h2>Sweep: time to target</h2>")));
  QVERIFY(html.contains(QStringLiteral("<table class=\"sweep\"")));
  QVERIFY(html.contains(QStringLiteral("<td>16</td><td>0.3</td><td class=\"l\">dasp</td><td>2</td><td>2</td><td>7.75 ± 0.35</td>")));
  QVERIFY(html.contains(QStringLiteral("<td>16</td><td>0.3</td><td class=\"l\">bsp</td><td>2</td><td>1</td><td>20.00</td>")));
  QVERIFY(html.contains(QStringLiteral("<td>16</td><td>0.5</td><td class=\"l\">bsp</td><td>2</td><td>0</td><td>not reached</td>")));
  QVERIFY(html.contains(QStringLiteral("strategy.barrier_timeout_s")));  // named as a strategy knob
  // The report says which engine ran the runs: once, since all of them share it (a column
  // of the summary table only where they differ).
  QVERIFY2(html.contains(QStringLiteral("engine sim")), qPrintable(html.left(4000)));
  QVERIFY(!html.contains(QStringLiteral("<th class=\"l\">engine</th>")));
  // One heatmap per strategy, decodable PNGs.
  for (const QString& facet : {QStringLiteral("strategy bsp"), QStringLiteral("strategy dasp")}) {
    const QRegularExpression re(QStringLiteral("<img src=\"data:image/png;base64,([A-Za-z0-9+/=]+)\" alt=\"time to target "
                                               "heatmap: %1\"")
                                    .arg(QRegularExpression::escape(facet)));
    const QRegularExpressionMatch m = re.match(html);
    QVERIFY2(m.hasMatch(), qPrintable(facet));
    const QImage im = QImage::fromData(QByteArray::fromBase64(m.captured(1).toLatin1()), "PNG");
    QVERIFY(!im.isNull());
    QVERIFY(im.width() >= 300);
  }

  // Explicit axes reach the report; a bad one fails the export, naming it, and writes nothing.
  const QString byStrategy = m_dir.filePath(QStringLiteral("by-strategy.html"));
  ReportOptions options;
  options.sweepAxes = QStringLiteral("strategy.name,cluster.count");
  s = writeReport(m_runs, byStrategy, options);
  QVERIFY2(s.isOk(), s.message().c_str());
  QVERIFY(readAll(byStrategy).contains(QStringLiteral("alt=\"time to target heatmap: strategy.dasp.delta=0.5\"")));
  const QString bad = m_dir.filePath(QStringLiteral("bad.html"));
  options.sweepAxes = QStringLiteral("cluster.count,no.such.path");
  s = writeHtmlReport(m_runs, bad, options);
  QVERIFY(!s.isOk());
  QVERIFY2(QString::fromStdString(s.message()).contains(QStringLiteral("'no.such.path'")), s.message().c_str());
  QVERIFY(QString::fromStdString(s.message()).contains(bad));
  QVERIFY(!QFile::exists(bad));

  // The PDF gets the section too (its images are document resources).
  const QString pdf = m_dir.filePath(QStringLiteral("sweep.pdf"));
  s = writePdfReport(m_runs, pdf);
  QVERIFY2(s.isOk(), s.message().c_str());
  QVERIFY(QFileInfo(pdf).size() > 1000);

  // No section without a swept path.
  const QString plain = m_dir.filePath(QStringLiteral("plain.html"));
  QVERIFY(writeHtmlReport(subset([](const Planned& p) { return p.count == 4 && p.delta == 0.1; }), plain).isOk());
  const QString plainHtml = readAll(plain);
  QVERIFY(plainHtml.contains(QStringLiteral("<table class=\"summary\"")));
  QVERIFY(!plainHtml.contains(QStringLiteral("Sweep: time to target")));
}

void TestSweep::toolTakesSweepAxes() {
  // Built by the dasp-report target (ui.report depends on it).
  if (!QFileInfo(QString::fromLatin1(kReportTool)).isExecutable()) QSKIP("dasp-report is not built");
  QProcess p;
  const QString out = m_dir.filePath(QStringLiteral("tool.html"));
  p.start(QString::fromLatin1(kReportTool), {QStringLiteral("--db"), m_db, QStringLiteral("--runs"), QStringLiteral("all"),
                                             QStringLiteral("--out"), out, QStringLiteral("--sweep-axes"),
                                             QStringLiteral("cluster.count,nope.path")});
  QVERIFY2(p.waitForFinished(60000), qPrintable(p.errorString()));
  const QString err = QString::fromUtf8(p.readAllStandardError());
  QCOMPARE(p.exitCode(), 2);
  QVERIFY2(err.contains(QStringLiteral("--sweep-axes")) && err.contains(QStringLiteral("'nope.path'")) &&
               err.contains(QStringLiteral("strategy.dasp.delta")),
           qPrintable(err));
  QVERIFY(!QFile::exists(out));

  p.start(QString::fromLatin1(kReportTool), {QStringLiteral("--db"), m_db, QStringLiteral("--runs"), QStringLiteral("all"),
                                             QStringLiteral("--out"), out, QStringLiteral("--sweep-axes"),
                                             QStringLiteral("cluster.count,strategy.dasp.delta")});
  QVERIFY2(p.waitForFinished(60000), qPrintable(p.errorString()));
  QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
  const QString html = readAll(out);
  QVERIFY(html.contains(QStringLiteral("Heatmap columns: cluster.count, rows: strategy.dasp.delta")));

  // --chart sweep: the heatmaps, one under the other, as an image (axes for it only).
  const QString png = m_dir.filePath(QStringLiteral("sweep.png"));
  auto chart = [&](const QString& name, const QString& sweepAxes) {
    p.start(QString::fromLatin1(kReportTool), {QStringLiteral("--db"), m_db, QStringLiteral("--runs"), QStringLiteral("all"),
                                               QStringLiteral("--chart"), name, QStringLiteral("--out"), png,
                                               QStringLiteral("--sweep-axes"), sweepAxes});
    return p.waitForFinished(60000) ? p.exitCode() : -1;
  };
  QVERIFY2(chart(QStringLiteral("sweep"), QStringLiteral("cluster.count,strategy.dasp.delta")) == 0, p.readAllStandardError().constData());
  const SweepTable table = SweepTable::fromRuns(m_runs);
  const auto maps = sweepHeatmaps(table, chooseAxes(table, QStringLiteral("cluster.count,strategy.dasp.delta")).value());
  QVERIFY(maps.size() > 1 && QImage(png).height() >= sweepHeatmapSize(maps[0]).height() * 2);  // a map per strategy
  QCOMPARE(chart(QStringLiteral("convergence"), QStringLiteral("cluster.count")), 2);
}

namespace {

int lineOf(const SweepTable& t, const QString& strategy, const QString& count, const QString& delta) {
  const SweepRow* row = findRow(t, strategy, count, delta);
  return row ? static_cast<int>(row - t.rows.data()) : -1;
}

}  // namespace

void TestSweep::parallelCoordinatesLayOutTheGrid() {
  const SweepTable t = SweepTable::fromRuns(m_runs);
  const SweepParallel view = sweepParallelOf(t);
  // strategy (two ran), the swept paths in the table's order, then the time to target.
  QCOMPARE(view.axes.size(), std::size_t{4});
  QCOMPARE(view.axes[0].title, QStringLiteral("strategy"));
  QCOMPARE(view.axes[1].title, QStringLiteral("cluster.count"));
  QCOMPARE(view.axes[2].title, QStringLiteral("strategy.dasp.delta"));
  QCOMPARE(view.axes[3].title, QStringLiteral("time to target (s)"));
  // Numeric paths by value: 4 and 16 at the ends, 0.3 halfway between 0.1 and 0.5.
  QCOMPARE(view.axes[1].heights, (std::vector<double>{0.0, 1.0}));
  QCOMPARE(view.axes[2].heights.size(), std::size_t{3});
  QCOMPARE(view.axes[2].heights.front(), 0.0);
  QVERIFY(std::abs(view.axes[2].heights[1] - 0.5) < 1e-12);
  QCOMPARE(view.axes[2].heights.back(), 1.0);
  QCOMPARE(view.axes[3].labels.back(), QStringLiteral("not reached"));
  QCOMPARE(view.lines.size(), t.rows.size());
  QCOMPARE(view.lines.size(), std::size_t{12});
  // The time axis spans the fastest mean (dasp, 4 workers, δ 0.1: 2.75 s) to the slowest
  // (bsp, 16 workers, δ 0.1: 33.5 s).
  QCOMPARE(view.lo, 2.75);
  QCOMPARE(view.hi, 33.5);
  const auto& fastest = view.lines[static_cast<std::size_t>(lineOf(t, "dasp", "4", "0.1"))];
  QCOMPARE(fastest.heights, (std::vector<double>{view.axes[0].heights[1], 0.0, 0.0, 0.0}));
  const auto& slowest = view.lines[static_cast<std::size_t>(lineOf(t, "bsp", "16", "0.1"))];
  QCOMPARE(slowest.heights.back(), 1.0);
  const auto& bsp = view.lines[static_cast<std::size_t>(lineOf(t, "bsp", "4", "0.1"))];
  QVERIFY(qFuzzyCompare(bsp.heights.back(), (9.5 - 2.75) / (33.5 - 2.75)));
  // Never reached: in the band above the axis, and said so.
  const auto& never = view.lines[static_cast<std::size_t>(lineOf(t, "bsp", "16", "0.5"))];
  QVERIFY(!never.mean);
  QCOMPARE(never.heights.back(), kSweepNotReachedHeight);
  QVERIFY2(never.label.endsWith(QStringLiteral("not reached (0/2 reached)")), qPrintable(never.label));
  const auto& partly = view.lines[static_cast<std::size_t>(lineOf(t, "bsp", "16", "0.3"))];
  QVERIFY2(partly.label.contains(QStringLiteral("20.0 s (1/2 reached)")), qPrintable(partly.label));

  // One strategy: no strategy axis. One grid point: not a sweep, nothing to draw.
  const SweepParallel dasp = sweepParallelOf(SweepTable::fromRuns(subset([](const Planned& p) { return p.strategy == "dasp"; })));
  QCOMPARE(dasp.axes.size(), std::size_t{3});
  QCOMPARE(dasp.axes[0].title, QStringLiteral("cluster.count"));
  QVERIFY(sweepParallelOf(SweepTable::fromRuns(subset([](const Planned& p) {
            return p.delta == 0.1 && p.count == 4;
          }))).empty());
}

void TestSweep::parallelChartDrawsTheLines() {
  const SweepTable t = SweepTable::fromRuns(m_runs);
  SweepParallelChart chart;
  chart.setView(sweepParallelOf(t));
  const int fastest = lineOf(t, "dasp", "4", "0.1");
  chart.setHighlighted(fastest);
  QCOMPARE(chart.highlighted(), fastest);
  const QImage image = renderWidget(chart, QSize(900, 420));
  QCOMPARE(image.size(), QSize(900, 420));
  // Halfway between the δ axis and the time axis, the highlighted fastest line is drawn
  // in the colour map's bottom colour.
  const QPointF mid = (chart.pointOf(fastest, 2) + chart.pointOf(fastest, 3)) / 2;
  QCOMPARE(QColor(image.pixel(mid.toPoint())), viridis(0));
  // A line that never reached the target ends above the slowest one, in the band.
  const int never = lineOf(t, "bsp", "16", "0.5");
  const int slowest = lineOf(t, "bsp", "16", "0.1");
  QVERIFY(chart.pointOf(never, 3).y() < chart.pointOf(slowest, 3).y());
  // An out-of-range highlight is none; not a sweep draws the placeholder, not an axis.
  chart.setHighlighted(99);
  QCOMPARE(chart.highlighted(), -1);
  chart.setView({});
  const QImage empty = renderWidget(chart, QSize(400, 200));
  QCOMPARE(QColor(empty.pixel(200, 190)), QColor(Qt::white));
}

void TestSweep::compareViewHasTheSweepTab() {
  ComparePanel panel;
  panel.setRuns(m_runs);
  SweepView* sweep = panel.sweepView();
  QVERIFY(sweep != nullptr);
  QCOMPARE(sweep->gridPoints(), 12);
  QCOMPARE(panel.tabs()->tabText(2), QStringLiteral("Sweep (12)"));
  QCOMPARE(panel.tabs()->currentWidget(), static_cast<QWidget*>(sweep));  // a sweep opens on its grid
  QTableWidget* table = sweep->table();
  // The swept paths, then strategy, runs, reached, time to target.
  QCOMPARE(table->columnCount(), 6);
  QCOMPARE(table->horizontalHeaderItem(0)->text(), QStringLiteral("cluster.count"));
  QCOMPARE(table->horizontalHeaderItem(5)->text(), QStringLiteral("Time to target (s)"));
  const SweepTable t = SweepTable::fromRuns(m_runs);
  const int never = lineOf(t, "bsp", "16", "0.5");
  QCOMPARE(table->item(never, 5)->text(), QStringLiteral("not reached"));
  QCOMPARE(table->item(lineOf(t, "dasp", "4", "0.1"), 5)->text(), QStringLiteral("2.75 ± 0.35"));
  // Choosing a row highlights its line.
  table->setCurrentCell(3, 0);
  QCOMPARE(sweep->chart()->highlighted(), 3);
  // Runs that are not a sweep: an empty table and the tab's plain name.
  panel.setRuns(subset([](const Planned& p) { return p.delta == 0.1 && p.count == 4; }));
  QCOMPARE(sweep->gridPoints(), 0);
  QCOMPARE(panel.tabs()->tabText(2), QStringLiteral("Sweep"));
  QCOMPARE(panel.tabs()->currentIndex(), 0);  // back to the summary
  QVERIFY(sweep->chart()->view().empty());
}

// dasp-report --chart NAME --group-by PATH: the charts group by a swept field.
void TestSweep::chartsGroupBySweptField() {
  const QString png = m_dir.filePath(QStringLiteral("by-count.png"));
  const Status written = writeNamedChart(m_runs, QStringLiteral("time-to-target"), png, QStringLiteral("cluster.count"));
  QVERIFY2(written.isOk(), written.message().c_str());
  QVERIFY(!QImage(png).isNull());
  QProcess p;
  p.start(QString::fromLatin1(kReportTool),
          {QStringLiteral("--db"), m_db, QStringLiteral("--runs"), QStringLiteral("all"), QStringLiteral("--chart"),
           QStringLiteral("convergence"), QStringLiteral("--group-by"), QStringLiteral("cluster.count"),
           QStringLiteral("--out"), m_dir.filePath(QStringLiteral("conv.svg"))});
  QVERIFY(p.waitForFinished(60000));
  QCOMPARE(p.exitCode(), 0);
  QVERIFY(QFile::exists(m_dir.filePath(QStringLiteral("conv.svg"))));
}

void TestSweep::reportsGroupBySweptField() {
  const QString html = m_dir.filePath(QStringLiteral("by-count.html"));
  ReportOptions options;
  options.groupBy = QStringLiteral("cluster.count");
  const Status written = writeHtmlReport(m_runs, html, options);
  QVERIFY2(written.isOk(), written.message().c_str());
  QFile f(html);
  QVERIFY(f.open(QIODevice::ReadOnly));
  const QString page = QString::fromUtf8(f.readAll());
  // The per-group table has one row per cluster size, each over its 12 runs.
  QVERIFY(page.contains(QStringLiteral("<h2>Per cluster.count (mean ± std across runs)</h2>")));
  for (int count : kCounts) {
    const QString row = QStringLiteral("<tr><td class=\"l\">cluster.count=%1</td><td>12</td>").arg(count);
    QVERIFY2(page.contains(row), qPrintable(row));
  }
  QVERIFY(!page.contains(QStringLiteral("<h2>Per strategy")));
  // A key that does not vary is refused, naming it and the choices; nothing is written.
  const QString refusedPath = m_dir.filePath(QStringLiteral("refused.pdf"));
  options.groupBy = QStringLiteral("optimizer.lr");
  const Status refused = writePdfReport(m_runs, refusedPath, options);
  QVERIFY(!refused.isOk());
  const QString why = QString::fromStdString(refused.message());
  QVERIFY2(why.contains(QStringLiteral("optimizer.lr")) && why.contains(QStringLiteral("cluster.count")), qPrintable(why));
  QVERIFY(!QFile::exists(refusedPath));
  // The tool takes the same key for a PDF report.
  QProcess p;
  p.start(QString::fromLatin1(kReportTool),
          {QStringLiteral("--db"), m_db, QStringLiteral("--runs"), QStringLiteral("all"), QStringLiteral("--group-by"),
           QStringLiteral("strategy.dasp.delta"), QStringLiteral("--out"), m_dir.filePath(QStringLiteral("by-delta.pdf"))});
  QVERIFY(p.waitForFinished(120000));
  QCOMPARE(p.exitCode(), 0);
  QVERIFY(QFileInfo(m_dir.filePath(QStringLiteral("by-delta.pdf"))).size() > 0);
}

QTEST_MAIN(TestSweep)
#include "tst_sweep.moc"
