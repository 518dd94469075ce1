// SPDX-License-Identifier: MIT
#include "ui/charts/sweep_heatmap.h"

#include "core/results/mean_std.h"

#include <QFont>
#include <QFontMetrics>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QJsonValue>
#include <QPainter>
#include <QPen>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <set>
#include <utility>

namespace dasp::ui {

namespace {

const QString kStrategyPath = QStringLiteral("strategy.name");

// ---- flattening ------------------------------------------------------------------------

// Numbers in their shortest exact form, so 0.1 stays "0.1" and 16 is "16", as typed in
// --grid.
QString numberText(double v) {
  if (!std::isfinite(v)) return QString::number(v);
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return QString::fromLatin1(buf, static_cast<int>(r.ptr - buf));
}

QString scalarText(const QJsonValue& v) {
  switch (v.type()) {
    case QJsonValue::Double: return numberText(v.toDouble());
    case QJsonValue::String: return v.toString();
    case QJsonValue::Bool: return v.toBool() ? QStringLiteral("true") : QStringLiteral("false");
    case QJsonValue::Null: return QStringLiteral("null");
    case QJsonValue::Array: return QString::fromUtf8(QJsonDocument(v.toArray()).toJson(QJsonDocument::Compact));
    case QJsonValue::Object: return QString::fromUtf8(QJsonDocument(v.toObject()).toJson(QJsonDocument::Compact));
    case QJsonValue::Undefined: break;
  }
  return QString();
}

// Objects become dotted paths; an array is one value (its elements comma-joined, as
// --grid and --set write lists), since its elements are not separately sweepable.
void flatten(const QJsonValue& v, const QString& path, std::map<QString, QString>& out) {
  if (v.isObject()) {
    const QJsonObject o = v.toObject();
    for (auto it = o.begin(); it != o.end(); ++it) {
      flatten(it.value(), path.isEmpty() ? it.key() : path + QLatin1Char('.') + it.key(), out);
    }
    return;
  }
  if (path.isEmpty()) return;
  if (v.isArray()) {
    QStringList parts;
    for (const QJsonValue& e : v.toArray()) parts << scalarText(e);
    out[path] = parts.join(QLatin1Char(','));
    return;
  }
  out[path] = scalarText(v);
}

bool ignored(const QString& path) {
  for (const QString& p : SweepTable::ignoredPaths()) {
    if (path == p || path.startsWith(p + QLatin1Char('.'))) return true;
  }
  return false;
}

std::optional<double> asNumber(const QString& s) {
  bool ok = false;
  const double v = s.toDouble(&ok);
  if (!ok || !std::isfinite(v)) return std::nullopt;
  return v;
}

QString display(const QString& value) { return value.isEmpty() ? QStringLiteral("–") : value; }

// A cell's mean and std over the seeds that reached the target: none without values, no
// std from one value.
std::pair<std::optional<double>, std::optional<double>> cellMeanStd(const std::vector<double>& v) {
  const MeanStd s = meanStd(v);
  if (s.n == 0) return {std::nullopt, std::nullopt};
  return {s.mean, s.n > 1 ? std::optional<double>(s.sd) : std::nullopt};
}

QStringList sortedUnique(QStringList list) {
  list.sort();
  list.removeDuplicates();
  return list;
}

// The position of `value` in the axis's value order (values not on the axis last).
int rankOf(const SweepAxis* axis, const QString& value) {
  if (axis == nullptr) return 0;
  const auto it = std::find(axis->values.begin(), axis->values.end(), value);
  return static_cast<int>(it - axis->values.begin());
}

QString valueOf(const SweepRun& run, const QString& path) {
  const auto it = run.values.find(path);
  return it == run.values.end() ? QString() : it->second;
}

}  // namespace

// ---- the table -------------------------------------------------------------------------

const QStringList& SweepTable::ignoredPaths() {
  static const QStringList paths{QStringLiteral("seed"),        QStringLiteral("seeds"), QStringLiteral("name"),
                                 QStringLiteral("description"), QStringLiteral("suite"), QStringLiteral("sim.compute_ms")};
  return paths;
}

const SweepAxis* SweepTable::axis(const QString& path) const {
  for (const SweepAxis& a : axes) {
    if (a.path == path) return &a;
  }
  return nullptr;
}

QStringList SweepTable::varyingPaths() const {
  QStringList out;
  for (const SweepAxis& a : axes) out << a.path;
  return out;
}

std::optional<std::map<QString, QString>> flatSpec(const QString& specJson) {
  const QJsonDocument doc = QJsonDocument::fromJson(specJson.toUtf8());
  if (!doc.isObject()) return std::nullopt;
  std::map<QString, QString> f;
  flatten(doc.object(), QString(), f);
  return f;
}

SweepTable SweepTable::fromRuns(const std::vector<RunData>& input) {
  SweepTable table;
  // Each readable spec, flattened. A run without one cannot be placed on any axis (and
  // would make every field look swept), so it is left out.
  std::vector<std::map<QString, QString>> flat;
  std::vector<const RunData*> kept;
  for (const RunData& r : input) {
    std::optional<std::map<QString, QString>> spec = flatSpec(r.specJson);
    if (!spec) continue;
    std::map<QString, QString>& f = *spec;
    if (f.find(kStrategyPath) == f.end() && !r.strategy.isEmpty()) f[kStrategyPath] = r.strategy;
    flat.push_back(std::move(f));
    kept.push_back(&r);
  }

  // The varying paths: any value differs between two runs ("" for a missing field).
  std::set<QString> paths;
  for (const auto& f : flat) {
    for (const auto& kv : f) {
      if (!ignored(kv.first)) paths.insert(kv.first);
    }
  }
  for (const QString& path : paths) {
    std::set<QString> values;
    for (const auto& f : flat) {
      const auto it = f.find(path);
      values.insert(it == f.end() ? QString() : it->second);
    }
    if (values.size() < 2) continue;
    SweepAxis a;
    a.path = path;
    a.values.assign(values.begin(), values.end());
    a.numeric = std::all_of(a.values.begin(), a.values.end(), [](const QString& v) { return v.isEmpty() || asNumber(v); });
    if (a.numeric) {
      // Absent first, then by value: "4, 16, 64", not the text order "16, 4, 64".
      std::stable_sort(a.values.begin(), a.values.end(), [](const QString& l, const QString& r) {
        if (l.isEmpty() || r.isEmpty()) return l.isEmpty() && !r.isEmpty();
        return *asNumber(l) < *asNumber(r);
      });
    }
    table.axes.push_back(std::move(a));
  }

  for (std::size_t i = 0; i < kept.size(); ++i) {
    const RunData& r = *kept[i];
    SweepRun run;
    run.runId = r.runId;
    run.engine = r.engine;
    const auto strategy = flat[i].find(kStrategyPath);
    run.strategy = strategy == flat[i].end() ? r.strategy : strategy->second;
    run.label = r.displayStrategy().isEmpty() ? run.strategy : r.displayStrategy();
    for (const SweepAxis& a : table.axes) {
      const auto it = flat[i].find(a.path);
      run.values[a.path] = it == flat[i].end() ? QString() : it->second;
    }
    const auto target = flat[i].find(QStringLiteral("stop.target_accuracy"));
    if (target != flat[i].end()) {
      const auto t = asNumber(target->second);
      if (t && *t > 0) run.target = t;
    }
    const auto summary = r.summary.find(QStringLiteral("time_to_target_s"));
    if (summary != r.summary.end() && std::isfinite(summary->second)) {
      run.timeToTarget = summary->second;
    } else if (run.target) {
      run.timeToTarget = r.timeToTarget(*run.target);
    }
    table.runs.push_back(std::move(run));
  }

  // A path that never varies among the runs of one strategy is that strategy's own knob
  // (a suite entry's parameters): it says which strategy ran, not where in the grid.
  const bool strategyVaries = table.axis(kStrategyPath) != nullptr;
  for (SweepAxis& a : table.axes) {
    if (a.path == kStrategyPath) continue;
    if (strategyVaries) {
      std::map<QString, std::set<QString>> perStrategy;
      for (const SweepRun& run : table.runs) perStrategy[run.strategy].insert(valueOf(run, a.path));
      a.strategyKnob = std::all_of(perStrategy.begin(), perStrategy.end(), [](const auto& kv) { return kv.second.size() == 1; });
    }
    if (!a.strategyKnob) table.sweepPaths << a.path;
  }

  // Rows: by strategy, then by the swept paths' value order.
  const SweepAxis* strategyAxis = table.axis(kStrategyPath);
  std::map<std::vector<int>, std::vector<std::size_t>> groups;
  for (std::size_t i = 0; i < table.runs.size(); ++i) {
    const SweepRun& run = table.runs[i];
    std::vector<int> key{rankOf(strategyAxis, run.strategy)};
    for (const QString& p : table.sweepPaths) key.push_back(rankOf(table.axis(p), valueOf(run, p)));
    groups[key].push_back(i);
  }
  for (const auto& [key, members] : groups) {
    const SweepRun& first = table.runs[members.front()];
    SweepRow row;
    row.strategy = first.label;
    for (const QString& p : table.sweepPaths) row.values.push_back(valueOf(first, p));
    std::vector<double> times;
    QStringList engines;
    for (std::size_t i : members) {
      const SweepRun& run = table.runs[i];
      ++row.runs;
      if (run.timeToTarget) times.push_back(*run.timeToTarget);
      engines << run.engine;
    }
    row.reached = static_cast<int>(times.size());
    std::tie(row.mean, row.stddev) = cellMeanStd(times);
    row.engines = sortedUnique(engines);
    table.rows.push_back(std::move(row));
  }
  return table;
}

// ---- choosing the axes -----------------------------------------------------------------

Result<SweepAxes> chooseAxes(const SweepTable& table, const QString& requested) {
  SweepAxes axes;
  const QString trimmed = requested.trimmed();
  if (trimmed.isEmpty()) {
    if (!table.isSweep()) return axes;
    // Numeric paths read as a grid (sorted, evenly spaced cells); more values across,
    // since a page is wider than it is tall.
    QStringList candidates = table.sweepPaths;
    auto numeric = [&](const QString& p) { return table.axis(p)->numeric; };
    auto count = [&](const QString& p) { return table.axis(p)->values.size(); };
    std::stable_sort(candidates.begin(), candidates.end(), [&](const QString& l, const QString& r) {
      if (numeric(l) != numeric(r)) return numeric(l);
      return count(l) > count(r);
    });
    axes.x = candidates.at(0);
    if (candidates.size() > 1) {
      axes.y = candidates.at(1);
      if (count(axes.y) > count(axes.x)) std::swap(axes.x, axes.y);
    }
  } else {
    const QStringList varying = table.varyingPaths();
    const QString listed = varying.isEmpty() ? QStringLiteral("no spec field varies between these runs")
                                             : QStringLiteral("varying: ") + varying.join(QStringLiteral(", "));
    auto bad = [&](const QString& why) {
      return Status::error(QStringLiteral("sweep axes '%1': %2 (%3)").arg(trimmed, why, listed).toStdString());
    };
    QStringList parts = trimmed.split(QLatin1Char(','));
    for (QString& p : parts) p = p.trimmed();
    if (parts.size() > 2) return bad(QStringLiteral("expected X,Y: two spec paths, or one for a single row"));
    for (const QString& p : parts) {
      if (p.isEmpty()) return bad(QStringLiteral("an empty path"));
      if (table.axis(p) != nullptr) continue;
      if (ignored(p)) {
        return bad(QStringLiteral("'%1' is never a sweep axis (%2 are ignored)")
                       .arg(p, SweepTable::ignoredPaths().join(QStringLiteral(", "))));
      }
      return bad(QStringLiteral("'%1' is not a spec path that varies between these runs").arg(p));
    }
    if (parts.size() == 2 && parts[0] == parts[1]) return bad(QStringLiteral("the same path twice"));
    axes.x = parts.at(0);
    axes.y = parts.value(1);
  }
  // What is not an axis splits the heatmaps, so that no cell averages over a swept field.
  if (table.axis(kStrategyPath) != nullptr && axes.x != kStrategyPath && axes.y != kStrategyPath) axes.facets << kStrategyPath;
  for (const QString& p : table.sweepPaths) {
    if (p != axes.x && p != axes.y) axes.facets << p;
  }
  return axes;
}

// ---- heatmap content -------------------------------------------------------------------

std::vector<SweepHeatmap> sweepHeatmaps(const SweepTable& table, const SweepAxes& axes) {
  std::vector<SweepHeatmap> maps;
  if (axes.empty()) return maps;
  const SweepAxis* xAxis = table.axis(axes.x);
  const SweepAxis* yAxis = axes.y.isEmpty() ? nullptr : table.axis(axes.y);
  if (xAxis == nullptr || (!axes.y.isEmpty() && yAxis == nullptr)) return maps;

  std::map<std::vector<int>, std::vector<std::size_t>> facets;
  for (std::size_t i = 0; i < table.runs.size(); ++i) {
    std::vector<int> key;
    for (const QString& f : axes.facets) key.push_back(rankOf(table.axis(f), valueOf(table.runs[i], f)));
    facets[key].push_back(i);
  }
  for (const auto& [key, members] : facets) {
    SweepHeatmap map;
    map.xPath = axes.x;
    map.yPath = axes.y;
    const SweepRun& first = table.runs[members.front()];
    QStringList facet;
    for (const QString& f : axes.facets) {
      facet << (f == kStrategyPath ? QStringLiteral("strategy ") + display(first.label)
                                   : f + QLatin1Char('=') + display(valueOf(first, f)));
    }
    map.facet = facet.join(QStringLiteral(", "));

    // The values present in this facet, in axis order.
    std::set<int> xs, ys;
    for (std::size_t i : members) {
      xs.insert(rankOf(xAxis, valueOf(table.runs[i], axes.x)));
      if (yAxis != nullptr) ys.insert(rankOf(yAxis, valueOf(table.runs[i], axes.y)));
    }
    for (int x : xs) map.xValues.push_back(xAxis->values[static_cast<std::size_t>(x)]);
    if (yAxis != nullptr) {
      for (int y : ys) map.yValues.push_back(yAxis->values[static_cast<std::size_t>(y)]);
    } else {
      map.yValues.emplace_back();
    }

    std::vector<std::vector<double>> times(map.xValues.size() * map.yValues.size());
    map.cells.resize(times.size());
    QStringList engines;
    std::set<double> targets;
    for (std::size_t i : members) {
      const SweepRun& run = table.runs[i];
      const auto column = std::find(map.xValues.begin(), map.xValues.end(), valueOf(run, axes.x)) - map.xValues.begin();
      const auto row = yAxis == nullptr ? 0
                                        : std::find(map.yValues.begin(), map.yValues.end(), valueOf(run, axes.y)) -
                                              map.yValues.begin();
      const std::size_t c = static_cast<std::size_t>(row) * map.xValues.size() + static_cast<std::size_t>(column);
      ++map.cells[c].runs;
      if (run.timeToTarget) times[c].push_back(*run.timeToTarget);
      engines << run.engine;
      if (run.target) targets.insert(*run.target);
    }
    for (std::size_t c = 0; c < times.size(); ++c) {
      map.cells[c].reached = static_cast<int>(times[c].size());
      std::tie(map.cells[c].mean, map.cells[c].stddev) = cellMeanStd(times[c]);
    }
    map.engines = sortedUnique(engines);
    if (targets.empty()) {
      map.target = QStringLiteral("none");
    } else if (targets.size() == 1) {
      map.target = numberText(*targets.begin());
    } else {
      map.target = numberText(*targets.begin()) + QStringLiteral("–") + numberText(*targets.rbegin());
    }
    maps.push_back(std::move(map));
  }

  // One colour scale for the whole sweep: the same colour is the same time in every map.
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const SweepHeatmap& m : maps) {
    for (const SweepCell& c : m.cells) {
      if (!c.mean) continue;
      lo = std::min(lo, *c.mean);
      hi = std::max(hi, *c.mean);
    }
  }
  if (!std::isfinite(lo)) lo = hi = 0;
  for (SweepHeatmap& m : maps) {
    m.lo = lo;
    m.hi = hi;
  }
  return maps;
}

