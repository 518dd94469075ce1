// SPDX-License-Identifier: MIT
#include "ui/charts/convergence_chart.h"

#include "ui/charts/plain_tooltip.h"
#include "ui/charts/series_colors.h"

#include "ui/charts/decimate.h"
#include "ui/charts/fault_spans.h"

#include <QAreaSeries>
#include <QChart>
#include <QCoreApplication>
#include <QFontMetrics>
#include <QHelpEvent>
#include <QLegend>
#include <QLegendMarker>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <QValueAxis>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <map>

namespace dasp::ui {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int kMaxGrid = 600;  // grouped mode: points of the common x grid at most

QColor withAlpha(QColor c, int alpha) {
  c.setAlpha(alpha);
  return c;
}

constexpr int kFaultLabelH = 16;  // the strip at the top of the plot holding the fault labels
constexpr std::size_t kLegendRowEntries = 6;  // legend entries that fit in a row under the plot

QColor faultColor(const QString& action) {
  return action == QLatin1String("pause") ? QColor(0x56, 0x77, 0x9E) : QColor(0xC0, 0x39, 0x2B);
}

QColor eventColor(EventKind kind) {
  if (kind == v1::RunEvent::FAULT || kind == v1::RunEvent::EXIT) return QColor(0xD5, 0x5E, 0x00);
  if (kind == v1::RunEvent::CONTROL) return QColor(0x55, 0x55, 0x55);
  if (kind == v1::RunEvent::REJECT) return QColor(0xE6, 0x9F, 0x00);
  return QColor(0xCC, 0x79, 0xA7);
}

// Linear interpolation of a curve sorted by x at x (the caller keeps x inside its range).
// `cursor` advances monotonically over a rising sequence of x, so a whole grid is O(n).
double interpolate(const std::vector<QPointF>& c, std::size_t& cursor, double x) {
  while (cursor + 1 < c.size() && c[cursor + 1].x() < x) ++cursor;
  if (cursor + 1 >= c.size()) return c.back().y();
  const QPointF& a = c[cursor];
  const QPointF& b = c[cursor + 1];
  if (!(b.x() > a.x())) return b.y();
  const double f = std::clamp((x - a.x()) / (b.x() - a.x()), 0.0, 1.0);
  return a.y() + f * (b.y() - a.y());
}

}  // namespace

ConvergenceChart::ConvergenceChart(QWidget* parent)
    : QChartView(parent), m_target(kNaN), m_cursor(kNaN), m_crosshair(kNaN, kNaN) {
  auto* c = new QChart;
  c->setAnimationOptions(QChart::NoAnimation);
  c->legend()->setAlignment(Qt::AlignBottom);
  c->setMargins(QMargins(4, 4, 4, 4));
  m_axisX = new QValueAxis(c);
  m_axisY = new QValueAxis(c);
  m_axisX->setLabelFormat(QStringLiteral("%g"));
  m_axisY->setLabelFormat(QStringLiteral("%g"));
  c->addAxis(m_axisX, Qt::AlignBottom);
  c->addAxis(m_axisY, Qt::AlignLeft);
  // The log axis waits, owned by the view, until the loss is drawn on it (useYAxis()).
  m_logAxisY = new QLogValueAxis(this);
  m_logAxisY->setBase(10);
  m_logAxisY->setLabelFormat(QStringLiteral("%g"));
  m_logAxisY->setMinorTickCount(8);
  setChart(c);
  viewport()->setMouseTracking(true);  // hover moves the shared time cursor
  setRenderHint(QPainter::Antialiasing, true);
  // A wider plot needs more points: re-decimate once the layout settled (queued, so a
  // refresh never runs inside the chart's own layout pass).
  connect(c, &QChart::plotAreaChanged, this, [this](const QRectF& area) {
    if (static_cast<int>(area.width()) == m_pixels || m_refreshQueued) return;
    m_refreshQueued = true;
    QMetaObject::invokeMethod(this, [this] { refresh(); }, Qt::QueuedConnection);
  });
  updateTitles();
  refresh();
}

ConvergenceChart::~ConvergenceChart() = default;

void ConvergenceChart::setRuns(std::vector<const RunData*> runs, QStringList labels) {
  runs.erase(std::remove(runs.begin(), runs.end(), nullptr), runs.end());
  m_runs = std::move(runs);
  m_labels = std::move(labels);
  updateTitles();
  rebuild();
  refresh();
}

