// SPDX-License-Identifier: MIT
#include "ui/charts/node_bars.h"

#include "core/results/straggler_score.h"

#include <QFontMetrics>
#include <QPainter>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>

namespace dasp::ui {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int kLabelW = 190;
constexpr int kHeaderH = 36;
constexpr int kRowH = 20;

const QColor kWaitColor(0xE6, 0x9F, 0x00);
const QColor kStalenessColor(0xCC, 0x79, 0xA7);
const QColor kThroughputColor(0x00, 0x72, 0xB2);
const QColor kScoreColor(0x00, 0x9E, 0x73);
const QColor kStragglerColor(0xD0, 0x10, 0x10);

// Mean of the finite values with t in (t0, t1]; NaN when there are none.
double meanIn(const std::vector<Point>& v, double t0, double t1, std::int64_t* count = nullptr) {
  double sum = 0;
  std::int64_t n = 0, all = 0;
  for (const Point& p : v) {
    if (!(p.t > t0 && p.t <= t1)) continue;
    ++all;
    if (!std::isfinite(p.value)) continue;
    sum += p.value;
    ++n;
  }
  if (count != nullptr) *count = all;
  return n > 0 ? sum / static_cast<double>(n) : kNaN;
}

// Samples with a < t <= b of a series in time order (a <= 0 takes t = 0 as well).
std::int64_t countIn(const std::vector<Point>& v, double a, double b) {
  auto after = [](double x) { return [x](const Point& p) { return p.t <= x; }; };
  const auto lo = a <= 0 ? v.begin() : std::partition_point(v.begin(), v.end(), after(a));
  const auto hi = std::partition_point(lo, v.end(), after(b));
  return static_cast<std::int64_t>(hi - lo);
}

// A node's batch at time t: its batch series is a step per change; before its first
// change (or without the series) the spec's batch (0: unknown).
double batchAt(const NodeData& n, std::int64_t specBatch, double t) {
  const auto after = std::partition_point(n.batch.begin(), n.batch.end(), [t](const Point& p) { return p.t <= t; });
  if (after != n.batch.begin()) return std::prev(after)->value;
  if (!n.batch.empty()) return n.batch.front().value;
  return specBatch > 0 ? static_cast<double>(specBatch) : kNaN;
}

// The samples of the iterations `its` with t in (t0, t1]: each at its batch then.
double samplesIn(const NodeData& n, const std::vector<Point>& its, std::int64_t specBatch, double t0, double t1) {
  double sum = 0;
  for (const Point& p : its) {
    if (p.t > t0 && p.t <= t1) sum += batchAt(n, specBatch, p.t);
  }
  return sum;
}

QString figure(double v, int decimals) {
  return std::isfinite(v) ? QString::number(v, 'f', decimals) : QStringLiteral("–");
}

}  // namespace

QString batchText(const NodeStats& s) {
  if (!std::isfinite(s.batch)) return QStringLiteral("–");
  if (!std::isfinite(s.batchShare)) return QString::number(s.batch, 'f', 0);
  return QStringLiteral("%1 (%2%)").arg(s.batch, 0, 'f', 0).arg(100 * s.batchShare, 0, 'f', 0);
}

NodeBars::NodeBars(QWidget* parent) : QWidget(parent) {
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Preferred);
}

NodeBars::~NodeBars() = default;

void NodeBars::setRun(const RunData* run) {
  m_run = run;
  refresh();
  updateGeometry();
}

void NodeBars::setLastSeconds(double seconds) {
  m_fixed = false;
  m_lastSeconds = seconds > 0 && std::isfinite(seconds) ? seconds : 10;
  refresh();
}

void NodeBars::setWindow(double t0, double t1) {
  if (!std::isfinite(t0) || !std::isfinite(t1)) return;
  m_fixed = true;
  m_t0 = std::min(t0, t1);
  m_t1 = std::max(t0, t1);
  refresh();
}

std::vector<NodeStats> NodeBars::computeStats(const RunData& run, double t0, double t1) {
  std::vector<NodeStats> out;
  // Samples count in (t0, t1]; a window starting at 0 also takes the samples at t = 0.
  const double span = t1 - std::max(t0, 0.0);
  if (t0 <= 0) t0 = -std::numeric_limits<double>::infinity();
  for (const NodeData& n : run.nodes) {
    NodeStats s;
    s.name = n.name;
    std::int64_t iterations = 0;
    s.meanWait = meanIn(n.wait, t0, t1, &iterations);
    if (n.wait.empty()) static_cast<void>(meanIn(n.trainLoss, t0, t1, &iterations));
    s.meanStaleness = meanIn(n.staleness, t0, t1);
    s.iterations = iterations;
    s.throughput = span > 0 ? static_cast<double>(iterations) / span : kNaN;
    const std::vector<Point>& its = n.wait.empty() ? n.trainLoss : n.wait;
    s.samplesPerS = span > 0 ? samplesIn(n, its, run.batchSize, t0, t1) / span : kNaN;
    s.batch = batchAt(n, run.batchSize, t1);
    out.push_back(s);
  }
  double batches = 0;
  for (const NodeStats& s : out) {
    if (std::isfinite(s.batch)) batches += s.batch;
  }
  for (NodeStats& s : out) s.batchShare = batches > 0 ? s.batch / batches : kNaN;
  // The straggler scores: each node's throughput against the fastest node's and its own
  // best window of the same length.
  std::vector<NodeThroughput> throughput;
  const double from = std::max(t0, 0.0);
  for (const NodeData& n : run.nodes) {
    const std::vector<Point>& its = n.wait.empty() ? n.trainLoss : n.wait;
    throughput.push_back(windowedThroughput([&its](double a, double b) { return countIn(its, a, b); }, from, t1));
  }
  const std::vector<StragglerScore> scores = stragglerScores(throughput);
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i].relativeScore = scores[i].relative;
    out[i].individualScore = scores[i].individual;
    out[i].score = scores[i].score;
    out[i].straggler = scores[i].straggler;
  }
  return out;
}

