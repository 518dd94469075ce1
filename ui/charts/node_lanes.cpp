// SPDX-License-Identifier: MIT
#include "ui/charts/node_lanes.h"
#include "ui/charts/axis_ticks.h"
#include "ui/charts/fault_spans.h"
#include "ui/charts/plain_tooltip.h"

#include <QFontMetrics>
#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QToolTip>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

namespace dasp::ui {

namespace {

// Layout, in pixels.
constexpr int kLabelW = 88;
constexpr int kRightMargin = 10;
constexpr int kAxisH = 20;
constexpr int kClusterH = 14;
constexpr int kClusterGap = 6;
constexpr int kStripH = 4;
constexpr int kStripGap = 1;
constexpr int kLaneGap = 5;
constexpr int kLegendRowH = 18;  // a row of the legend (it wraps: legendRows)
constexpr int kShardH = 10;  // a sharded server's shard lane
constexpr int kShardGap = 3;
constexpr int kHitPx = 4;  // how far from a marker the tooltip still finds it


const QColor kEmptyLane(0xF2, 0xF2, 0xF2);
const QColor kClusterLane(0xE6, 0xE6, 0xE6);
const QColor kDecisionColor(0x22, 0x22, 0x22);
const QColor kEventColor(0xC0, 0x00, 0x30);
const QColor kCursorColor(0xD0, 0x00, 0x00);

void drawTriangle(QPainter& p, double x, double top, const QColor& color) {
  QPainterPath path;
  path.moveTo(x - 4, top);
  path.lineTo(x + 4, top);
  path.lineTo(x, top + 7);
  path.closeSubpath();
  p.setPen(QPen(Qt::white, 1));
  p.setBrush(color);
  p.drawPath(path);
}

void drawDiamond(QPainter& p, double x, double cy, const QColor& color) {
  QPainterPath path;
  path.moveTo(x, cy - 4);
  path.lineTo(x + 4, cy);
  path.lineTo(x, cy + 4);
  path.lineTo(x - 4, cy);
  path.closeSubpath();
  p.setPen(QPen(Qt::white, 1));
  p.setBrush(color);
  p.drawPath(path);
}

}  // namespace

NodeLanes::NodeLanes(QWidget* parent) : QWidget(parent), m_cursor(std::numeric_limits<double>::quiet_NaN()) {
  setMouseTracking(true);  // hover moves the shared time cursor
  setAttribute(Qt::WA_OpaquePaintEvent);
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Preferred);
}

NodeLanes::~NodeLanes() = default;

QColor NodeLanes::stateColor(NodeState state) {
  // Okabe-Ito: distinguishable with the common colour-vision deficiencies.
  switch (state) {
    case NodeState::Compute: return QColor(0x00, 0x9E, 0x73);
    case NodeState::Push: return QColor(0x00, 0x72, 0xB2);
    case NodeState::Wait: return QColor(0xE6, 0x9F, 0x00);
    case NodeState::Pull: return QColor(0x56, 0xB4, 0xE9);
    case NodeState::Down: return QColor(0xD5, 0x5E, 0x00);
    case NodeState::Idle: return QColor(0xBB, 0xBB, 0xBB);
    // Paul Tol's wine: apart from the Okabe-Ito colours above and the strips'.
    case NodeState::Offline: return QColor(0x88, 0x22, 0x55);
  }
  return QColor(Qt::black);
}

QColor NodeLanes::shardLoadColor(bool applying) {
  // Okabe-Ito's reddish purple, and a dark grey: apart from the states' colours.
  return applying ? QColor(0xCC, 0x79, 0xA7) : QColor(0x55, 0x55, 0x55);
}

QColor NodeLanes::parallelColor(Parallel parallel) {
  switch (parallel) {
    case Parallel::Sync: return QColor(0xCC, 0x79, 0xA7);
    case Parallel::Async: return QColor(0xE5, 0xC4, 0x00);
    case Parallel::Down: return QColor(0x00, 0x00, 0x00);
    case Parallel::None: return QColor(Qt::transparent);
  }
  return QColor(Qt::transparent);
}