QString ConvergenceChart::timeAxisTitle(const std::vector<const RunData*>& runs) {
  int sim = 0;
  for (const RunData* r : runs) sim += r != nullptr && r->engine == QLatin1String("sim") ? 1 : 0;
  if (sim == 0) return tr("wall time (s)");
  if (sim == static_cast<int>(runs.size())) return tr("virtual time (s)");
  return tr("time (s): wall for real runs, virtual for sim runs");
}

void ConvergenceChart::setMetric(Metric metric) {
  m_metric = metric;
  m_zoomY = false;  // a window in accuracy units means nothing for the loss
  useYAxis();
  updateTitles();
  refresh();
}

void ConvergenceChart::setXAxis(XAxis axis) {
  m_xAxis = axis;
  m_zoomX = false;  // seconds are not versions
  m_zoomY = false;
  updateTitles();
  refresh();
}

void ConvergenceChart::setSmoothing(double factor) {
  m_smoothing = std::isfinite(factor) ? std::clamp(factor, 0.0, 0.99) : 0.0;
  refresh();
}

void ConvergenceChart::setGrouped(bool grouped) {
  if (grouped == m_grouped) return;
  m_grouped = grouped;
  rebuild();
  refresh();
}

void ConvergenceChart::setTarget(double value) {
  m_target = value;
  refresh();
}

void ConvergenceChart::setCursor(double t) {
  m_cursor = t;
  viewport()->update();
}

void ConvergenceChart::updateTitles() {
  static const char* xTitles[] = {"", "updates (version)", "samples"};
  m_axisX->setTitleText(m_xAxis == XAxis::Time ? timeAxisTitle(m_runs) : tr(xTitles[static_cast<int>(m_xAxis)]));
  m_axisY->setTitleText(m_metric == Metric::Accuracy ? tr("test accuracy") : tr("test loss"));
  m_logAxisY->setTitleText(tr("test loss (log scale)"));
}

void ConvergenceChart::rebuild() {
  QChart* c = chart();
  c->removeAllSeries();  // deletes the series (and each band's upper/lower children)
  m_runSeries.clear();
  m_groups.clear();
  auto label = [&](std::size_t i) {
    if (static_cast<qsizetype>(i) < m_labels.size() && !m_labels[static_cast<qsizetype>(i)].isEmpty()) {
      return m_labels[static_cast<qsizetype>(i)];
    }
    const RunData& r = *m_runs[i];
    const QString base = r.displayStrategy().isEmpty() ? r.name : r.displayStrategy();
    return m_grouped ? base : QStringLiteral("%1 #%2").arg(base).arg(r.runId);
  };
  auto add = [&](QAbstractSeries* s, bool inLegend) {
    c->addSeries(s);
    s->attachAxis(m_axisX);
    s->attachAxis(m_logAttached ? static_cast<QAbstractAxis*>(m_logAxisY) : m_axisY);
    if (!inLegend) {
      for (QLegendMarker* m : c->legend()->markers(s)) m->setVisible(false);
    }
  };
  if (m_grouped) {
    std::map<QString, std::size_t> byLabel;
    for (std::size_t i = 0; i < m_runs.size(); ++i) {
      const QString l = label(i);
      auto it = byLabel.find(l);
      if (it == byLabel.end()) {
        it = byLabel.emplace(l, m_groups.size()).first;
        m_groups.push_back(GroupSeries{l, {}, nullptr, nullptr, nullptr, nullptr});
      }
      m_groups[it->second].members.push_back(static_cast<int>(i));
    }
    for (std::size_t g = 0; g < m_groups.size(); ++g) {
      GroupSeries& gs = m_groups[g];
      const QColor color = seriesColor(static_cast<int>(g));
      gs.upper = new QLineSeries;
      gs.lower = new QLineSeries;
      gs.band = new QAreaSeries(gs.upper, gs.lower);
      gs.upper->setParent(gs.band);
      gs.lower->setParent(gs.band);
      gs.band->setName(gs.label + QStringLiteral(" ± std"));
      gs.band->setPen(Qt::NoPen);
      gs.band->setBrush(withAlpha(color, 60));
      add(gs.band, false);
      gs.mean = new QLineSeries;
      gs.mean->setName(QStringLiteral("%1 (n=%2)").arg(gs.label).arg(gs.members.size()));
      gs.mean->setPen(QPen(color, 2));
      add(gs.mean, true);
    }
  } else {
    for (std::size_t i = 0; i < m_runs.size(); ++i) {
      const QColor color = seriesColor(static_cast<int>(i));
      RunSeries rs;
      rs.raw = new QLineSeries;
      rs.raw->setPen(QPen(withAlpha(color, 70), 1));
      add(rs.raw, false);
      rs.smooth = new QLineSeries;
      rs.smooth->setName(label(i));
      rs.smooth->setPen(QPen(color, 2));
      add(rs.smooth, true);
      m_runSeries.push_back(rs);
    }
  }
  c->legend()->setVisible(!m_runs.empty());
  // A row under the plot holds a few entries; with more, Qt elides every label to nothing,
  // so they go in a column beside it.
  const std::size_t entries = m_grouped ? m_groups.size() : m_runSeries.size();
  c->legend()->setAlignment(entries > kLegendRowEntries ? Qt::AlignRight : Qt::AlignBottom);
}

