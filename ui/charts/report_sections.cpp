// SPDX-License-Identifier: MIT
// The report's sections added for a paper (issue 17): time to target first, the columns
// all runs share stated once, the heterogeneity cost, decisions and faults per run, the
// spec once with each run's differences, and the PDF's compact per-run grid.
#include "ui/charts/report_parts.h"

#include "core/results/mean_std.h"
#include "ui/charts/chart_export.h"
#include "ui/charts/node_lanes.h"
#include "ui/charts/run_groups.h"
#include "ui/charts/staleness_histogram.h"
#include "ui/charts/sweep_heatmap.h"
#include "ui/charts/time_to_target_bars.h"

#include <QStringList>

#include <algorithm>
#include <map>
#include <set>

namespace dasp::ui {

namespace {

constexpr int kMaxFaultsListed = 4;  // per run in the activity table; the count says the rest

// "a ×3, b ×1" of counts.
QString counts(const std::map<QString, int>& n) {
  QStringList parts;
  for (const auto& [k, c] : n) parts << QStringLiteral("%1 ×%2").arg(esc(k)).arg(c);
  return parts.isEmpty() ? QStringLiteral("–") : parts.join(QStringLiteral(", "));
}

}  // namespace

QString pm(const std::vector<double>& v, int decimals) {
  if (v.empty()) return QStringLiteral("–");
  const MeanStd s = meanStd(v);
  if (s.n == 1) return QString::number(s.mean, 'f', decimals);  // one value: no spread to show
  return QStringLiteral("%1 ± %2").arg(s.mean, 0, 'f', decimals).arg(s.sd, 0, 'f', decimals);
}

QString targetSection(const std::vector<RunData>& runs, const std::vector<RunFigures>& figs, const QString& groupKey,
                      bool compact, ReportImages& img) {
  TimeToTargetBars bars;
  bars.setBars(timeToTargetBars(runs, figs, groupLabels(runs, groupKey)));
  if (bars.bars().target.isEmpty()) return {};
  QString h = QStringLiteral("<h2>Time to target</h2>\n");
  // The PDF's (compact) chart leaves room for the summary table on the first page.
  const QSize size = compact ? QSize(800, 340) : QSize(960, 420);
  const int width = compact ? std::min(img.width(), 640) : img.width();
  h += QStringLiteral("<p>%1</p>\n").arg(img(renderWidget(bars, size), QStringLiteral("time to target per ") + groupKey, width));
  h += QStringLiteral("<p>Bars: the mean over the runs that reached the target, error bars ± one sample std, dots the "
                      "runs; under each bar how many runs reached the target, diverged (✕) or never reached it. The "
                      "dashed line is the homogeneous-equivalent reference where the runs include one.</p>\n");
  return h;
}

SharedColumns sharedColumns(const std::vector<RunFigures>& figs) {
  SharedColumns s;
  if (figs.empty()) return s;
  const RunFigures& a = figs.front();
  for (const RunFigures& f : figs) {
    s.name = s.name || f.name != a.name;
    s.engine = s.engine || f.engine != a.engine;
    s.shards = s.shards || f.shards != a.shards;
    s.target = s.target || f.target != a.target;
    s.lrConvention = s.lrConvention || f.lrConvention != a.lrConvention;
  }
  QStringList shared;
  if (!s.name) shared << QStringLiteral("experiment %1").arg(esc(a.name));
  if (!s.engine) shared << QStringLiteral("engine %1").arg(esc(a.engine));
  if (!s.shards) shared << QStringLiteral("%1 server shard%2").arg(a.shards).arg(a.shards == 1 ? "" : "s");
  if (!s.target) shared << QStringLiteral("target accuracy %1").arg(fig(a.target, 3));
  if (!s.lrConvention && !a.lrConvention.isEmpty()) shared << QStringLiteral("lr convention %1").arg(esc(a.lrConvention));
  if (!shared.isEmpty()) s.line = QStringLiteral("<p>All runs: %1.</p>\n").arg(shared.join(QStringLiteral(", ")));
  return s;
}

QString heterogeneitySection(const std::vector<RunData>& runs, const std::vector<RunFigures>& figs,
                             const QString& groupKey) {
  QString h = QStringLiteral("<h2>Heterogeneity cost</h2>\n");
  const bool anyReference = std::any_of(runs.begin(), runs.end(), [](const RunData& r) { return !r.referenceOf.isEmpty(); });
  if (!anyReference) {
    return h + QStringLiteral("<p>No homogeneous-equivalent reference among these runs (<code>dasp run SPEC "
                              "--reference</code> runs one), so no heterogeneity cost.</p>\n");
  }
  h += tableStart(QStringLiteral("heterogeneity")) +
       QStringLiteral("<tr><th class=\"l\">%1</th><th>reached target</th><th>time to target (s)</th>"
                      "<th>reference (s)</th><th>heterogeneity cost</th></tr>\n").arg(esc(groupKey));
  for (const RunGroup& g : groupRuns(runs, groupKey)) {
    std::vector<double> ttt, reference, cost;
    std::size_t costed = 0;
    for (std::size_t i : g.members) {
      if (!runs[i].referenceOf.isEmpty()) continue;  // the reference is the column
      ++costed;
      const RunFigures& f = figs[i];
      if (f.timeToTarget) ttt.push_back(*f.timeToTarget);
      if (f.timeToTarget && f.heterogeneityCost && *f.heterogeneityCost > 0) {
        cost.push_back(*f.heterogeneityCost);
        reference.push_back(*f.timeToTarget / *f.heterogeneityCost);
      }
    }
    if (costed == 0) continue;
    h += QStringLiteral("<tr><td class=\"l\">%1</td><td>%6/%2</td><td>%3</td><td>%4</td><td>%5</td></tr>\n")
             .arg(esc(g.label))
             .arg(costed)
             .arg(pm(ttt, 2), reference.empty() ? QStringLiteral("–") : fig(meanStd(reference).mean, 2), pm(cost, 2))
             .arg(ttt.size());
  }
  h += QStringLiteral("</table>\n<p>Heterogeneity cost = time to target ÷ the mean time of its experiment's "
                      "reference runs (same N, same total gradient rate, BSP); 1 means heterogeneity costs "
                      "nothing.</p>\n");
  return h;
}

QString activitySection(const std::vector<RunData>& runs) {
  QString h = QStringLiteral("<h2>Decisions and faults</h2>\n") + tableStart(QStringLiteral("activity"));
  h += QStringLiteral("<tr><th>run</th><th class=\"l\">strategy</th><th class=\"l\">policy decisions</th>"
                      "<th class=\"l\">faults</th><th class=\"l\">other events</th></tr>\n");
  for (const RunData& r : runs) {
    std::map<QString, int> decisions, events;
    for (const Decision& d : r.decisions) ++decisions[d.decision.section(QLatin1Char(' '), 0, 0)];
    QStringList faults;
    int faultCount = 0;
    for (const Event& e : r.events) {
      if (e.kind == v1::RunEvent::FAULT) {
        if (++faultCount <= kMaxFaultsListed) {
          faults << QStringLiteral("%1 s %2 %3").arg(e.t, 0, 'f', 1).arg(esc(e.subject()), esc(e.detail));
        }
      } else if (e.code != v1::RunEvent::NODE_UP) {
        ++events[e.kindName()];
      }
    }
    if (faultCount > kMaxFaultsListed) faults << QStringLiteral("… %1 in all").arg(faultCount);
    h += QStringLiteral("<tr><td>%1</td><td class=\"l\">%2</td><td class=\"l\">%3</td><td class=\"l\">%4</td>"
                        "<td class=\"l\">%5</td></tr>\n")
             .arg(r.runId)
             .arg(esc(r.displayStrategy()), counts(decisions),
                  faults.isEmpty() ? QStringLiteral("none") : faults.join(QStringLiteral("; ")), counts(events));
  }
  return h + QStringLiteral("</table>\n");
}

QString specSection(const std::vector<RunData>& runs) {
  const RunData* first = nullptr;
  std::optional<std::map<QString, QString>> base;
  for (const RunData& r : runs) {
    if ((base = flatSpec(r.specJson))) {
      first = &r;
      break;
    }
  }
  if (first == nullptr) return {};
  const SweepTable sweep = SweepTable::fromRuns(runs);
  const QStringList varying = sweep.varyingPaths();
  QString h = QStringLiteral("<h2>Spec</h2>\n<p>Run #%1's resolved spec; the fields in which the runs differ are in "
                             "the table after it.</p>\n")
                  .arg(first->runId);
  // Four path = value pairs to a row, in a smaller type: a spec of ~90 fields takes a
  // third of a landscape page.
  constexpr int kPairs = 4;
  std::vector<std::pair<QString, QString>> shown;
  QString description;
  for (const auto& [path, value] : *base) {
    if (path == QLatin1String("description")) description = value;  // prose: a paragraph, not a cell
    else if (!varying.contains(path) && path != QLatin1String("seed")) shown.emplace_back(path, value);
  }
  if (!description.isEmpty()) h += QStringLiteral("<p><i>%1</i></p>\n").arg(esc(description));
  // Paths and file names may break after a dot, slash or underscore (the PDF breaks lines
  // between words only, and these are one long word).
  auto breakable = [](const QString& text) {
    QString out = esc(text);
    for (const QChar c : {QLatin1Char('.'), QLatin1Char('/'), QLatin1Char('_'), QLatin1Char(',')}) {
      out.replace(c, QString(c) + QChar(0x200B));
    }
    return out;
  };
  h += QStringLiteral("<table class=\"spec\" border=\"1\" cellspacing=\"0\" cellpadding=\"2\" style=\"font-size:6.5pt\">\n");
  for (std::size_t i = 0; i < shown.size(); i += kPairs) {
    h += QStringLiteral("<tr>");
    for (std::size_t k = i; k < i + kPairs; ++k) {
      h += k < shown.size() ? QStringLiteral("<td class=\"l\">%1</td><td class=\"l\">%2</td>")
                                  .arg(breakable(shown[k].first), breakable(shown[k].second))
                            : QStringLiteral("<td></td><td></td>");
    }
    h += QStringLiteral("</tr>\n");
  }
  h += QStringLiteral("</table>\n<h3>Each run's differences</h3>\n") + tableStart(QStringLiteral("spec-diff"));
  h += QStringLiteral("<tr><th>run</th><th>seed</th>");
  for (const QString& p : varying) h += QStringLiteral("<th class=\"l\">%1</th>").arg(esc(p));
  h += QStringLiteral("</tr>\n");
  std::map<std::int64_t, const SweepRun*> byId;
  for (const SweepRun& s : sweep.runs) byId.emplace(s.runId, &s);
  for (const RunData& r : runs) {
    h += QStringLiteral("<tr><td>%1</td><td>%2</td>").arg(r.runId).arg(r.seed);
    const auto row = byId.find(r.runId);
    for (const QString& p : varying) {
      const QString v = row == byId.end() ? QStringLiteral("no spec") : row->second->values.at(p);
      h += QStringLiteral("<td class=\"l\">%1</td>").arg(v.isEmpty() ? QStringLiteral("unset") : esc(v));
    }
    h += QStringLiteral("</tr>\n");
  }
  return h + QStringLiteral("</table>\n");
}

QString runGrid(const std::vector<RunData>& runs, ReportImages& img) {
  constexpr int kPerRow = 2;
  const int cellWidth = img.width() / kPerRow - 12;
  QString h = QStringLiteral("<h2>Runs</h2>\n<p>Node lanes over the whole run and the staleness of the applied "
                             "gradients; the HTML report and the workbench have every run's detail.</p>\n");
  h += QStringLiteral("<table class=\"runs\" border=\"0\" cellspacing=\"0\" cellpadding=\"4\">\n");
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const RunData& r = runs[i];
    if (i % kPerRow == 0) h += QStringLiteral("<tr>");
    const double end = r.endT > 0 && std::isfinite(r.endT) ? r.endT : 1.0;
    h += QStringLiteral("<td class=\"l\" valign=\"top\"><b>#%1 %2</b>, seed %3, %4, %5 worker(s), %6 s%7<br>")
             .arg(r.runId)
             .arg(esc(r.displayStrategy()))
             .arg(r.seed)
             .arg(esc(r.status))
             .arg(r.nodes.size())
             .arg(end, 0, 'f', 1)
             .arg(r.divergence.isEmpty() ? QString() : QStringLiteral(" — diverged: ") + esc(r.divergence));
    if (!r.nodes.empty()) {
      NodeLanes lanes;
      lanes.setRun(&r);
      lanes.setWindow(0, end);
      h += img(renderWidget(lanes, QSize(640, lanes.sizeHint().height())), QStringLiteral("node lanes"), cellWidth);
    }
    StalenessHistogram hist;
    hist.setRun(&r);
    if (!hist.counts().empty()) {
      h += QStringLiteral("<br>") +
           img(renderWidget(hist, QSize(640, 170)), QStringLiteral("staleness histogram"), cellWidth);
    }
    h += QStringLiteral("</td>");
    if (i % kPerRow == kPerRow - 1 || i + 1 == runs.size()) h += QStringLiteral("</tr>\n");
  }
  return h + QStringLiteral("</table>\n");
}

}  // namespace dasp::ui