void NodeLanes::setRun(const RunData* run) {
  m_run = run;
  m_index.clear();
  updateGeometry();
  update();
}

void NodeLanes::setWindow(double t0, double t1) {
  if (!std::isfinite(t0) || !std::isfinite(t1)) return;
  if (t1 < t0) std::swap(t0, t1);
  if (t1 - t0 < 1e-6) t1 = t0 + 1e-6;
  m_follow = false;
  m_t0 = t0;
  m_t1 = t1;
  update();
}

void NodeLanes::setFollow(double seconds) {
  if (!(seconds > 0) || !std::isfinite(seconds)) seconds = 30;
  m_follow = true;
  m_followSeconds = seconds;
  update();
}

double NodeLanes::windowEnd() const {
  if (!m_follow) return m_t1;
  const double end = m_run != nullptr && std::isfinite(m_run->endT) ? m_run->endT : 0;
  return std::max(end, m_followSeconds);
}

double NodeLanes::windowStart() const { return m_follow ? windowEnd() - m_followSeconds : m_t0; }

void NodeLanes::setCursor(double t) {
  m_cursor = t;
  update();
}

void NodeLanes::refresh() {
  if (m_run != nullptr && static_cast<int>(m_index.size()) != laneCount()) updateGeometry();
  update();
}

int NodeLanes::laneCount() const { return m_run != nullptr ? static_cast<int>(m_run->nodes.size()) : 0; }

int NodeLanes::shardCount() const { return m_run != nullptr ? static_cast<int>(m_run->shards.size()) : 0; }

int NodeLanes::shardsHeight() const { return shardCount() * (kShardH + kShardGap); }

int NodeLanes::laneHeight() const {
  const int n = std::max(laneCount(), 1);
  const int avail = height() - kAxisH - kClusterH - kClusterGap - shardsHeight() - legendHeight();
  return std::clamp(avail / n - (kStripH + kStripGap + kLaneGap), 6, 28);
}

QRect NodeLanes::plotRect() const {
  const int bottom = stripRect(laneCount()).top();
  return QRect(kLabelW, kAxisH, std::max(width() - kLabelW - kRightMargin, 1), std::max(bottom - kAxisH, 1));
}

QRect NodeLanes::clusterLaneRect() const {
  return QRect(kLabelW, kAxisH, std::max(width() - kLabelW - kRightMargin, 1), kClusterH);
}

QRect NodeLanes::shardLaneRect(int shard) const {
  const int y = kAxisH + kClusterH + kClusterGap + shard * (kShardH + kShardGap);
  return QRect(kLabelW, y, std::max(width() - kLabelW - kRightMargin, 1), kShardH);
}

QRect NodeLanes::stripRect(int lane) const {
  const int pitch = kStripH + kStripGap + laneHeight() + kLaneGap;
  const int y = kAxisH + kClusterH + kClusterGap + shardsHeight() + lane * pitch;
  return QRect(kLabelW, y, std::max(width() - kLabelW - kRightMargin, 1), kStripH);
}

QRect NodeLanes::laneRect(int lane) const {
  const QRect s = stripRect(lane);
  return QRect(s.left(), s.bottom() + 1 + kStripGap, s.width(), laneHeight());
}

QSize NodeLanes::sizeHint() const {
  const int n = std::max(laneCount(), 1);
  return QSize(800, kAxisH + kClusterH + kClusterGap + shardsHeight() + n * (kStripH + kStripGap + 18 + kLaneGap) +
                       legendHeight() + 2);
}

QSize NodeLanes::minimumSizeHint() const {
  const int n = std::max(laneCount(), 1);
  return QSize(300, kAxisH + kClusterH + kClusterGap + shardsHeight() + n * (kStripH + kStripGap + 6 + kLaneGap) +
                       legendHeight() + 2);
}