double ConvergenceChart::xOf(const RunData& run, double t) const {
  if (m_xAxis == XAxis::Time) return t;
  const auto& ev = run.evaluations;
  if (ev.empty() || !std::isfinite(t)) return kNaN;
  auto value = [&](const Evaluation& e) {
    return static_cast<double>(m_xAxis == XAxis::Updates ? e.version : e.samples);
  };
  // Evaluations are in time order; before the first one, ramp from (0, 0).
  auto it = std::lower_bound(ev.begin(), ev.end(), t, [](const Evaluation& e, double x) { return e.t < x; });
  if (it == ev.end()) return value(ev.back());
  if (it == ev.begin()) return it->t > 0 ? value(*it) * std::clamp(t / it->t, 0.0, 1.0) : value(*it);
  const Evaluation& a = *(it - 1);
  const Evaluation& b = *it;
  if (!(b.t > a.t)) return value(b);
  return value(a) + (t - a.t) / (b.t - a.t) * (value(b) - value(a));
}

std::vector<QPointF> ConvergenceChart::points(const RunData& run) const {
  std::vector<QPointF> out;
  out.reserve(run.evaluations.size());
  for (const Evaluation& e : run.evaluations) {
    const double x = m_xAxis == XAxis::Time      ? e.t
                     : m_xAxis == XAxis::Updates ? static_cast<double>(e.version)
                                                 : static_cast<double>(e.samples);
    const double y = m_metric == Metric::Accuracy ? e.accuracy : e.loss;
    if (std::isfinite(x) && std::isfinite(y)) out.emplace_back(x, y);
  }
  auto byX = [](const QPointF& a, const QPointF& b) { return a.x() < b.x(); };
  if (!std::is_sorted(out.begin(), out.end(), byX)) std::stable_sort(out.begin(), out.end(), byX);
  return out;
}

std::vector<QPointF> ConvergenceChart::smoothed(const std::vector<QPointF>& raw) const {
  if (m_smoothing <= 0) return raw;
  // Debiased EMA (as TensorBoard does): the first points are not pulled towards 0.
  std::vector<QPointF> out;
  out.reserve(raw.size());
  double acc = 0, weight = 0;
  for (const QPointF& p : raw) {
    acc = m_smoothing * acc + (1 - m_smoothing) * p.y();
    weight = m_smoothing * weight + (1 - m_smoothing);
    out.emplace_back(p.x(), acc / weight);
  }
  return out;
}