// ---- drawing ---------------------------------------------------------------------------

namespace {

constexpr int kTitleH = 50;     // two title lines
constexpr int kBottomH = 48;    // x tick labels and the x title
constexpr int kRightW = 120;    // the colour bar, its labels and the legend
constexpr int kYTitleW = 24;    // the rotated y title
constexpr int kMinBarH = 110;   // the colour bar, even for a single row
constexpr int kCellH = 44;
constexpr int kMaxCellH = 60;
constexpr int kMaxCellW = 160;  // wider images leave room at the right instead
constexpr int kLegendH = 64;    // "lower is better" and the not-reached swatch under the bar
constexpr int kCharW = 7;       // estimated width of a 12-px character: the layout must
                                // not depend on the fonts installed

const QColor kHatchLine(150, 150, 150);
const QColor kText(40, 40, 40);

struct Layout {
  QRect grid;   // the cells
  QRect bar;    // the colour bar
  int cw = 0, ch = 0;
  int yLabelW = 0;
};

int yLabelWidth(const SweepHeatmap& map) {
  if (map.yPath.isEmpty()) return 0;
  int chars = 1;
  for (const QString& v : map.yValues) chars = std::max(chars, static_cast<int>(display(v).size()));
  return std::clamp(chars * kCharW + 14, 36, 200);
}

Layout layoutFor(const SweepHeatmap& map, const QSize& size) {
  Layout l;
  l.yLabelW = yLabelWidth(map);
  const int left = 8 + (map.yPath.isEmpty() ? 0 : kYTitleW) + l.yLabelW;
  const int nx = std::max(1, map.columns());
  const int ny = std::max(1, map.rows());
  l.cw = std::clamp((size.width() - left - kRightW) / nx, 8, kMaxCellW);
  // The rows share what the title and the bottom labels leave, up to a readable cap (a
  // single row need not be as tall as the colour bar).
  l.ch = std::clamp((size.height() - kTitleH - kBottomH - 8) / ny, 8, kMaxCellH);
  l.grid = QRect(left, kTitleH, l.cw * nx, l.ch * ny);
  const int barH = std::clamp(std::max(l.grid.height(), kMinBarH), 20, std::max(20, size.height() - kTitleH - kLegendH - 8));
  l.bar = QRect(l.grid.right() + 18, kTitleH, 16, barH);
  return l;
}

QString titleText(const SweepHeatmap& map) {
  QString title = QStringLiteral("Time to target accuracy %1").arg(map.target);
  if (!map.facet.isEmpty()) title += QStringLiteral(" — ") + map.facet;
  return title;
}

QString subtitleText(const SweepHeatmap& map) {
  int runs = 0;
  for (const SweepCell& c : map.cells) runs += c.runs;
  return QStringLiteral("engine %1 · %2 run(s) · mean over the runs that reached the target")
      .arg(map.engines.isEmpty() ? QStringLiteral("–") : map.engines.join(QStringLiteral(", ")))
      .arg(runs);
}

QString seconds(double v) {
  const double a = std::fabs(v);
  return QString::number(v, 'f', a >= 100 ? 0 : a >= 10 ? 1 : 2) + QStringLiteral(" s");
}

double scaled(const SweepHeatmap& map, double v) { return map.hi > map.lo ? (v - map.lo) / (map.hi - map.lo) : 0.5; }

QColor textOn(const QColor& fill) {
  const double luma = 0.2126 * fill.red() + 0.7152 * fill.green() + 0.0722 * fill.blue();
  return luma > 140 ? QColor(Qt::black) : QColor(Qt::white);
}

QFont pixelFont(int px, bool bold = false) {
  QFont f;
  f.setPixelSize(px);
  f.setBold(bold);
  return f;
}

void hatch(QPainter& p, const QRect& r) {
  p.save();
  p.setClipRect(r);
  p.setRenderHint(QPainter::Antialiasing, false);
  p.fillRect(r, sweepNotReachedColor());
  p.setPen(QPen(kHatchLine, 1));
  for (int x = r.left() - r.height(); x < r.right(); x += 8) p.drawLine(x, r.bottom(), x + r.height(), r.top());
  p.restore();
}

}  // namespace