double NodeLanes::xForTime(double t) const {
  const QRect r = plotRect();
  const double t0 = windowStart(), t1 = windowEnd();
  return r.left() + (t - t0) / (t1 - t0) * r.width();
}

double NodeLanes::timeForX(double x) const {
  const QRect r = plotRect();
  const double t0 = windowStart(), t1 = windowEnd();
  return t0 + (x - r.left()) / r.width() * (t1 - t0);
}

int NodeLanes::laneOf(const QString& node) const {
  if (m_run == nullptr) return -1;
  for (std::size_t i = 0; i < m_run->nodes.size(); ++i) {
    if (m_run->nodes[i].name == node) return static_cast<int>(i);
  }
  return -1;  // "cluster", "server", "" and unknown nodes go on the cluster lane
}

const NodeLanes::LaneIndex& NodeLanes::index(int lane) const {
  const auto n = static_cast<std::size_t>(laneCount());
  if (m_index.size() != n) m_index.resize(n);
  const NodeData& node = m_run->nodes[static_cast<std::size_t>(lane)];
  LaneIndex& ix = m_index[static_cast<std::size_t>(lane)];
  // A live feed inserts lanes in rank order, and a reload may replace the data.
  if (ix.name != node.name || ix.seen > node.intervals.size()) ix = LaneIndex{node.name, 0, true, 0, 0};
  for (; ix.seen < node.intervals.size(); ++ix.seen) {
    const Interval& iv = node.intervals[ix.seen];
    if (!(iv.t0 >= ix.lastT0)) ix.sorted = false;  // NaN counts as unsorted
    if (std::isfinite(iv.t0)) ix.lastT0 = std::max(ix.lastT0, iv.t0);
    const double d = iv.t1 - iv.t0;
    if (std::isfinite(d)) ix.maxDuration = std::max(ix.maxDuration, d);
  }
  return ix;
}

std::pair<std::size_t, std::size_t> NodeLanes::candidates(int lane, double t0, double t1) const {
  const LaneIndex& ix = index(lane);
  const auto& v = m_run->nodes[static_cast<std::size_t>(lane)].intervals;
  if (!ix.sorted) return {0, v.size()};
  const double from = t0 - ix.maxDuration;
  auto lo = std::lower_bound(v.begin(), v.end(), from, [](const Interval& i, double t) { return i.t0 < t; });
  auto hi = std::upper_bound(lo, v.end(), t1, [](double t, const Interval& i) { return t < i.t0; });
  return {static_cast<std::size_t>(lo - v.begin()), static_cast<std::size_t>(hi - v.begin())};
}

std::vector<NodeLanes::Marker> NodeLanes::markers(double t0, double t1) const {
  std::vector<Marker> out;
  if (m_run == nullptr) return out;
  const double pad = (t1 - t0) * 0.01;
  for (std::size_t i = 0; i < m_run->decisions.size(); ++i) {
    const Decision& d = m_run->decisions[i];
    // Only what changed something: a re-partition or a grant is a record, not a marker.
    if (!d.kind || !marksTimeline(*d.kind)) continue;
    if (d.t >= t0 - pad && d.t <= t1 + pad) out.push_back({d.t, laneOf(d.node), false, i});
  }
  for (std::size_t i = 0; i < m_run->events.size(); ++i) {
    const Event& e = m_run->events[i];
    if (e.t >= t0 - pad && e.t <= t1 + pad && isMarkedEvent(e)) out.push_back({e.t, laneOf(e.node), true, i});
  }
  return out;
}

