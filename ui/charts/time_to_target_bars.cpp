// SPDX-License-Identifier: MIT
#include "ui/charts/time_to_target_bars.h"

#include "core/results/mean_std.h"
#include "ui/charts/run_groups.h"
#include "ui/charts/series_colors.h"

#include <QFontMetrics>
#include <QPainter>
#include <QPainterPath>
#include <QPolygonF>

#include <algorithm>
#include <cmath>

namespace dasp::ui {

namespace {

constexpr int kLeft = 56, kRight = 12, kTop = 26, kBottom = 52;  // margins around the plot
constexpr double kSlant = 40;  // degrees: labels too wide for their slot
const double kSlantCos = std::cos(kSlant * M_PI / 180), kSlantSin = std::sin(kSlant * M_PI / 180);

QString seconds(double s) { return QString::number(s, 'f', s < 10 ? 2 : 1); }

}  // namespace

void TargetBar::count(std::optional<double> timeToTarget, bool divergedRun) {
  ++runs;
  if (timeToTarget) times.push_back(*timeToTarget);
  else if (divergedRun) ++diverged;
  else ++notReached;
}

void TargetBar::settle() {
  if (times.empty()) return;
  const MeanStd s = meanStd(times);
  mean = s.mean;
  if (s.n > 1) sd = s.sd;
}

TargetBars timeToTargetBars(const std::vector<RunData>& runs, const std::vector<RunFigures>& figs,
                            const QStringList& labels, bool curvesGrouped) {
  TargetBars out;
  std::vector<double> reference;
  double lo = 0, hi = 0;
  bool anyTarget = false;
  QStringList barLabels, allLabels;
  std::vector<std::size_t> barRuns;
  for (std::size_t i = 0; i < runs.size() && i < figs.size(); ++i) {
    allLabels << (static_cast<qsizetype>(i) < labels.size() ? labels[static_cast<qsizetype>(i)] : runs[i].displayStrategy());
    const RunFigures& f = figs[i];
    if (f.target) {
      lo = anyTarget ? std::min(lo, *f.target) : *f.target;
      hi = anyTarget ? std::max(hi, *f.target) : *f.target;
      anyTarget = true;
    }
    if (!runs[i].referenceOf.isEmpty()) {
      ++out.referenceRuns;
      if (f.timeToTarget) reference.push_back(*f.timeToTarget);
      continue;
    }
    barLabels << allLabels.back();
    barRuns.push_back(i);
  }
  // The convergence chart colours its curves in first-seen order over every run, the
  // reference included.
  const std::vector<RunGroup> curveGroups = groupByLabels(allLabels);
  auto groupIndex = [&](const QString& label) {
    for (std::size_t k = 0; k < curveGroups.size(); ++k) {
      if (curveGroups[k].label == label) return static_cast<int>(k);
    }
    return 0;
  };
  if (!reference.empty()) out.reference = meanStd(reference).mean;
  if (anyTarget) out.target = lo == hi ? QString::number(lo) : QStringLiteral("%1–%2").arg(lo).arg(hi);
  for (const RunGroup& g : groupByLabels(barLabels)) {
    TargetBar bar;
    bar.label = g.label;
    bar.color = seriesColor(curvesGrouped ? groupIndex(g.label) : static_cast<int>(barRuns[g.members.front()]));
    for (std::size_t m : g.members) {
      const RunFigures& f = figs[barRuns[m]];
      bar.count(f.timeToTarget, f.status == QLatin1String("diverged"));
    }
    bar.settle();
    out.bars.push_back(std::move(bar));
  }
  return out;
}

TimeToTargetBars::TimeToTargetBars(QWidget* parent) : QWidget(parent) {
  setBackgroundRole(QPalette::Base);
  setAutoFillBackground(true);
}

TimeToTargetBars::~TimeToTargetBars() = default;

void TimeToTargetBars::setBars(TargetBars bars) {
  m_bars = std::move(bars);
  update();
}

QSize TimeToTargetBars::sizeHint() const { return {std::max(360, 90 * static_cast<int>(m_bars.bars.size()) + 80), 300}; }
QSize TimeToTargetBars::minimumSizeHint() const { return {200, 160}; }

QString TimeToTargetBars::underBar(const TargetBar& b) const {
  QString misses = tr("%1/%2 reached").arg(b.times.size()).arg(b.runs);
  if (b.diverged > 0) misses += tr(" · ✕%1 diverged").arg(b.diverged);
  if (b.notReached > 0) misses += tr(" · %1 never").arg(b.notReached);
  return misses;
}

// Slanted, under a bar: its label, then its runs reached in short ("2/3", "2/3 ✕1").
QString TimeToTargetBars::slantedText(const TargetBar& b) const {
  QString runs = QStringLiteral("%1/%2").arg(b.times.size()).arg(b.runs);
  if (b.diverged > 0) runs += QStringLiteral(" ✕%1").arg(b.diverged);
  return b.label + QStringLiteral("  ") + runs;
}

bool TimeToTargetBars::slanted() const {
  if (m_bars.bars.empty()) return false;
  const QFontMetrics fm(font());
  const double slot = (width() - kLeft - kRight) / static_cast<double>(m_bars.bars.size());
  for (const TargetBar& b : m_bars.bars) {
    if (fm.horizontalAdvance(b.label) > slot - 4 || fm.horizontalAdvance(underBar(b)) > slot - 4) return true;
  }
  return false;
}

// Slanted: room for the longest text at kSlant degrees under the plot (at most half the
// widget), and left of the first bar's centre.
QMargins TimeToTargetBars::margins() const {
  if (!slanted()) return {kLeft, kTop, kRight, kBottom};
  const QFontMetrics fm(font());
  int widest = 0;
  for (const TargetBar& b : m_bars.bars) widest = std::max(widest, fm.horizontalAdvance(slantedText(b)));
  const int below = static_cast<int>(std::ceil(widest * kSlantSin + fm.height() * kSlantCos)) + 8;
  const double slot = (width() - kLeft - kRight) / static_cast<double>(m_bars.bars.size());
  const int first = fm.horizontalAdvance(slantedText(m_bars.bars.front()));
  const int left = static_cast<int>(std::ceil(first * kSlantCos - slot / 2)) + 4;
  return {std::clamp(left, kLeft, std::max(kLeft, width() / 3)), kTop, kRight,
          std::clamp(below, kBottom, std::max(kBottom, height() / 2))};
}

QRectF TimeToTargetBars::plotRect() const {
  const QMargins m = margins();
  return QRectF(m.left(), m.top(), std::max(10, width() - m.left() - m.right()),
                std::max(10, height() - m.top() - m.bottom()));
}

double TimeToTargetBars::axisMax() const {
  double top = std::max(m_bars.reference.value_or(0), m_bars.marked.value_or(0));
  for (const TargetBar& b : m_bars.bars) {
    for (double t : b.times) top = std::max(top, t);
    if (b.mean) top = std::max(top, *b.mean + b.sd.value_or(0));
  }
  return top > 0 ? top * 1.1 : 1.0;
}

double TimeToTargetBars::yOf(double s) const {
  const QRectF p = plotRect();
  return p.bottom() - s / axisMax() * p.height();
}

double TimeToTargetBars::secondsAt(double y) const {
  const QRectF p = plotRect();
  return (p.bottom() - y) / p.height() * axisMax();
}

TimeToTargetBars::BarShape TimeToTargetBars::barShape(int i) const {
  const int n = static_cast<int>(m_bars.bars.size());
  if (i < 0 || i >= n) return {};
  const QRectF p = plotRect();
  const double slot = p.width() / n;
  const double w = std::min(slot * 0.6, 80.0);
  const double x = p.left() + slot * i + (slot - w) / 2;
  const TargetBar& b = m_bars.bars[static_cast<std::size_t>(i)];
  if (!b.mean) return {QRectF(x, p.top(), w, p.height()), p.top(), p.top()};  // the hatched "none reached" bar
  const double top = yOf(*b.mean);
  const double sd = b.sd.value_or(0);
  return {QRectF(x, top, w, p.bottom() - top), yOf(*b.mean + sd), yOf(std::max(0.0, *b.mean - sd))};
}

void TimeToTargetBars::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  painter.setRenderHint(QPainter::Antialiasing, true);
  const QRectF p = plotRect();
  const QFontMetrics fm(font());
  const QColor text = palette().color(QPalette::Text);
  painter.setPen(text);
  painter.drawText(QRectF(0, 4, width(), kTop - 6), Qt::AlignHCenter | Qt::AlignVCenter,
                   m_bars.target.isEmpty() ? tr("Time to target (s), mean ± std; lower is better")
                                           : tr("Time to accuracy %1 (s), mean ± std; lower is better").arg(m_bars.target));
  if (m_bars.bars.empty()) {
    painter.drawText(p, Qt::AlignCenter, tr("No runs"));
    return;
  }
  // The value axis: about five round ticks.
  const double top = axisMax();
  const double raw = top / 5;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double step = (raw / mag < 2 ? 2 : raw / mag < 5 ? 5 : 10) * mag;
  for (double v = 0; v <= top + 1e-9; v += step) {
    const double y = yOf(v);
    painter.setPen(QColor(0xE0, 0xE0, 0xE0));
    painter.drawLine(QPointF(p.left(), y), QPointF(p.right(), y));
    painter.setPen(text);
    painter.drawText(QRectF(0, y - 8, p.left() - 6, 16), Qt::AlignRight | Qt::AlignVCenter, QString::number(v, 'g', 4));
  }
  painter.setPen(text);
  painter.drawLine(p.bottomLeft(), p.bottomRight());
  painter.drawLine(p.bottomLeft(), p.topLeft());
  const double slot = p.width() / static_cast<double>(m_bars.bars.size());
  for (int i = 0; i < static_cast<int>(m_bars.bars.size()); ++i) {
    const TargetBar& b = m_bars.bars[static_cast<std::size_t>(i)];
    const BarShape s = barShape(i);
    if (!b.mean) {
      painter.fillRect(s.bar, QBrush(QColor(0xBB, 0xBB, 0xBB), Qt::BDiagPattern));
      painter.setPen(QColor(0x66, 0x66, 0x66));
      painter.drawText(s.bar, Qt::AlignCenter | Qt::TextWordWrap, tr("not reached"));
    } else {
      QColor fill = b.color;
      fill.setAlpha(170);
      painter.fillRect(s.bar, fill);
      painter.setPen(QPen(text, 1.5));
      if (b.sd) {
        const double cx = s.bar.center().x();
        painter.drawLine(QPointF(cx, s.errorTop), QPointF(cx, s.errorBottom));
        painter.drawLine(QPointF(cx - 6, s.errorTop), QPointF(cx + 6, s.errorTop));
        painter.drawLine(QPointF(cx - 6, s.errorBottom), QPointF(cx + 6, s.errorBottom));
      }
      painter.setPen(Qt::NoPen);
      painter.setBrush(QColor(0x22, 0x22, 0x22));
      for (std::size_t k = 0; k < b.times.size(); ++k) {  // each run, spread across the bar
        const double dx = b.times.size() > 1 ? (static_cast<double>(k) / (b.times.size() - 1) - 0.5) * s.bar.width() * 0.5 : 0;
        painter.drawEllipse(QPointF(s.bar.center().x() + dx, yOf(b.times[k])), 2.5, 2.5);
      }
      painter.setBrush(Qt::NoBrush);
      painter.setPen(text);
      // The mean above the error bar's cap, so that neither hides the other.
      const double above = std::min(s.bar.top(), s.errorTop) - 16;
      painter.drawText(QRectF(s.bar.left() - 20, above, s.bar.width() + 40, 14), Qt::AlignCenter, seconds(*b.mean));
    }
    // Under the bar: its label, how many runs reached the target, the misses; slanted
    // (ending under the bar's centre) where a slot is too narrow for them.
    const QString misses = underBar(b);
    const QColor missColor = b.diverged > 0 ? QColor(0xC0, 0x39, 0x2B) : QColor(0x55, 0x55, 0x55);
    if (slanted()) {
      painter.save();
      painter.translate(p.left() + slot * (i + 0.5), p.bottom() + 4);
      painter.rotate(-kSlant);
      const QString all = slantedText(b);
      const QString label = b.label + QStringLiteral("  ");
      const int allW = fm.horizontalAdvance(all), labelW = fm.horizontalAdvance(label);
      painter.setPen(text);
      painter.drawText(QPointF(-allW, fm.ascent()), label);
      painter.setPen(missColor);
      painter.drawText(QPointF(-allW + labelW, fm.ascent()), all.mid(label.size()));
      painter.restore();
    } else {
      const QRectF labelBox(p.left() + slot * i, p.bottom() + 2, slot, fm.height());
      painter.setPen(text);
      painter.drawText(labelBox, Qt::AlignHCenter | Qt::AlignTop, b.label);
      painter.setPen(missColor);
      painter.drawText(labelBox.translated(0, fm.height()), Qt::AlignHCenter | Qt::AlignTop, misses);
    }
  }
  paintMark(painter);
  if (m_bars.reference) {
    const double y = yOf(*m_bars.reference);
    painter.setPen(QPen(QColor(0x00, 0x9E, 0x73), 1.5, Qt::DashLine));
    painter.drawLine(QPointF(p.left(), y), QPointF(p.right(), y));
    painter.drawText(QPointF(p.left() + 4, y - 4),
                     tr("homogeneous reference %1 s (n=%2)").arg(seconds(*m_bars.reference)).arg(m_bars.referenceRuns));
  }
}