QColor viridis(double t) {
  // Matplotlib's viridis at 11 evenly spaced points; linear interpolation between them
  // stays within its perceptual error.
  static constexpr std::array<std::array<int, 3>, 11> kStops{{{0x44, 0x01, 0x54},
                                                              {0x48, 0x24, 0x75},
                                                              {0x41, 0x44, 0x87},
                                                              {0x35, 0x5f, 0x8d},
                                                              {0x2a, 0x78, 0x8e},
                                                              {0x21, 0x91, 0x8c},
                                                              {0x22, 0xa8, 0x84},
                                                              {0x44, 0xbf, 0x70},
                                                              {0x7a, 0xd1, 0x51},
                                                              {0xbd, 0xdf, 0x26},
                                                              {0xfd, 0xe7, 0x25}}};
  if (!std::isfinite(t)) t = 0;
  const double x = std::clamp(t, 0.0, 1.0) * static_cast<double>(kStops.size() - 1);
  const auto i = std::min(static_cast<std::size_t>(x), kStops.size() - 2);
  const double f = x - static_cast<double>(i);
  auto mix = [&](std::size_t c) {
    return static_cast<int>(std::lround(kStops[i][c] + f * (kStops[i + 1][c] - kStops[i][c])));
  };
  return QColor(mix(0), mix(1), mix(2));
}