void NodeLanes::paintLane(QPainter& p, int lane, double t0, double t1) const {
  const QRect body = laneRect(lane);
  const QRect strip = stripRect(lane);
  p.fillRect(body, kEmptyLane);
  const int w = body.width();
  const double pxPerS = w / (t1 - t0);
  const auto& v = m_run->nodes[static_cast<std::size_t>(lane)].intervals;
  const auto [first, last] = candidates(lane, t0, t1);

  // Coverage of each pixel column by each state (0..5) and parallel state (in a second
  // pass, reusing the buffer), so sub-pixel intervals merge into the majority state.
  for (int pass = 0; pass < 2; ++pass) {
    m_cover.assign(static_cast<std::size_t>(w), std::array<float, kNodeStates.size()>{});
    bool any = false;
    for (std::size_t i = first; i < last; ++i) {
      const Interval& iv = v[i];
      if (!std::isfinite(iv.t0) || !std::isfinite(iv.t1) || iv.t1 <= t0 || iv.t0 >= t1) continue;
      const int k = pass == 0 ? static_cast<int>(iv.state) : static_cast<int>(iv.parallel);
      if (pass == 1 && iv.parallel == Parallel::None) continue;
      const double a = std::max(0.0, (iv.t0 - t0) * pxPerS), b = std::min<double>(w, (iv.t1 - t0) * pxPerS);
      if (!(b > a)) continue;
      const int pa = static_cast<int>(a);
      const int pb = std::min(static_cast<int>(std::ceil(b)), w);
      for (int px = pa; px < pb; ++px) {
        m_cover[static_cast<std::size_t>(px)][static_cast<std::size_t>(k)] +=
            static_cast<float>(std::min<double>(b, px + 1) - std::max<double>(a, px));
      }
      any = true;
    }
    if (!any) continue;
    const QRect& target = pass == 0 ? body : strip;
    int runStart = 0, runKind = -1;
    auto flush = [&](int end) {
      if (runKind < 0 || end <= runStart) return;
      const QColor c = pass == 0 ? stateColor(static_cast<NodeState>(runKind))
                                 : parallelColor(static_cast<Parallel>(runKind));
      p.fillRect(QRect(target.left() + runStart, target.top(), end - runStart, target.height()), c);
    };
    for (int px = 0; px < w; ++px) {
      const auto& c = m_cover[static_cast<std::size_t>(px)];
      int best = -1;
      float bestV = 0;
      for (int k = 0; k < static_cast<int>(kNodeStates.size()); ++k) {
        if (c[static_cast<std::size_t>(k)] > bestV) {
          bestV = c[static_cast<std::size_t>(k)];
          best = k;
        }
      }
      if (best != runKind) {
        flush(px);
        runStart = px;
        runKind = best;
      }
    }
    flush(w);
  }
  paintOfflineCounts(p, lane, first, last, t0, pxPerS);
}

// Through an outage, each reported period that has room says the worker's work so far.
void NodeLanes::paintOfflineCounts(QPainter& p, int lane, std::size_t first, std::size_t last, double t0,
                                   double pxPerS) const {
  const NodeData& node = m_run->nodes[static_cast<std::size_t>(lane)];
  if (node.offlineSteps.empty()) return;
  const QRect body = laneRect(lane);
  const QFontMetrics fm(font());
  if (body.height() < fm.ascent()) return;
  p.setPen(Qt::white);
  for (std::size_t i = first; i < last; ++i) {
    const Interval& iv = node.intervals[i];
    if (iv.state != NodeState::Offline) continue;
    const auto count = offlineCountAt(node, iv.t1);
    if (!count) continue;
    const QString text = QString::number(*count);
    const double x0 = body.left() + (iv.t0 - t0) * pxPerS, x1 = body.left() + (iv.t1 - t0) * pxPerS;
    const int tw = fm.horizontalAdvance(text);
    if (x1 - x0 < tw + 4 || x0 < body.left() || x1 > body.right()) continue;
    p.drawText(QPointF((x0 + x1 - tw) / 2, body.center().y() + fm.ascent() / 2.0 - 1), text);
  }
}