void TimeToTargetBars::paintMark(QPainter& painter) const {
  if (!m_bars.marked) return;
  for (int i = 0; i < static_cast<int>(m_bars.bars.size()); ++i) {
    if (m_bars.bars[static_cast<std::size_t>(i)].label != m_bars.markedBar) continue;
    const QRectF bar = barShape(i).bar;
    const double y = yOf(*m_bars.marked);
    const QColor ink(0xC0, 0x39, 0x2B);
    painter.setPen(QPen(ink, 2));
    painter.drawLine(QPointF(bar.left() - 6, y), QPointF(bar.right() + 6, y));
    painter.setBrush(ink);
    const double cx = bar.center().x();
    painter.drawPolygon(QPolygonF({QPointF(cx, y - 5), QPointF(cx + 5, y), QPointF(cx, y + 5), QPointF(cx - 5, y)}));
    painter.setBrush(Qt::NoBrush);
    // Its text right of the tick, on the background, so a bar's mean label under it stays apart.
    const QString text = m_bars.markedText + QStringLiteral(" ") + seconds(*m_bars.marked);
    const QRectF box = QFontMetricsF(font()).boundingRect(text).translated(bar.right() + 10, y + 4).adjusted(-2, -1, 2, 1);
    painter.fillRect(box, palette().color(QPalette::Base));
    painter.drawText(QPointF(bar.right() + 10, y + 4), text);
    return;
  }
}

}  // namespace dasp::ui
