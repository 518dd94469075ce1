// SPDX-License-Identifier: MIT
// The HTML report (and the PDF's HTML): the time-to-target chart, summary, per-strategy,
// heterogeneity, activity and recovery tables, sweep heatmaps, the GUI's own charts, the
// spec once, and each run's lanes, bars and events (the PDF: a compact grid of the runs).
#include "ui/charts/report_html.h"
#include "ui/charts/report_parts.h"

#include "core/results/mean_std.h"
#include "ui/charts/chart_export.h"
#include "ui/charts/chart_images.h"
#include "ui/charts/convergence_chart.h"
#include "ui/charts/node_bars.h"
#include "ui/charts/node_lanes.h"
#include "ui/charts/run_groups.h"
#include "ui/charts/staleness_histogram.h"

#include <QCoreApplication>
#include <QDateTime>

#include <algorithm>
#include <cmath>
#include <map>

namespace dasp::ui {

namespace {

QImage renderChart(ConvergenceChart& chart, const QSize& size) {
  return renderWidget(chart, size, [&] { chart.settleLayout(); });
}

bool routineEvent(const Event& e) { return e.code == v1::RunEvent::NODE_UP; }

// The sweep section: one heatmap per facet, then the grid points as a table.
QString sweepSection(const SweepTable& sweep, const SweepAxes& axes, const QString& table,
                     const std::function<QString(const QImage&, const QString&, int)>& img, int imgW) {
  QString h = QStringLiteral("<h2>Sweep: time to target</h2>\n");
  QStringList swept;
  for (const QString& p : sweep.sweepPaths) {
    swept << QStringLiteral("%2 (%1 values)").arg(sweep.axis(p)->values.size()).arg(esc(p));
  }
  QStringList knobs;
  for (const SweepAxis& a : sweep.axes) {
    if (a.strategyKnob) knobs << esc(a.path);
  }
  h += QStringLiteral("<p>Swept: %1. Heatmap columns: %2%3%4. Each cell is the mean time to target over the "
                      "runs of its grid point that reached the target (n/m when only n of its m runs did); "
                      "hatched grey: none did. Colours: viridis, one scale for all maps, lower is better.%5</p>\n")
           .arg(swept.join(QStringLiteral(", ")), esc(axes.x),
                axes.y.isEmpty() ? QString() : QStringLiteral(", rows: ") + esc(axes.y),
                axes.facets.isEmpty() ? QString()
                                      : QStringLiteral("; one map per ") + esc(axes.facets.join(QStringLiteral(" × "))),
                knobs.isEmpty() ? QString()
                                : QStringLiteral(" Differing only between strategies, so part of them: ") +
                                      knobs.join(QStringLiteral(", ")) + QLatin1Char('.'));
  for (const SweepHeatmap& map : sweepHeatmaps(sweep, axes)) {
    const QImage im = renderSweepHeatmap(map);
    const QString alt = QStringLiteral("time to target heatmap") +
                        (map.facet.isEmpty() ? QString() : QStringLiteral(": ") + map.facet);
    h += QStringLiteral("<p>%1</p>\n").arg(img(im, alt, std::min(im.width(), imgW)));
  }
  h += table.arg(QStringLiteral("sweep")) + QStringLiteral("<tr>");
  for (const QString& p : sweep.sweepPaths) {
    h += QStringLiteral("<th%1>%2</th>").arg(sweep.axis(p)->numeric ? QString() : QStringLiteral(" class=\"l\""), esc(p));
  }
  h += QStringLiteral("<th class=\"l\">strategy</th><th>runs</th><th>reached</th><th>time to target (s)</th></tr>\n");
  for (const SweepRow& row : sweep.rows) {
    h += QStringLiteral("<tr>");
    for (int i = 0; i < sweep.sweepPaths.size(); ++i) {
      const QString& v = row.values[static_cast<std::size_t>(i)];
      h += QStringLiteral("<td%1>%2</td>")
               .arg(sweep.axis(sweep.sweepPaths[i])->numeric ? QString() : QStringLiteral(" class=\"l\""),
                    v.isEmpty() ? QStringLiteral("–") : esc(v));
    }
    QString time = QStringLiteral("not reached");
    if (row.mean && row.stddev) {
      time = QStringLiteral("%1 ± %2").arg(*row.mean, 0, 'f', 2).arg(*row.stddev, 0, 'f', 2);
    } else if (row.mean) {
      time = QString::number(*row.mean, 'f', 2);  // one run: no spread to show
    }
    h += QStringLiteral("<td class=\"l\">%3</td><td>%1</td><td>%2</td><td>%4</td></tr>\n")
             .arg(row.runs)
             .arg(row.reached)
             .arg(esc(row.strategy), time);
  }
  h += QStringLiteral("</table>\n");
  return h;
}

// The page head: title (the runs' names), style, heading.
QString reportHead(const std::vector<RunData>& runs) {
  QString h;
  QString names;
  for (const RunData& r : runs) {
    if (!names.contains(r.name)) names += (names.isEmpty() ? QString() : QStringLiteral(", ")) + r.name;
  }
  const QString title = QStringLiteral("DASP report: %1").arg(names.isEmpty() ? QStringLiteral("no runs") : names);
  h += QStringLiteral("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>%1</title>\n").arg(esc(title));
  h += QStringLiteral(
      "<style>body{font-family:sans-serif;font-size:10pt;margin:1.5em}"
      "table{border-collapse:collapse;margin:0.5em 0}th,td{border:1px solid #bbb;padding:2px 6px;text-align:right}"
      "th{background:#eee}td.l,th.l{text-align:left}pre{background:#f6f6f6;padding:6px;white-space:pre-wrap;"
      "font-size:8pt}img{max-width:100%}table.summary td{white-space:nowrap}</style></head><body>\n");
  h += QStringLiteral("<h1>%1</h1>\n<p>%2 run(s), generated %3 by dasp-report.</p>\n")
           .arg(esc(title))
           .arg(runs.size())
           .arg(QDateTime::currentDateTime().toString(Qt::ISODate));
  return h;
}

// The summary table's header cells: what all runs share is said once above the table, not
// repeated in a column.
QStringList summaryHeader(const SharedColumns& differ) {
  QStringList head{QStringLiteral("<th>run</th>")};
  if (differ.name) head << QStringLiteral("<th class=\"l\">name</th>");
  head << QStringLiteral("<th class=\"l\">strategy</th>");
  if (differ.engine) head << QStringLiteral("<th class=\"l\">engine</th>");
  if (differ.shards) head << QStringLiteral("<th>server shards</th>");
  head << QStringLiteral("<th>seed</th>") << QStringLiteral("<th class=\"l\">status</th>");
  if (differ.target) head << QStringLiteral("<th>target</th>");
  for (const char* h : {"time to target (s)", "speedup vs BSP", "heterogeneity cost", "final accuracy", "mean wait (s)",
                        "mean staleness", "max staleness", "updates", "dropped / lost"}) {
    head << QStringLiteral("<th>%1</th>").arg(QLatin1String(h));
  }
  if (differ.lrConvention) head << QStringLiteral("<th class=\"l\">lr convention</th>");
  return head;
}

// One row per run.
QString summaryTable(const std::vector<RunFigures>& figs) {
  const SharedColumns differ = sharedColumns(figs);
  QString h = QStringLiteral("<h2>Summary</h2>\n") + differ.line + tableStart(QStringLiteral("summary"));
  const QString header = summaryHeader(differ).join(QString());
  h += QStringLiteral("<tr>%1</tr>\n").arg(header);
  for (const RunFigures& f : figs) {
    auto left = [](const QString& text) { return QStringLiteral("<td class=\"l\">%1</td>").arg(esc(text)); };
    QString row = QStringLiteral("<tr><td>%1</td>").arg(f.runId);
    if (differ.name) row += left(f.name);
    row += left(f.strategy);
    if (differ.engine) row += left(f.engine);
    if (differ.shards) row += QStringLiteral("<td>%1</td>").arg(f.shards);
    row += QStringLiteral("<td>%1</td>").arg(f.seed) + left(f.status);
    if (differ.target) row += QStringLiteral("<td>%1</td>").arg(fig(f.target, 3));
    row += QStringLiteral("<td>%1</td><td>%2</td><td>%3</td><td>%4</td><td>%5</td><td>%6</td><td>%7</td><td>%8</td>"
                          "<td>%9</td>")
               .arg(esc(timeToTargetText(f, 2)),
                    f.speedupVsBsp ? fig(f.speedupVsBsp, 2) + QStringLiteral("×") : QStringLiteral("–"),
                    fig(f.heterogeneityCost, 2), fig(f.finalAccuracy, 4), fig(f.meanWait, 4), fig(f.meanStaleness, 2),
                    fig(f.maxStaleness, 0), fig(f.updates, 0), fig(f.dropped, 0) + QStringLiteral(" / ") + fig(f.lost, 0));
    if (differ.lrConvention) row += left(f.lrConvention);
    h += row + QStringLiteral("</tr>\n");
  }
  return h + QStringLiteral("</table>\n");
}

// Per group (the strategy, or the value of ReportOptions::groupBy), across seeds (mean ±
// std), when some group has several runs.
QString groupTable(const std::vector<RunFigures>& figs, const QString& groupKey, const std::vector<RunGroup>& groups) {
  if (groups.size() == figs.size()) return {};  // one run each: the summary says it all
  const QString table = tableStart(QStringLiteral("%1"));
  QString h;
  h += QStringLiteral("<h2>Per %1 (mean ± std across runs)</h2>\n").arg(esc(groupKey)) +
       table.arg(QStringLiteral("strategies"));
  h += QStringLiteral("<tr><th class=\"l\">%1</th>").arg(esc(groupKey)) + QStringLiteral(
      "<th>runs</th><th>reached target</th><th>time to target (s)</th>"
      "<th>speedup vs BSP</th><th>heterogeneity cost</th><th>final accuracy</th><th>mean wait (s)</th>"
      "<th>mean staleness</th></tr>\n");
  for (const RunGroup& g : groups) {
    const auto& members = g.members;
    std::vector<double> ttt, speedup, cost, acc, wait, stale;
    for (std::size_t i : members) {
      const RunFigures& f = figs[i];
      if (f.timeToTarget) ttt.push_back(*f.timeToTarget);
      if (f.speedupVsBsp) speedup.push_back(*f.speedupVsBsp);
      if (f.heterogeneityCost) cost.push_back(*f.heterogeneityCost);
      if (f.finalAccuracy) acc.push_back(*f.finalAccuracy);
      if (f.meanWait) wait.push_back(*f.meanWait);
      if (f.meanStaleness) stale.push_back(*f.meanStaleness);
    }
    h += QStringLiteral("<tr><td class=\"l\">%1</td><td>%2</td><td>%3/%2</td><td>%4</td><td>%5</td><td>%6</td>"
                        "<td>%7</td><td>%8</td><td>%9</td></tr>\n")
             .arg(esc(g.label))
             .arg(members.size())
             .arg(ttt.size())
             .arg(pm(ttt, 2), pm(speedup, 2), pm(cost, 2), pm(acc, 4), pm(wait, 4), pm(stale, 2));
  }
  h += QStringLiteral("</table>\n");
  return h;
}

// Fault drills: the recovery table across runs, then every fault of every run.
QString faultsSection(const std::vector<RunData>& runs) {
  const QString table = tableStart(QStringLiteral("%1"));
  QString h;
  const std::vector<RunFaults> drills = runFaults(runs);
  if (!drills.empty()) {
    const RecoveryTable recovery = recoveryTable(drills);
    h += QStringLiteral("<h2>Faults and recovery</h2>\n") + table.arg(QStringLiteral("recovery")) + QStringLiteral("<tr>");
    for (std::size_t c = 0; c < recovery.header.size(); ++c) {
      h += QStringLiteral("<th%1>%2</th>")
               .arg(c < 3 ? QStringLiteral(" class=\"l\"") : QString(), esc(QString::fromStdString(recovery.header[c])));
    }
    h += QStringLiteral("</tr>\n");
    for (const auto& row : recovery.rows) {
      h += QStringLiteral("<tr>");
      for (std::size_t c = 0; c < row.size(); ++c) {
        h += QStringLiteral("<td%1>%2</td>")
                 .arg(c < 3 ? QStringLiteral(" class=\"l\"") : QString(), esc(QString::fromStdString(row[c])));
      }
      h += QStringLiteral("</tr>\n");
    }
    h += QStringLiteral("</table>\n<p>%1</p>\n").arg(esc(QString::fromStdString(recovery.note)));

    // Per fault: the figures that say what happened (the CSV has every figure).
    h += table.arg(QStringLiteral("faults"));
    h += QStringLiteral(
        "<tr><th>run</th><th class=\"l\">recovery</th><th class=\"l\">fault</th><th>at (s)</th>"
        "<th>detection (s)</th><th>downtime (s)</th><th>version before → after</th>"
        "<th>accuracy before → lowest</th><th>back to pre-fault (s)</th><th class=\"l\">detail</th></tr>\n");
    for (const RunFaults& rf : drills) {
      for (const RecoveryMetrics& m : rf.faults) {
        const FaultRecord& f = m.fault;
        const QString after = f.versionAfter ? QString::number(*f.versionAfter) : QStringLiteral("–");
        const QString back = m.recoverS ? fig(m.recoverS, 2)
                                        : (m.accuracyBefore ? QStringLiteral("never") : QStringLiteral("–"));
        // Numbers first, the texts in one multi-argument arg(): a '%' in a text stays as is.
        h += QStringLiteral("<tr><td>%1</td><td class=\"l\">%4</td><td class=\"l\">%2: %5 %6</td><td>%3</td>")
                 .arg(rf.runId)
                 .arg(f.index)
                 .arg(f.atS, 0, 'f', 2)
                 .arg(esc(QString::fromStdString(rf.recovery)), esc(QString::fromStdString(f.action)),
                      esc(QString::fromStdString(f.node)));
        h += QStringLiteral("<td>%1</td><td>%2</td><td>%3 → %4</td><td>%5 → %6</td><td>%7</td><td class=\"l\">%8</td></tr>\n")
                 .arg(fig(m.detectionS, 2), fig(m.downtimeS, 2))
                 .arg(f.versionBefore)
                 .arg(after, fig(m.accuracyBefore, 4), fig(m.accuracyLowestAfter, 4), back,
                      esc(QString::fromStdString(f.detail)));
      }
    }
    h += QStringLiteral("</table>\n");
  }

  return h;
}

// Convergence, drawn by the GUI's own chart: accuracy against time and updates, the loss on
// a log axis; `perRow` charts side by side.
QString convergenceSection(const std::vector<RunData>& runs, const std::vector<RunFigures>& figs,
                           const QString& groupKey, int perRow, ReportImages& img) {
  if (runs.empty()) return {};
  // Side by side, a smaller chart keeps its text readable at half the page's width.
  const QSize chartSize = perRow > 1 ? QSize(640, 320) : QSize(960, 420);
  ConvergenceChart chart;
  showConvergence(chart, runs, figs, groupKey);
  std::vector<const RunData*> ptrs;
  for (const RunData& r : runs) ptrs.push_back(&r);
  const QString timeTitle = ConvergenceChart::timeAxisTitle(ptrs);
  QStringList images;
  const int width = perRow > 1 ? img.width() / perRow - 8 : img.width();
  images << img(renderChart(chart, chartSize), QStringLiteral("test accuracy against ") + timeTitle, width);
  chart.setXAxis(ConvergenceChart::XAxis::Updates);
  images << img(renderChart(chart, chartSize), QStringLiteral("test accuracy against updates"), width);
  chart.setXAxis(ConvergenceChart::XAxis::Time);
  chart.setMetric(ConvergenceChart::Metric::Loss);
  chart.setTarget(std::nan(""));
  chart.setLogY(true);
  images << img(renderChart(chart, chartSize), QStringLiteral("test loss against ") + timeTitle, width);
  QString h = QStringLiteral("<h2>Convergence</h2>\n");
  if (perRow <= 1) {
    for (const QString& im : images) h += QStringLiteral("<p>%1</p>\n").arg(im);
    return h;
  }
  h += QStringLiteral("<table class=\"charts\" border=\"0\" cellspacing=\"0\" cellpadding=\"2\">\n");
  for (qsizetype i = 0; i < images.size(); i += perRow) {
    h += QStringLiteral("<tr>");
    for (qsizetype k = i; k < i + perRow; ++k) h += QStringLiteral("<td>%1</td>").arg(k < images.size() ? images[k] : QString());
    h += QStringLiteral("</tr>\n");
  }
  return h + QStringLiteral("</table>\n");
}

// One run: its node lanes, per-node bars, staleness, decisions, events and spec.
QString runSection(const RunData& r, ReportImages& img) {
  const QString table = tableStart(QStringLiteral("%1"));
  QString h;
  const double end = r.endT > 0 && std::isfinite(r.endT) ? r.endT : 1.0;
  h += QStringLiteral("<h2>Run #%1: %2 (%3, seed %4, %5)</h2>\n")
           .arg(r.runId)
           .arg(esc(r.name), esc(r.displayStrategy()))
           .arg(r.seed)
           .arg(esc(r.status));
  h += QStringLiteral("<p>model %1, dataset %2, %3 worker(s), %4 s of run time, %5 evaluation(s).</p>\n")
           .arg(esc(r.model), esc(r.dataset))
           .arg(r.nodes.size())
           .arg(end, 0, 'f', 1)
           .arg(r.evaluations.size());
  if (!r.divergence.isEmpty()) {
    h += QStringLiteral("<p class=\"diverged\"><b>Diverged:</b> %1.</p>\n").arg(esc(r.divergence));
  }
  if (!r.nodes.empty()) {
    NodeLanes lanes;
    lanes.setRun(&r);
    lanes.setWindow(0, end);
    const QSize lanesSize(960, lanes.sizeHint().height());
    h += QStringLiteral("<h3>Node lanes, whole run</h3>\n") + img(renderWidget(lanes, lanesSize), QStringLiteral("node lanes"));
    if (end > 10) {
      lanes.setWindow(end / 2 - 2.5, end / 2 + 2.5);
      h += QStringLiteral("<h3>Node lanes, 5 s in the middle of the run</h3>\n") +
           img(renderWidget(lanes, lanesSize), QStringLiteral("node lanes detail"));
    }
    NodeBars bars;
    bars.setRun(&r);
    bars.setWindow(0, end);
    h += QStringLiteral("<h3>Per node, whole run</h3>\n") +
         img(renderWidget(bars, QSize(960, bars.sizeHint().height())), QStringLiteral("per-node statistics"));
    StalenessHistogram hist;
    hist.setRun(&r);
    if (!hist.counts().empty()) {
      h += img(renderWidget(hist, QSize(960, 240)), QStringLiteral("staleness histogram"));
    }
  }
  // Decisions by kind (there may be thousands), then the event timeline.
  std::map<QString, int> kinds;
  for (const Decision& d : r.decisions) ++kinds[d.decision.section(QLatin1Char(' '), 0, 0)];
  if (!kinds.empty()) {
    QStringList parts;
    for (const auto& [k, n] : kinds) parts << QStringLiteral("%1 ×%2").arg(esc(k)).arg(n);
    h += QStringLiteral("<p>Policy decisions: %1.</p>\n").arg(parts.join(QStringLiteral(", ")));
  }
  h += QStringLiteral("<h3>Faults and events</h3>\n");
  std::vector<const Event*> events;
  for (const Event& e : r.events) {
    if (!routineEvent(e)) events.push_back(&e);
  }
  std::stable_sort(events.begin(), events.end(), [](const Event* a, const Event* b) { return a->t < b->t; });
  if (events.empty()) {
    h += QStringLiteral("<p>No faults or control events.</p>\n");
  } else {
    h += table.arg(QStringLiteral("events")) +
         QStringLiteral("<tr><th>t (s)</th><th class=\"l\">kind</th><th class=\"l\">node</th><th class=\"l\">detail</th></tr>\n");
    const std::size_t shown = std::min<std::size_t>(events.size(), 500);
    for (std::size_t k = 0; k < shown; ++k) {
      const Event& e = *events[k];
      h += QStringLiteral("<tr><td>%1</td><td class=\"l\">%2</td><td class=\"l\">%3</td><td class=\"l\">%4</td></tr>\n")
               .arg(e.t, 0, 'f', 3)
               .arg(esc(e.kindName()), esc(e.node), esc(e.detail));
    }
    h += QStringLiteral("</table>\n");
    if (shown < events.size()) h += QStringLiteral("<p>… and %1 more events.</p>\n").arg(events.size() - shown);
  }
  return h;
}

}  // namespace

int summaryColumnCount(const std::vector<RunFigures>& figs) {
  return static_cast<int>(summaryHeader(sharedColumns(figs)).size());
}

QString buildReportHtml(const std::vector<RunData>& runs, const ReportPage& page, const SweepTable& sweep,
                        const SweepAxes& sweepAxes, const QString& groupKey, const ImageSink& image) {
  const std::vector<RunFigures> figs = runFigures(runs);
  const std::vector<RunGroup> groups = groupRuns(runs, groupKey);
  ReportImages img(image, page.imageWidth);
  QString h = reportHead(runs);
  h += targetSection(runs, figs, groupKey, page.compact, img);
  h += summaryTable(figs);
  h += groupTable(figs, groupKey, groups);
  h += heterogeneitySection(runs, figs, groupKey);
  h += activitySection(runs);
  h += faultsSection(runs);
  if (!sweepAxes.empty()) {
    h += sweepSection(sweep, sweepAxes, tableStart(QStringLiteral("%1")),
                      [&img](const QImage& im, const QString& alt, int width) { return img(im, alt, width); },
                      img.width());
  }
  h += convergenceSection(runs, figs, groupKey, page.compact ? 2 : 1, img);
  h += specSection(runs);
  if (page.compact) {
    h += runGrid(runs, img);
  } else {
    for (const RunData& r : runs) h += runSection(r, img);
  }
  h += QStringLiteral("</body></html>\n");
  return h;
}

}  // namespace dasp::ui