QColor sweepNotReachedColor() { return QColor(205, 205, 205); }

QSize sweepHeatmapSize(const SweepHeatmap& map) {
  const int left = 8 + (map.yPath.isEmpty() ? 0 : kYTitleW) + yLabelWidth(map);
  const int nx = std::max(1, map.columns());
  const int ny = std::max(1, map.rows());
  // Wide enough for "123 s" and the x values; narrower cells only when many columns.
  int longest = 1;
  for (const QString& v : map.xValues) longest = std::max(longest, static_cast<int>(display(v).size()));
  const int wanted = std::clamp(longest * kCharW + 16, 84, 140);
  const int fit = (960 - left - kRightW) / nx;
  const int cw = std::max(std::min(wanted, fit), 56);
  const int gridH = ny * kCellH;
  // Room for the title lines (15-px bold and 12-px characters), within the page width.
  const int titleW = std::max(static_cast<int>(titleText(map).size()) * 9, static_cast<int>(subtitleText(map).size()) * 7) + 16;
  const int width = std::max(left + nx * cw + kRightW, std::min(titleW, 960));
  const int height = kTitleH + std::max(gridH + kBottomH, std::max(gridH, kMinBarH) + kLegendH) + 8;
  return QSize(width, height);
}

QRect sweepCellRect(const SweepHeatmap& map, const QSize& size, int column, int row) {
  const Layout l = layoutFor(map, size);
  return QRect(l.grid.left() + column * l.cw, l.grid.top() + row * l.ch, l.cw, l.ch);
}