void ConvergenceChart::refresh() {
  m_refreshQueued = false;
  QChart* c = chart();
  const int plotW = static_cast<int>(c->plotArea().width());
  m_pixels = plotW;
  const int pixels = plotW >= 20 ? plotW : std::max(width() - 80, 200);

  double xMin = std::numeric_limits<double>::infinity(), xMax = -xMin;
  auto extend = [&](const std::vector<QPointF>& v) {
    for (const QPointF& p : v) {
      xMin = std::min(xMin, p.x());
      xMax = std::max(xMax, p.x());
    }
  };
  // What the series show, for the y range: a log axis drops the values it cannot draw.
  const bool logY = logYActive();
  std::vector<QList<QPointF>> curves;
  auto plotted = [&](QList<QPointF> v) {
    if (logY) v.removeIf([](const QPointF& p) { return !(p.y() > 0); });
    curves.push_back(v);
    return v;
  };
  std::vector<std::vector<QPointF>> smooth(m_runs.size());
  for (std::size_t i = 0; i < m_runs.size(); ++i) {
    std::vector<QPointF> raw = points(*m_runs[i]);
    extend(raw);
    smooth[i] = smoothed(raw);
    if (!m_grouped && i < m_runSeries.size()) {
      m_runSeries[i].raw->setVisible(m_smoothing > 0);
      m_runSeries[i].raw->replace(m_smoothing > 0 ? plotted(decimateMinMax(raw, pixels)) : QList<QPointF>());
      m_runSeries[i].smooth->replace(plotted(decimateMinMax(smooth[i], pixels)));
    }
  }
  for (GroupSeries& g : m_groups) {
    // Common grid over the union of the members' ranges; at each x, the members whose
    // curve covers x contribute (a run that stopped early does not drag the mean).
    double g0 = std::numeric_limits<double>::infinity(), g1 = -g0;
    for (int m : g.members) {
      const auto& v = smooth[static_cast<std::size_t>(m)];
      if (v.empty()) continue;
      g0 = std::min(g0, v.front().x());
      g1 = std::max(g1, v.back().x());
    }
    QList<QPointF> mean, upper, lower;
    if (g0 <= g1) {
      const int n = g1 > g0 ? std::clamp(pixels, 2, kMaxGrid) : 1;
      std::vector<std::size_t> cursors(g.members.size(), 0);
      std::vector<double> values;
      for (int k = 0; k < n; ++k) {
        const double x = n == 1 ? g0 : g0 + (g1 - g0) * k / (n - 1);
        values.clear();
        for (std::size_t j = 0; j < g.members.size(); ++j) {
          const auto& v = smooth[static_cast<std::size_t>(g.members[j])];
          if (v.empty() || x < v.front().x() || x > v.back().x()) continue;
          values.push_back(interpolate(v, cursors[j], x));
        }
        if (values.empty()) continue;
        double sum = 0;
        for (double y : values) sum += y;
        const double mu = sum / static_cast<double>(values.size());
        double var = 0;
        for (double y : values) var += (y - mu) * (y - mu);
        const double sd = values.size() > 1 ? std::sqrt(var / static_cast<double>(values.size() - 1)) : 0.0;
        mean.append(QPointF(x, mu));
        upper.append(QPointF(x, mu + sd));
        // On a log axis the band stops just above 0 instead of leaving the plot.
        lower.append(QPointF(x, logY && mu - sd <= 0 ? mu * 1e-3 : mu - sd));
      }
    }
    g.mean->replace(plotted(mean));
    g.upper->replace(plotted(upper));
    g.lower->replace(plotted(lower));
  }

  // Fault drills: bands from the fault to the restart (or to the run's end while open).
  m_faultMarks.clear();
  for (std::size_t i = 0; i < m_runs.size(); ++i) {
    const RunData& r = *m_runs[i];
    for (const FaultSpan& s : faultSpans(r)) {
      const double end = s.closed ? s.t1 : std::max(s.t0, std::isfinite(r.endT) ? r.endT : s.t0);
      const double x0 = xOf(r, s.t0);
      const double x1 = xOf(r, end);
      if (!std::isfinite(x0) || !std::isfinite(x1)) continue;
      const QString prefix = m_runs.size() > 1 ? QStringLiteral("#%1 ").arg(r.runId) : QString();
      m_faultMarks.push_back({x0, std::max(x0, x1), s.closed, prefix + s.label,
                              m_runs.size() > 1 ? QStringLiteral("run %1: %2").arg(r.runId).arg(s.detail) : s.detail,
                              faultColor(s.action)});
      if (m_xAxis == XAxis::Time) {  // a fault after the last evaluation still shows
        xMin = std::min(xMin, x0);
        xMax = std::max(xMax, std::max(x0, x1));
      }
    }
  }

  applyRanges(curves, xMin, xMax);

  m_markers.clear();
  for (std::size_t i = 0; i < m_runs.size(); ++i) {
    const RunData& r = *m_runs[i];
    for (const Event& e : r.events) {
      if (!isMarkedEvent(e)) continue;
      const double x = xOf(r, e.t);
      if (!std::isfinite(x)) continue;
      m_markers.push_back({x,
                           QStringLiteral("#%1 at %2 s: %3 %4 %5")
                               .arg(r.runId)
                               .arg(e.t, 0, 'f', 2)
                               .arg(e.kindName(), e.node, e.detail)
                               .trimmed(),
                           eventColor(e.kind)});
    }
  }
  viewport()->update();
}