std::optional<std::int64_t> NodeLanes::offlineCountAt(const NodeData& node, double t) {
  // The report that closed the period ending at t (its point is at the period's end).
  const auto& v = node.offlineSteps;
  const auto at = std::lower_bound(v.begin(), v.end(), t - 1e-9, [](const Point& q, double x) { return q.t < x; });
  if (at == v.end()) return std::nullopt;
  return static_cast<std::int64_t>(at->value);
}

// Each period of the shard as a column: the share of it spent applying, from the bottom,
// and serving above it.
void NodeLanes::paintShard(QPainter& p, int shard, double t0, double t1) const {
  const QRect lane = shardLaneRect(shard);
  p.fillRect(lane, kEmptyLane);
  for (const ShardLoad& l : m_run->shards[static_cast<std::size_t>(shard)].load) {
    if (l.t1 < t0 || l.t0 > t1 || l.t1 <= l.t0) continue;
    const int x0 = static_cast<int>(std::floor(xForTime(std::max(l.t0, t0))));
    const int x1 = std::max(x0 + 1, static_cast<int>(std::ceil(xForTime(std::min(l.t1, t1)))));
    const double period = l.t1 - l.t0;
    const int apply = static_cast<int>(std::lround(lane.height() * std::clamp(l.applyS / period, 0.0, 1.0)));
    const int serve = std::min(lane.height() - apply,
                               static_cast<int>(std::lround(lane.height() * std::clamp(l.serveS / period, 0.0, 1.0))));
    p.fillRect(QRect(x0, lane.bottom() + 1 - apply, x1 - x0, apply), shardLoadColor(true));
    p.fillRect(QRect(x0, lane.bottom() + 1 - apply - serve, x1 - x0, serve), shardLoadColor(false));
  }
}

QString NodeLanes::shardToolTip(int shard, double t) const {
  const ShardData& s = m_run->shards[static_cast<std::size_t>(shard)];
  const QString where = placementText(s.host, QString());
  QString text = s.name + (where.isEmpty() ? QString() : tr(" on %1").arg(where)) +
                 (shard == 0 ? tr(" (shard 0, which decides)") : QString());
  for (const ShardLoad& l : s.load) {
    if (t < l.t0 || t >= l.t1) continue;
    const double period = l.t1 - l.t0;
    return text + tr("\n%1–%2 s: applying %3 %, serving %4 %")
                      .arg(l.t0, 0, 'f', 2)
                      .arg(l.t1, 0, 'f', 2)
                      .arg(100 * l.applyS / period, 0, 'f', 1)
                      .arg(100 * l.serveS / period, 0, 'f', 1);
  }
  return text + tr("\nno load reported at %1 s").arg(t, 0, 'f', 2);
}

void NodeLanes::paintAxis(QPainter& p, double t0, double t1) const {
  const QRect r = plotRect();
  const QFontMetrics fm(font());
  const double step = niceStep(t1 - t0, std::max(r.width() / 90, 2));
  p.setPen(palette().color(QPalette::WindowText));
  for (double t = std::ceil(t0 / step) * step; t <= t1 + step * 1e-9; t += step) {
    const double x = xForTime(t);
    p.drawLine(QPointF(x, kAxisH - 4), QPointF(x, kAxisH - 1));
    const QString label = QString::number(std::abs(t) < step * 1e-6 ? 0.0 : t, 'g', 6) + QStringLiteral(" s");
    const int lw = fm.horizontalAdvance(label);
    const double lx = std::clamp(x - lw / 2.0, 0.0, static_cast<double>(width() - lw));
    p.drawText(QPointF(lx, kAxisH - 6), label);
  }
}