QColor sweepCellColor(const SweepHeatmap& map, int column, int row) {
  const SweepCell& c = map.cell(column, row);
  if (c.runs == 0) return QColor(Qt::white);
  if (!c.mean) return sweepNotReachedColor();
  return viridis(scaled(map, *c.mean));
}

QImage renderSweepHeatmap(const SweepHeatmap& map, QSize size) {
  if (size.isEmpty()) size = sweepHeatmapSize(map);
  QImage image(size, QImage::Format_RGB32);
  image.fill(Qt::white);
  QPainter p(&image);
  p.setRenderHint(QPainter::TextAntialiasing, true);
  const Layout l = layoutFor(map, size);

  // Title: the facet and the target, then what the cells are and which engine ran them.
  p.setPen(kText);
  // Elided rather than clipped when an explicit size is too narrow.
  const int textW = size.width() - 16;
  p.setFont(pixelFont(15, true));
  p.drawText(QRect(8, 4, textW, 22), Qt::AlignLeft | Qt::AlignVCenter,
             QFontMetrics(p.font()).elidedText(titleText(map), Qt::ElideRight, textW));
  p.setFont(pixelFont(12));
  p.setPen(QColor(90, 90, 90));
  p.drawText(QRect(8, 26, textW, 18), Qt::AlignLeft | Qt::AlignVCenter,
             QFontMetrics(p.font()).elidedText(subtitleText(map), Qt::ElideRight, textW));

  // Cells.
  for (int row = 0; row < map.rows(); ++row) {
    for (int column = 0; column < map.columns(); ++column) {
      const SweepCell& c = map.cell(column, row);
      const QRect r = sweepCellRect(map, size, column, row).adjusted(1, 1, -1, -1);
      const QColor fill = sweepCellColor(map, column, row);
      QStringList lines;
      QColor text = textOn(fill);
      if (c.runs == 0) {
        p.setPen(QColor(220, 220, 220));
        p.drawRect(r.adjusted(0, 0, -1, -1));
        text = QColor(150, 150, 150);
        lines << QStringLiteral("no runs");
      } else if (!c.mean) {
        hatch(p, r);
        text = kText;
        lines << QStringLiteral("not reached");
      } else {
        p.fillRect(r, fill);
        lines << seconds(*c.mean);
        if (c.reached < c.runs) lines << QStringLiteral("%1/%2").arg(c.reached).arg(c.runs);
      }
      p.setPen(text);
      if (lines.size() == 1) {
        p.setFont(pixelFont(12, c.mean.has_value()));
        p.drawText(r, Qt::AlignCenter, lines.front());
      } else {
        const QRect top(r.left(), r.top(), r.width(), r.height() / 2 + 2);
        const QRect bottom(r.left(), r.top() + r.height() / 2, r.width(), r.height() - r.height() / 2);
        p.setFont(pixelFont(12, true));
        p.drawText(top, Qt::AlignHCenter | Qt::AlignBottom, lines[0]);
        p.setFont(pixelFont(11));
        p.drawText(bottom, Qt::AlignHCenter | Qt::AlignTop, lines[1]);
      }
    }
  }

  // Axes: tick labels at the cells, the paths as titles.
  p.setPen(kText);
  p.setFont(pixelFont(12));
  for (int column = 0; column < map.columns(); ++column) {
    const QRect cell = sweepCellRect(map, size, column, 0);
    p.drawText(QRect(cell.left(), l.grid.bottom() + 3, cell.width(), 18), Qt::AlignHCenter | Qt::AlignTop,
               QFontMetrics(p.font()).elidedText(display(map.xValues[static_cast<std::size_t>(column)]),
                                                 Qt::ElideMiddle, cell.width() - 4));
  }
  p.setFont(pixelFont(12, true));
  p.drawText(QRect(l.grid.left(), l.grid.bottom() + 22, l.grid.width(), 20), Qt::AlignHCenter | Qt::AlignTop,
             QFontMetrics(p.font()).elidedText(map.xPath, Qt::ElideMiddle, l.grid.width()));
  if (!map.yPath.isEmpty()) {
    p.setFont(pixelFont(12));
    for (int row = 0; row < map.rows(); ++row) {
      const QRect cell = sweepCellRect(map, size, 0, row);
      p.drawText(QRect(l.grid.left() - l.yLabelW, cell.top(), l.yLabelW - 6, cell.height()),
                 Qt::AlignRight | Qt::AlignVCenter,
                 QFontMetrics(p.font()).elidedText(display(map.yValues[static_cast<std::size_t>(row)]),
                                                   Qt::ElideMiddle, l.yLabelW - 6));
    }
    p.save();
    p.setFont(pixelFont(12, true));
    p.translate(8, l.grid.center().y());
    p.rotate(-90);
    p.drawText(QRect(-l.grid.height() / 2 - 200, 0, l.grid.height() + 400, kYTitleW - 4), Qt::AlignCenter, map.yPath);
    p.restore();
  }

  // Colour bar: low times at the bottom; labelled at both ends and the middle.
  bool anyReached = false, anyNotReached = false;
  for (const SweepCell& c : map.cells) {
    anyReached = anyReached || c.mean.has_value();
    anyNotReached = anyNotReached || (c.runs > 0 && !c.mean);
  }
  int legendY = l.bar.top();
  p.setFont(pixelFont(11));
  if (anyReached) {
    for (int y = 0; y < l.bar.height(); ++y) {
      const double t = l.bar.height() > 1 ? 1.0 - static_cast<double>(y) / (l.bar.height() - 1) : 0.5;
      p.setPen(viridis(t));
      p.drawLine(l.bar.left(), l.bar.top() + y, l.bar.right(), l.bar.top() + y);
    }
    p.setPen(kText);
    const QRect labels(l.bar.right() + 5, l.bar.top() - 7, size.width() - l.bar.right() - 7, l.bar.height() + 14);
    if (map.hi > map.lo) {
      p.drawText(labels, Qt::AlignLeft | Qt::AlignTop, seconds(map.hi));
      p.drawText(labels, Qt::AlignLeft | Qt::AlignVCenter, seconds((map.lo + map.hi) / 2));
      p.drawText(labels, Qt::AlignLeft | Qt::AlignBottom, seconds(map.lo));
    } else {
      p.drawText(labels, Qt::AlignLeft | Qt::AlignVCenter, seconds(map.lo));
    }
    legendY = l.bar.bottom() + 10;
    p.drawText(QRect(l.bar.left(), legendY, size.width() - l.bar.left() - 4, 16), Qt::AlignLeft | Qt::AlignVCenter,
               QStringLiteral("lower is better"));
    legendY += 20;
  }
  if (anyNotReached) {
    hatch(p, QRect(l.bar.left(), legendY, 16, 14));
    p.setPen(kText);
    p.drawText(QRect(l.bar.right() + 5, legendY - 1, size.width() - l.bar.right() - 7, 16), Qt::AlignLeft | Qt::AlignVCenter,
               QStringLiteral("not reached"));
  }
  p.end();
  return image;
}

}  // namespace dasp::ui