void ConvergenceChart::settleLayout() {
  // The chart lays itself out through posted layout requests: run them, then fill the
  // series for the final plot width. A removed axis (linear ↔ log) leaves its graphics to
  // a deferred delete, which no event loop runs here: run it, or both axes get drawn.
  QCoreApplication::sendPostedEvents(nullptr, QEvent::DeferredDelete);
  QCoreApplication::sendPostedEvents(chart());
  QCoreApplication::sendPostedEvents(scene());
  refresh();
  QCoreApplication::sendPostedEvents(chart());
}

void ConvergenceChart::drawForeground(QPainter* painter, const QRectF& rect) {
  QChartView::drawForeground(painter, rect);
  const QRectF plot = plotInScene();
  if (plot.width() < 2 || plot.height() < 2) return;
  painter->save();
  painter->setClipRect(plot.adjusted(-1, -1, 1, 1));
  // Fault bands under everything else: a tinted band, a solid line at the fault, a dashed
  // one at the restart, the label in a strip at the top (a second or third line where it
  // would overlap the label before; skipped beyond that).
  constexpr int kLabelRows = 3;
  double labelEnd[kLabelRows];
  std::fill(std::begin(labelEnd), std::end(labelEnd), -1e300);
  const QFontMetrics metrics(painter->font());
  m_labelRows = 1;
  for (const FaultMark& f : m_faultMarks) {
    const double x0 = sceneXOf(f.x0);
    const double x1 = std::max(sceneXOf(f.x1), x0 + 1);
    QColor fill = f.color;
    fill.setAlpha(f.closed ? 45 : 28);
    painter->fillRect(QRectF(QPointF(x0, plot.top()), QPointF(x1, plot.bottom())), fill);
    painter->setPen(QPen(f.color, 1));
    painter->drawLine(QPointF(x0, plot.top()), QPointF(x0, plot.bottom()));
    if (f.closed) {
      painter->setPen(QPen(f.color, 1, Qt::DashLine));
      painter->drawLine(QPointF(x1, plot.top()), QPointF(x1, plot.bottom()));
    }
    if (x0 >= plot.right() || x0 + 3 < plot.left()) continue;
    int row = 0;
    while (row < kLabelRows && x0 + 3 <= labelEnd[row]) ++row;
    if (row == kLabelRows) continue;
    const QString text = metrics.elidedText(f.label, Qt::ElideRight, static_cast<int>(std::max(40.0, plot.right() - x0 - 4)));
    painter->setPen(f.color.darker(130));
    painter->drawText(QPointF(x0 + 3, plot.top() + 2 + metrics.ascent() + row * kFaultLabelH), text);
    labelEnd[row] = x0 + 3 + metrics.horizontalAdvance(text) + 6;
    m_labelRows = std::max(m_labelRows, row + 1);
  }
  if (std::isfinite(m_target) && m_target >= m_yMin && m_target <= m_yMax) {
    const double y = sceneYOf(m_target);
    painter->setPen(QPen(QColor(0x44, 0x44, 0x44), 1, Qt::DashLine));
    painter->drawLine(QPointF(plot.left(), y), QPointF(plot.right(), y));
    painter->drawText(QPointF(plot.left() + 4, y - 3), tr("target %1").arg(m_target));
  }
  painter->setRenderHint(QPainter::Antialiasing, false);
  for (const Marker& m : m_markers) {
    const double x = sceneXOf(m.x);
    painter->setPen(QPen(m.color, 2));
    painter->drawLine(QPointF(x, plot.bottom()), QPointF(x, plot.bottom() - 10));
  }
  if (std::isfinite(m_cursor) && !m_runs.empty()) {
    const double cx = xOf(*m_runs.front(), m_cursor);
    if (std::isfinite(cx) && cx >= m_xMin && cx <= m_xMax) {
      const double x = sceneXOf(cx);
      painter->setPen(QPen(QColor(0xD0, 0x00, 0x00), 1));
      painter->drawLine(QPointF(x, plot.top()), QPointF(x, plot.bottom()));
    }
  }
  if (std::isfinite(m_crosshair.y())) drawCrosshair(painter, plot);
  painter->restore();
}