// Lays the legend out in rows as wide as the widget (an export at 960 px wraps it) and
// paints it with `p`; with none it only counts the rows.
int NodeLanes::legendRows(QPainter* p) const {
  const QFontMetrics fm(font());
  const int box = 10;
  int x = 4, row = 0;
  int y = p != nullptr ? plotRect().bottom() + 8 : 0;
  // Starts a new row when an entry `w` wide would run past the right edge.
  auto place = [&](int w) {
    if (x > 4 && x + w > width() - 4) {
      x = 4;
      ++row;
      y += kLegendRowH;
    }
  };
  auto text = [&](const QString& t, int gap) {
    if (p != nullptr) {
      p->setPen(palette().color(QPalette::WindowText));
      p->drawText(x, y + box - 1, t);
    }
    x += fm.horizontalAdvance(t) + gap;
  };
  auto item = [&](const QColor& c, const QString& t, int h) {
    place(box + 4 + fm.horizontalAdvance(t));
    if (p != nullptr) p->fillRect(QRect(x, y + (box - h) / 2, box, h), c);
    x += box + 4;
    text(t, 12);
  };
  auto marker = [&](const QString& t, const std::function<void(int)>& draw) {
    place(12 + fm.horizontalAdvance(t));
    if (p != nullptr) draw(x);
    x += 12;
    text(t, 12);
  };
  const bool offline = m_run != nullptr && std::any_of(m_run->nodes.begin(), m_run->nodes.end(), [](const NodeData& n) {
                         return !n.offlineSteps.empty();
                       });
  for (NodeState s : kNodeStates) {
    if (s != NodeState::Offline || offline) item(stateColor(s), QLatin1String(toString(s)), box);
  }
  place(fm.horizontalAdvance(tr("parallel:")) + 6);
  text(tr("parallel:"), 6);
  for (Parallel s : {Parallel::Sync, Parallel::Async, Parallel::Down}) {
    item(parallelColor(s), QLatin1String(toString(s)), kStripH);
  }
  marker(tr("decision"), [&](int at) { drawTriangle(*p, at + 4, y + 1, kDecisionColor); });
  marker(tr("event"), [&](int at) { drawDiamond(*p, at + 4, y + box / 2.0, kEventColor); });
  if (shardCount() > 0) {
    place(fm.horizontalAdvance(tr("shards:")) + 6);
    text(tr("shards:"), 6);
    item(shardLoadColor(true), tr("applying"), box);
    item(shardLoadColor(false), tr("serving"), box);
  }
  return row + 1;
}

int NodeLanes::legendHeight() const { return legendRows(nullptr) * kLegendRowH + 8; }

void NodeLanes::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().color(QPalette::Base));
  const double t0 = windowStart(), t1 = windowEnd();
  paintAxis(p, t0, t1);
  const QFontMetrics fm(font());
  auto label = [&](const QRect& lane, const QString& text) {
    p.setPen(palette().color(QPalette::WindowText));
    const QString elided = fm.elidedText(text, Qt::ElideMiddle, kLabelW - 8);
    p.drawText(QRect(2, lane.top() - 3, kLabelW - 6, lane.height() + 6), Qt::AlignRight | Qt::AlignVCenter, elided);
  };
  const QRect cluster = clusterLaneRect();
  p.fillRect(cluster, kClusterLane);
  label(cluster, tr("cluster"));
  for (int shard = 0; shard < shardCount(); ++shard) {
    p.save();
    p.setClipRect(QRect(kLabelW, 0, cluster.width(), height()));
    paintShard(p, shard, t0, t1);
    p.restore();
    label(shardLaneRect(shard), m_run->shards[static_cast<std::size_t>(shard)].name);
  }
  if (m_run == nullptr || m_run->nodes.empty()) {
    p.setPen(palette().color(QPalette::PlaceholderText));
    p.drawText(laneRect(0), Qt::AlignCenter, m_run == nullptr ? tr("no run") : tr("no nodes yet"));
    legendRows(&p);
    return;
  }
  const int n = laneCount();
  p.save();
  p.setClipRect(QRect(kLabelW, 0, cluster.width(), height()));
  for (int lane = 0; lane < n; ++lane) paintLane(p, lane, t0, t1);
  p.setRenderHint(QPainter::Antialiasing, true);
  // One marker per pixel column and lane: thousands of grants would otherwise overdraw.
  std::vector<int> lastX(static_cast<std::size_t>(n + 1), std::numeric_limits<int>::min());
  for (const Marker& m : markers(t0, t1)) {
    const int x = static_cast<int>(std::lround(xForTime(m.t)));
    int& seen = lastX[static_cast<std::size_t>(m.lane + 1)];
    if (x == seen && !m.isEvent) continue;
    seen = x;
    const QRect lane = m.lane < 0 ? cluster : laneRect(m.lane);
    if (m.isEvent) {
      drawDiamond(p, x, lane.center().y(), kEventColor);
    } else {
      drawTriangle(p, x, m.lane < 0 ? cluster.top() + 3 : lane.top(), kDecisionColor);
    }
  }
  p.setRenderHint(QPainter::Antialiasing, false);
  if (std::isfinite(m_cursor) && m_cursor >= t0 && m_cursor <= t1) {
    const double x = xForTime(m_cursor);
    p.setPen(QPen(kCursorColor, 1));
    p.drawLine(QPointF(x, kAxisH), QPointF(x, laneRect(n - 1).bottom()));
  }
  p.restore();
  for (int lane = 0; lane < n; ++lane) label(laneRect(lane), m_run->nodes[static_cast<std::size_t>(lane)].name);
  legendRows(&p);
}

