// SPDX-License-Identifier: MIT
#include "ui/charts/chart_images.h"

#include "ui/charts/chart_export.h"
#include "ui/charts/convergence_chart.h"
#include "ui/charts/node_lanes.h"
#include "ui/charts/run_groups.h"
#include "ui/charts/staleness_histogram.h"
#include "ui/charts/sweep_heatmap.h"
#include "ui/charts/time_to_target_bars.h"

#include <QLabel>

#include <cmath>
#include <memory>

namespace dasp::ui {

namespace {

constexpr int kWidth = 960;

Status chartError(const QString& name, const QString& why) {
  return Status::error(QStringLiteral("--chart %1: %2").arg(name, why).toStdString());
}

// The widgets of one image, kept alive until it is written.
struct Parts {
  std::vector<std::unique_ptr<QWidget>> owned;
  std::vector<ChartPart> parts;
  template <typename W>
  W* add(QSize size, std::function<void()> settle = {}) {
    auto w = std::make_unique<W>();
    W* raw = w.get();
    owned.push_back(std::move(w));
    parts.push_back(ChartPart{raw, size, std::move(settle)});
    return raw;
  }
  void title(const RunData& r) {
    auto* label = add<QLabel>(QSize(kWidth, 22));
    label->setText(QStringLiteral("  Run #%1: %2 (%3, seed %4)").arg(r.runId).arg(r.name, r.displayStrategy()).arg(r.seed));
    label->setAutoFillBackground(true);
    label->setPalette(QPalette(Qt::white));
  }
};

}  // namespace

const QStringList& chartNames() {
  static const QStringList names{QStringLiteral("convergence"), QStringLiteral("loss"), QStringLiteral("time-to-target"),
                                 QStringLiteral("lanes"), QStringLiteral("staleness"), QStringLiteral("sweep")};
  return names;
}

void showConvergence(ConvergenceChart& chart, const std::vector<RunData>& runs, const std::vector<RunFigures>& figs,
                     const QString& groupKey) {
  std::vector<const RunData*> ptrs;
  for (const RunData& r : runs) ptrs.push_back(&r);
  const QStringList strategies = groupLabels(runs, groupKey);
  const bool grouped = groupByLabels(strategies).size() < runs.size();
  QStringList labels;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    labels << (grouped ? strategies[static_cast<qsizetype>(i)]
                       : QStringLiteral("%1 #%2").arg(strategies[static_cast<qsizetype>(i)]).arg(runs[i].runId));
  }
  // The target line only when every run has the same target.
  double target = !figs.empty() && figs.front().target ? *figs.front().target : std::nan("");
  for (const RunFigures& f : figs) {
    if (!f.target || *f.target != target) target = std::nan("");
  }
  chart.setRuns(ptrs, labels);
  chart.setGrouped(grouped);
  chart.setTarget(target);
}

Status writeNamedChart(const std::vector<RunData>& runs, const QString& name, const QString& path,
                       const QString& groupKey, const QString& sweepAxes) {
  if (!chartNames().contains(name)) {
    return chartError(name, QStringLiteral("unknown chart (use one of %1)").arg(chartNames().join(QStringLiteral(", "))));
  }
  if (!imageFormatFor(path)) return chartError(name, QStringLiteral("%1: unknown image format (use .png or .svg)").arg(path));
  if (runs.empty()) return chartError(name, QStringLiteral("no runs to draw"));
  Parts parts;
  const std::vector<RunFigures> figs = runFigures(runs);
  if (name == QLatin1String("convergence") || name == QLatin1String("loss")) {
    ConvergenceChart* chart = nullptr;
    chart = parts.add<ConvergenceChart>(QSize(kWidth, 480), [&chart] { chart->settleLayout(); });
    showConvergence(*chart, runs, figs, groupKey);
    if (name == QLatin1String("loss")) {
      chart->setMetric(ConvergenceChart::Metric::Loss);
      chart->setTarget(std::nan(""));
      chart->setLogY(true);
    }
  } else if (name == QLatin1String("sweep")) {
    const SweepTable table = SweepTable::fromRuns(runs);
    const auto axes = chooseAxes(table, sweepAxes);
    if (!axes) return chartError(name, QString::fromStdString(axes.message()));
    const std::vector<SweepHeatmap> maps = sweepHeatmaps(table, axes.value());
    if (maps.empty()) return chartError(name, QStringLiteral("the runs are not a sweep (no spec field varies between them)"));
    for (const SweepHeatmap& map : maps) {
      const QImage image = renderSweepHeatmap(map);
      auto* label = parts.add<QLabel>(image.size());
      label->setPixmap(QPixmap::fromImage(image));
    }
  } else if (name == QLatin1String("time-to-target")) {
    auto* bars = parts.add<TimeToTargetBars>(QSize(kWidth, 420));
    bars->setBars(timeToTargetBars(runs, figs, groupLabels(runs, groupKey)));
    if (bars->bars().target.isEmpty()) return chartError(name, QStringLiteral("no run has a target accuracy"));
  } else {
    const bool lanes = name == QLatin1String("lanes");
    for (const RunData& r : runs) {
      if (lanes && r.nodes.empty()) continue;
      if (!lanes && StalenessHistogram::histogram(r).empty()) continue;
      parts.title(r);
      if (lanes) {
        auto* w = parts.add<NodeLanes>(QSize(kWidth, 0));
        w->setRun(&r);
        w->setWindow(0, r.endT > 0 && std::isfinite(r.endT) ? r.endT : 1.0);
        parts.parts.back().size.setHeight(w->sizeHint().height());
      } else {
        parts.add<StalenessHistogram>(QSize(kWidth, 240))->setRun(&r);
      }
    }
    if (parts.parts.empty()) {
      return chartError(name, lanes ? QStringLiteral("no run has node lanes") : QStringLiteral("no run applied a gradient"));
    }
  }
  return writeChartImage(parts.parts, path, QStringLiteral("DASP %1").arg(name));
}

}  // namespace dasp::ui