void ConvergenceChart::drawCrosshair(QPainter* painter, const QRectF& plot) const {
  const double y = sceneYOf(m_crosshair.y());
  if (!(y >= plot.top() && y <= plot.bottom())) return;
  painter->setPen(QPen(QColor(0x55, 0x55, 0x55), 1, Qt::DotLine));
  painter->drawLine(QPointF(plot.left(), y), QPointF(plot.right(), y));
  // Both values, inside the plot where the lines meet the axes (the foreground is clipped
  // to the plot), on white so that curves do not hide them.
  const QFontMetricsF fm(painter->font());
  auto label = [&](const QString& text, QPointF corner, bool above) {
    QRectF box(0, 0, fm.horizontalAdvance(text) + 6, fm.height() + 2);
    box.moveLeft(std::min(corner.x(), plot.right() - box.width()));
    if (above) box.moveBottom(corner.y());
    else box.moveTop(corner.y());
    painter->fillRect(box, QColor(255, 255, 255, 230));
    painter->setPen(QColor(0x33, 0x33, 0x33));
    painter->drawText(box, Qt::AlignCenter, text);
  };
  const double v = m_crosshair.y();
  const bool roomAbove = y - plot.top() > fm.height() + 4;
  label(QString::number(v, 'g', std::abs(v) < 1 ? 3 : 4), QPointF(plot.left() + 2, roomAbove ? y - 1 : y + 1), roomAbove);
  label(QString::number(m_crosshair.x(), 'g', 4), QPointF(sceneXOf(m_crosshair.x()) + 3, plot.bottom() - 1), true);
}

QString ConvergenceChart::markerToolTipAt(const QPoint& viewportPos) const {
  const QPointF scene = mapToScene(viewportPos);
  const QRectF plot = plotInScene();
  if (scene.y() < plot.bottom() - 14 || scene.y() > plot.bottom() + 4) return {};
  QStringList lines;
  int more = 0;
  for (const Marker& m : m_markers) {
    if (std::abs(sceneXOf(m.x) - scene.x()) > 4) continue;
    if (lines.size() < 8) {
      lines << m.text;
    } else {
      ++more;
    }
  }
  if (more > 0) lines << tr("… and %1 more").arg(more);
  return lines.join(QLatin1Char('\n'));
}

QString ConvergenceChart::faultToolTipAt(const QPoint& viewportPos) const {
  const QPointF scene = mapToScene(viewportPos);
  const QRectF plot = plotInScene();
  if (scene.y() < plot.top() - 2 || scene.y() > plot.top() + kFaultLabelH * m_labelRows) return {};
  QStringList parts;
  for (const FaultMark& f : m_faultMarks) {
    const double x0 = sceneXOf(f.x0);
    const double x1 = std::max(sceneXOf(f.x1), x0 + 1);
    if (scene.x() >= x0 - 4 && scene.x() <= x1 + 4 && parts.size() < 4) parts << f.detail;
  }
  return parts.join(QStringLiteral("\n\n"));
}

double ConvergenceChart::axisXAt(const QPoint& viewportPos) const {
  const QRectF plot = plotInScene();
  const QPointF scene = mapToScene(viewportPos);
  if (!plot.contains(scene) || !(plot.width() > 0)) return kNaN;
  return m_xMin + (scene.x() - plot.left()) / plot.width() * (m_xMax - m_xMin);  // sceneXOf's inverse
}

bool ConvergenceChart::viewportEvent(QEvent* event) {
  // The time-cursor hook: hover and a click without a drag (at most 3 px of travel).
  if (event->type() == QEvent::MouseMove) {
    const auto* e = static_cast<QMouseEvent*>(event);
    if (e->buttons() == Qt::NoButton) {
      const QPoint at = e->position().toPoint();
      const double x = axisXAt(at);
      m_crosshair = std::isfinite(x) ? valueAt(at) : QPointF(kNaN, kNaN);
      viewport()->update();
      Q_EMIT cursorHovered(x);
    }
  } else if (event->type() == QEvent::Leave) {
    m_crosshair = QPointF(kNaN, kNaN);
    viewport()->update();
    Q_EMIT cursorHovered(kNaN);
  } else if (event->type() == QEvent::MouseButtonPress) {
    m_pressPos = static_cast<QMouseEvent*>(event)->position().toPoint();
  } else if (event->type() == QEvent::MouseButtonRelease) {
    const auto* e = static_cast<QMouseEvent*>(event);
    const QPoint at = e->position().toPoint();
    if (e->button() == Qt::LeftButton && (at - m_pressPos).manhattanLength() <= 3) Q_EMIT cursorClicked(axisXAt(at));
  }
  if (event->type() == QEvent::ToolTip) {
    const QPoint pos = static_cast<QHelpEvent*>(event)->pos();
    QString tip = markerToolTipAt(pos);
    if (tip.isEmpty()) tip = faultToolTipAt(pos);
    showPlainToolTip(event, tip, viewport());
    return true;
  }
  return QChartView::viewportEvent(event);
}

}  // namespace dasp::ui