QString NodeLanes::offlineText(const NodeData& node, double t) const {
  const auto count = offlineCountAt(node, t);
  if (!count) return {};
  const bool local = m_run->recovery.compare(QLatin1String("local"), Qt::CaseInsensitive) == 0;
  const bool one = *count == 1;
  const QString what = local ? (one ? tr("local step on its own copy") : tr("local steps on its own copy"))
                             : (one ? tr("gradient in its backlog") : tr("gradients in its backlog"));
  return tr("\n%1 %2 since the server went down").arg(*count).arg(what);
}

QString NodeLanes::toolTipAt(const QPoint& pos) const {
  if (m_run == nullptr) return {};
  for (int shard = 0; shard < shardCount(); ++shard) {
    if (shardLaneRect(shard).adjusted(0, -1, 0, 1).contains(pos)) return shardToolTip(shard, timeForX(pos.x()));
  }
  int lane = -2;
  if (clusterLaneRect().adjusted(0, -2, 0, 2).contains(pos)) lane = -1;
  for (int l = 0; l < laneCount() && lane == -2; ++l) {
    if (QRect(stripRect(l).topLeft(), laneRect(l).bottomRight()).adjusted(0, -2, 0, 2).contains(pos)) lane = l;
  }
  if (lane == -2) return {};
  const double t0 = windowStart(), t1 = windowEnd();
  QStringList parts;
  int more = 0;
  for (const Marker& m : markers(t0, t1)) {
    if (m.lane != lane || std::abs(xForTime(m.t) - pos.x()) > kHitPx) continue;
    if (parts.size() >= 6) {
      ++more;
      continue;
    }
    if (m.isEvent) {
      const Event& e = m_run->events[m.index];
      parts << QStringLiteral("%1 s  %2\n%3: %4").arg(e.t, 0, 'f', 3).arg(e.node, e.kindName(), e.detail);
    } else {
      const Decision& d = m_run->decisions[m.index];
      QString s = QStringLiteral("%1 s  %2\n%3").arg(d.t, 0, 'f', 3).arg(d.node, d.decision);
      if (!d.reason.isEmpty()) s += QStringLiteral("\nreason: ") + d.reason;
      parts << s;
    }
  }
  if (more > 0) parts << tr("… and %1 more").arg(more);
  if (!parts.isEmpty()) return parts.join(QStringLiteral("\n\n"));
  if (lane < 0) return {};
  // No marker: the lane's state under the mouse.
  const double t = timeForX(pos.x());
  const auto& v = m_run->nodes[static_cast<std::size_t>(lane)].intervals;
  const auto [first, last] = candidates(lane, t, t);
  for (std::size_t i = first; i < last; ++i) {
    if (v[i].t0 <= t && t < v[i].t1) {
      const NodeData& node = m_run->nodes[static_cast<std::size_t>(lane)];
      const QString where = placementText(node.host, node.slurmStep);
      QString s = QStringLiteral("%1%2  %3 s\n%4")
                      .arg(node.name, where.isEmpty() ? QString() : tr(" on %1").arg(where))
                      .arg(t, 0, 'f', 3)
                      .arg(QLatin1String(toString(v[i].state)));
      if (v[i].parallel != Parallel::None) s += QStringLiteral(" (%1)").arg(QLatin1String(toString(v[i].parallel)));
      if (v[i].state == NodeState::Offline) s += offlineText(node, v[i].t1);
      return s;
    }
  }
  return {};
}

