// SPDX-License-Identifier: MIT
#include "ui/charts/staleness_histogram.h"

#include <QFontMetrics>
#include <QPainter>

#include <algorithm>
#include <cmath>

namespace dasp::ui {

namespace {

const QColor kBarColor(0xCC, 0x79, 0xA7);

// 1, 2 or 5 times a power of ten, at least 1.
std::int64_t niceStep(std::int64_t max, int ticks) {
  const double raw = static_cast<double>(max) / std::max(ticks, 1);
  if (raw <= 1) return 1;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / mag;
  return static_cast<std::int64_t>((f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * mag);
}

}  // namespace

StalenessHistogram::StalenessHistogram(QWidget* parent) : QWidget(parent) {
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Preferred);
}

StalenessHistogram::~StalenessHistogram() = default;

void StalenessHistogram::setRun(const RunData* run) {
  m_run = run;
  refresh();
}

void StalenessHistogram::setUntil(double t) {
  m_until = std::isnan(t) ? std::numeric_limits<double>::infinity() : t;
  refresh();
}

std::vector<std::int64_t> StalenessHistogram::histogram(const RunData& run, double until) {
  std::vector<std::int64_t> counts;
  for (const NodeData& n : run.nodes) {
    for (const Point& p : n.staleness) {
      if (!std::isfinite(p.value) || p.value < -0.5 || p.t > until) continue;
      const auto bin = static_cast<std::size_t>(std::lround(std::min(p.value, static_cast<double>(kMaxBins - 1))));
      if (counts.size() <= bin) counts.resize(bin + 1, 0);
      ++counts[bin];
    }
  }
  return counts;
}

void StalenessHistogram::refresh() {
  m_counts = m_run != nullptr ? histogram(*m_run, m_until) : std::vector<std::int64_t>{};
  m_total = 0;
  double sum = 0;
  for (std::size_t i = 0; i < m_counts.size(); ++i) {
    m_total += m_counts[i];
    sum += static_cast<double>(i) * static_cast<double>(m_counts[i]);
  }
  m_mean = m_total > 0 ? sum / static_cast<double>(m_total) : 0;
  update();
}

QSize StalenessHistogram::sizeHint() const { return QSize(480, 220); }

QSize StalenessHistogram::minimumSizeHint() const { return QSize(200, 120); }

void StalenessHistogram::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().color(QPalette::Base));
  const QColor text = palette().color(QPalette::WindowText);
  const QFontMetrics fm(font());
  p.setPen(text);
  const QString title = m_total > 0 ? tr("staleness of applied gradients (n=%1, mean %2)")
                                          .arg(m_total)
                                          .arg(m_mean, 0, 'f', 2)
                                    : tr("staleness of applied gradients");
  p.drawText(QRect(4, 2, width() - 8, fm.height()), Qt::AlignLeft | Qt::AlignVCenter, title);
  if (m_total == 0) {
    p.setPen(palette().color(QPalette::PlaceholderText));
    p.drawText(rect(), Qt::AlignCenter, tr("no applied gradients yet"));
    return;
  }
  const std::int64_t maxCount = *std::max_element(m_counts.begin(), m_counts.end());
  const int left = fm.horizontalAdvance(QString::number(maxCount)) + 10;
  const QRect plot(left, 2 * fm.height() + 4, std::max(width() - left - 10, 10),
                   std::max(height() - 3 * fm.height() - 16, 10));
  // y axis: counts.
  const std::int64_t step = niceStep(maxCount, std::max(plot.height() / 30, 2));
  const std::int64_t top = (maxCount + step - 1) / step * step;
  p.setPen(QColor(0xDD, 0xDD, 0xDD));
  for (std::int64_t v = 0; v <= top; v += step) {
    const int y = plot.bottom() - static_cast<int>(static_cast<double>(v) / static_cast<double>(top) * plot.height());
    p.setPen(QColor(0xE4, 0xE4, 0xE4));
    p.drawLine(plot.left(), y, plot.right(), y);
    p.setPen(text);
    p.drawText(QRect(0, y - fm.height() / 2, left - 4, fm.height()), Qt::AlignRight | Qt::AlignVCenter,
               QString::number(v));
  }
  // Bars, one per integer staleness, labelled as often as the width allows.
  const int bins = static_cast<int>(m_counts.size());
  const double bw = std::min(static_cast<double>(plot.width()) / bins, 60.0);  // one bin is not a wall
  const int labelEvery = std::max(1, static_cast<int>(std::ceil((fm.horizontalAdvance(QStringLiteral("≥00")) + 6) / bw)));
  for (int i = 0; i < bins; ++i) {
    const double h = static_cast<double>(m_counts[static_cast<std::size_t>(i)]) / static_cast<double>(top) * plot.height();
    const QRectF bar(plot.left() + i * bw + bw * 0.1, plot.bottom() - h, std::max(bw * 0.8, 1.0), h);
    p.fillRect(bar, kBarColor);
    if (i % labelEvery == 0) {
      const bool capped = i == kMaxBins - 1;
      p.setPen(text);
      p.drawText(QRectF(plot.left() + i * bw - 20 + bw / 2, plot.bottom() + 2, 40, fm.height()), Qt::AlignCenter,
                 capped ? QStringLiteral("≥%1").arg(i) : QString::number(i));
    }
  }
  p.setPen(text);
  p.drawLine(plot.bottomLeft(), plot.bottomRight());
}

}  // namespace dasp::ui