void NodeBars::refresh() {
  const std::size_t before = m_stats.size();
  m_stats.clear();
  if (m_run != nullptr) {
    const double end = std::isfinite(m_run->endT) ? m_run->endT : 0;
    m_shownT1 = m_fixed ? m_t1 : end;
    m_shownT0 = m_fixed ? m_t0 : std::max(0.0, end - m_lastSeconds);
    m_stats = computeStats(*m_run, m_shownT0, m_shownT1);
  }
  if (m_stats.size() != before) updateGeometry();
  update();
}

int NodeBars::heightForRows(int rows) { return kHeaderH + std::max(rows, 1) * kRowH + 6; }

QSize NodeBars::sizeHint() const { return QSize(640, heightForRows(static_cast<int>(m_stats.size()))); }

// Every row: in its scroll area (a resizable widget) a shorter minimum would cut the last
// rows off instead of scrolling to them.
QSize NodeBars::minimumSizeHint() const { return QSize(360, sizeHint().height()); }

void NodeBars::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().color(QPalette::Base));
  const QColor text = palette().color(QPalette::WindowText);
  const QFontMetrics fm(font());
  p.setPen(text);
  if (m_run == nullptr || m_stats.empty()) {
    p.setPen(palette().color(QPalette::PlaceholderText));
    p.drawText(rect(), Qt::AlignCenter, m_run == nullptr ? tr("no run") : tr("no nodes yet"));
    return;
  }
  p.drawText(QRect(4, 2, width() - 8, 14), Qt::AlignLeft | Qt::AlignVCenter,
             tr("window %1–%2 s: means; score: the straggler score").arg(m_shownT0, 0, 'f', 1).arg(m_shownT1, 0, 'f', 1));

  struct Column {
    QString title;
    QColor color;
    int decimals;
    double (*get)(const NodeStats&);
  };
  // Throughput in samples: under DASP's batch shares every node makes about as many
  // iterations a second, and the batches differ. The straggler score stays on iterations
  // (a deliberately small batch is not a straggler).
  const Column columns[] = {
      // Short titles: at the default window a column is about 50 px wide.
      {tr("wait (s)"), kWaitColor, 3, [](const NodeStats& s) { return s.meanWait; }},
      {tr("staleness"), kStalenessColor, 2, [](const NodeStats& s) { return s.meanStaleness; }},
      {tr("samples/s"), kThroughputColor, 0, [](const NodeStats& s) { return s.samplesPerS; }},
      {tr("score"), kScoreColor, 2, [](const NodeStats& s) { return s.score; }},
  };
  constexpr int kColumns = static_cast<int>(std::size(columns));
  constexpr int kScoreColumn = kColumns - 1;
  const int colW = std::max((width() - kLabelW - 8) / kColumns, 40);
  for (int c = 0; c < kColumns; ++c) {
    const Column& col = columns[c];
    const int x0 = kLabelW + c * colW;
    double max = c == kScoreColumn ? 1.0 : 0.0;  // a score's bar is on the 0..1 scale
    for (const NodeStats& s : m_stats) {
      const double v = col.get(s);
      if (std::isfinite(v)) max = std::max(max, v);
    }
    p.setPen(text);
    p.drawText(QRect(x0, 18, colW - 6, 16), Qt::AlignLeft | Qt::AlignVCenter, col.title);
    const int valueW = fm.horizontalAdvance(QStringLiteral("00000.000")) + 4;
    const int barMax = std::max(colW - valueW - 8, 4);
    for (std::size_t r = 0; r < m_stats.size(); ++r) {
      const NodeStats& s = m_stats[r];
      const int y = kHeaderH + static_cast<int>(r) * kRowH;
      const double v = col.get(s);
      const bool red = s.straggler && c >= kScoreColumn - 1;  // its throughput and score
      int len = 0;
      if (std::isfinite(v) && max > 0) len = static_cast<int>(std::lround(v / max * barMax));
      if (std::isfinite(v) && v > 0) len = std::max(len, 1);
      p.fillRect(QRect(x0, y + 3, len, kRowH - 6), red ? kStragglerColor : col.color);
      p.setPen(red ? kStragglerColor : text);
      p.drawText(QRect(x0 + len + 4, y, valueW, kRowH), Qt::AlignLeft | Qt::AlignVCenter, figure(v, col.decimals));
    }
  }
  for (std::size_t r = 0; r < m_stats.size(); ++r) {
    const NodeStats& s = m_stats[r];
    const int y = kHeaderH + static_cast<int>(r) * kRowH;
    // The name, its batch and share of the cluster's (DASP's batch shares), the straggler.
    QString label = s.name;
    if (std::isfinite(s.batch)) label += QStringLiteral(" · ") + batchText(s);
    if (s.straggler) label += QStringLiteral("  ") + tr("straggler");
    p.setPen(s.straggler ? kStragglerColor : text);
    p.drawText(QRect(4, y, kLabelW - 10, kRowH), Qt::AlignRight | Qt::AlignVCenter,
               fm.elidedText(label, Qt::ElideMiddle, kLabelW - 10));
  }
}

}  // namespace dasp::ui