bool NodeLanes::event(QEvent* e) {
  if (e->type() == QEvent::ToolTip) {
    showPlainToolTip(e, toolTipAt(static_cast<QHelpEvent*>(e)->pos()), this);
    return true;
  }
  return QWidget::event(e);
}

void NodeLanes::setWindowByUser(double t0, double t1) {
  setWindow(t0, t1);
  Q_EMIT windowChanged(m_t0, m_t1);
}

void NodeLanes::wheelEvent(QWheelEvent* e) {
  const int delta = e->angleDelta().y();
  if (delta == 0) {
    e->ignore();
    return;
  }
  const double t0 = windowStart(), t1 = windowEnd(), span = t1 - t0;
  const double anchor = std::clamp(timeForX(e->position().x()), t0, t1);
  const double newSpan = std::clamp(span * std::pow(0.8, delta / 120.0), 1e-4, 1e7);
  const double n0 = anchor - (anchor - t0) * newSpan / span;
  setWindowByUser(n0, n0 + newSpan);
  e->accept();
}

void NodeLanes::mousePressEvent(QMouseEvent* e) {
  if (e->button() != Qt::LeftButton) return QWidget::mousePressEvent(e);
  m_dragging = true;
  m_dragMoved = false;
  m_dragX = static_cast<int>(e->position().x());
  m_dragT0 = windowStart();
  m_dragT1 = windowEnd();
  QWidget::setCursor(QCursor(Qt::ClosedHandCursor));
}

// The run time under x, NaN outside the plot.
static double plotTimeAt(const NodeLanes& lanes, const QPointF& pos) {
  return lanes.plotRect().contains(pos.toPoint()) ? lanes.timeForX(pos.x()) : std::numeric_limits<double>::quiet_NaN();
}

void NodeLanes::mouseMoveEvent(QMouseEvent* e) {
  if (!m_dragging) {
    Q_EMIT timeHovered(plotTimeAt(*this, e->position()));
    return QWidget::mouseMoveEvent(e);
  }
  if (std::abs(e->position().x() - m_dragX) > 3) m_dragMoved = true;
  const double dt = (e->position().x() - m_dragX) / plotRect().width() * (m_dragT1 - m_dragT0);
  if (dt != 0) setWindowByUser(m_dragT0 - dt, m_dragT1 - dt);
}

void NodeLanes::mouseReleaseEvent(QMouseEvent* e) {
  if (e->button() != Qt::LeftButton) return QWidget::mouseReleaseEvent(e);
  m_dragging = false;
  unsetCursor();
  if (!m_dragMoved) {
    const double t = plotTimeAt(*this, e->position());
    if (std::isfinite(t)) Q_EMIT timeClicked(t);
  }
}

void NodeLanes::leaveEvent(QEvent* e) {
  Q_EMIT timeHovered(std::numeric_limits<double>::quiet_NaN());
  QWidget::leaveEvent(e);
}

void NodeLanes::mouseDoubleClickEvent(QMouseEvent*) {
  const double end = m_run != nullptr && m_run->endT > 0 && std::isfinite(m_run->endT) ? m_run->endT : 1.0;
  setWindowByUser(0, end);
}

}  // namespace dasp::ui
