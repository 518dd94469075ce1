// SPDX-License-Identifier: MIT
#include "ui/charts/sweep_parallel.h"

#include "ui/charts/chart_export.h"

#include <QFontMetrics>
#include <QLinearGradient>
#include <QPainter>
#include <QPainterPath>
#include <QPen>

#include <algorithm>
#include <cmath>
#include <limits>

namespace dasp::ui {

namespace {

// Heights of an axis's values: by value for a numeric path, else evenly in axis order.
std::vector<double> heightsOf(const SweepAxis& axis) {
  const std::size_t n = axis.values.size();
  std::vector<double> heights(n, 0.5);
  if (n < 2) return heights;
  if (axis.numeric) {
    std::vector<double> v;
    for (const QString& s : axis.values) v.push_back(s.isEmpty() ? std::nan("") : s.toDouble());
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (double x : v) {
      if (std::isfinite(x)) lo = std::min(lo, x), hi = std::max(hi, x);
    }
    if (hi > lo) {
      // A run without the field ("" — absent) sits at the bottom, below every value.
      for (std::size_t i = 0; i < n; ++i) heights[i] = std::isfinite(v[i]) ? (v[i] - lo) / (hi - lo) : 0;
      return heights;
    }
  }
  for (std::size_t i = 0; i < n; ++i) heights[i] = static_cast<double>(i) / static_cast<double>(n - 1);
  return heights;
}

QString secondsText(double s) { return QString::number(s, 'f', s < 10 ? 2 : 1); }

}  // namespace

SweepParallel sweepParallelOf(const SweepTable& table) {
  SweepParallel view;
  if (!table.isSweep() || table.rows.empty()) return view;
  std::vector<QString> strategies;
  for (const SweepRow& row : table.rows) {
    if (std::find(strategies.begin(), strategies.end(), row.strategy) == strategies.end()) {
      strategies.push_back(row.strategy);
    }
  }
  const bool strategyAxis = strategies.size() > 1;
  if (strategyAxis) {
    ParallelAxis axis{QStringLiteral("strategy"), strategies, {}};
    axis.heights = heightsOf(SweepAxis{QString(), strategies, false, false});
    view.axes.push_back(std::move(axis));
  }
  std::vector<const SweepAxis*> swept;
  for (const QString& path : table.sweepPaths) {
    const SweepAxis* a = table.axis(path);
    swept.push_back(a);
    ParallelAxis axis{path, a ? a->values : std::vector<QString>{}, a ? heightsOf(*a) : std::vector<double>{}};
    for (QString& label : axis.labels) {
      if (label.isEmpty()) label = QStringLiteral("(absent)");
    }
    view.axes.push_back(std::move(axis));
  }

  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const SweepRow& row : table.rows) {
    if (row.mean) lo = std::min(lo, *row.mean), hi = std::max(hi, *row.mean);
  }
  if (!std::isfinite(lo)) lo = hi = 0;
  view.lo = lo;
  view.hi = hi;
  ParallelAxis time{QStringLiteral("time to target (s)"), {}, {}};
  if (hi > lo) {
    for (int i = 0; i <= 4; ++i) {
      time.labels.push_back(secondsText(lo + (hi - lo) * i / 4.0));
      time.heights.push_back(i / 4.0);
    }
  } else if (hi > 0) {
    time.labels.push_back(secondsText(lo));
    time.heights.push_back(0.5);
  }
  time.labels.push_back(QStringLiteral("not reached"));
  time.heights.push_back(kSweepNotReachedHeight);
  view.axes.push_back(std::move(time));

  for (const SweepRow& row : table.rows) {
    ParallelLine line;
    line.mean = row.mean;
    line.runs = row.runs;
    line.reached = row.reached;
    QStringList parts{row.strategy};
    if (strategyAxis) {
      const auto at = std::find(strategies.begin(), strategies.end(), row.strategy) - strategies.begin();
      line.heights.push_back(view.axes.front().heights[static_cast<std::size_t>(at)]);
    }
    for (std::size_t k = 0; k < swept.size(); ++k) {
      const SweepAxis* a = swept[k];
      const QString value = k < row.values.size() ? row.values[k] : QString();
      double h = 0.5;
      if (a) {
        const auto at = std::find(a->values.begin(), a->values.end(), value) - a->values.begin();
        const std::vector<double>& heights = view.axes[k + (strategyAxis ? 1 : 0)].heights;
        if (static_cast<std::size_t>(at) < heights.size()) h = heights[static_cast<std::size_t>(at)];
      }
      line.heights.push_back(h);
      parts << table.sweepPaths[static_cast<int>(k)] + QLatin1Char('=') + (value.isEmpty() ? QStringLiteral("(absent)") : value);
    }
    line.heights.push_back(!row.mean ? kSweepNotReachedHeight : hi > lo ? (*row.mean - lo) / (hi - lo) : 0.5);
    line.label = parts.join(QStringLiteral(" · ")) + QStringLiteral(": ") +
                 (row.mean ? secondsText(*row.mean) + QStringLiteral(" s") : QStringLiteral("not reached")) +
                 QStringLiteral(" (%1/%2 reached)").arg(row.reached).arg(row.runs);
    view.lines.push_back(std::move(line));
  }
  return view;
}

SweepParallelChart::SweepParallelChart(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("sweepParallel"));
  installExportMenu(this, QStringLiteral("sweep-parallel"));
}

void SweepParallelChart::setView(SweepParallel view) {
  m_view = std::move(view);
  m_highlighted = -1;
  update();
}

void SweepParallelChart::setHighlighted(int index) {
  m_highlighted = index >= 0 && index < static_cast<int>(m_view.lines.size()) ? index : -1;
  update();
}

QRect SweepParallelChart::plotArea() const {
  // Room for the axis titles above, the tick labels beside the axes and the colour bar.
  return rect().adjusted(60, 48, -110, -24);
}

double SweepParallelChart::axisX(const QRect& area, int axis) const {
  const int axes = static_cast<int>(m_view.axes.size());
  return axes < 2 ? area.center().x() : area.left() + area.width() * static_cast<double>(axis) / (axes - 1);
}

QPointF SweepParallelChart::pointOf(int line, int axis) const {
  const QRect area = plotArea();
  const double x = axisX(area, axis);
  const double h = m_view.lines[static_cast<std::size_t>(line)].heights[static_cast<std::size_t>(axis)];
  // The "not reached" band sits above the top of the time axis, inside the margin.
  return {x, area.bottom() - h * area.height() / kSweepNotReachedHeight};
}

void SweepParallelChart::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), Qt::white);
  p.setRenderHint(QPainter::Antialiasing);
  const QFontMetrics fm(font());
  if (m_view.empty()) {
    p.setPen(palette().color(QPalette::PlaceholderText));
    p.drawText(rect(), Qt::AlignCenter | Qt::TextWordWrap,
               tr("Not a sweep: no spec field other than the strategy differs between these runs."));
    return;
  }
  const QRect area = plotArea();
  const int axes = static_cast<int>(m_view.axes.size());
  // A reached line's height on the time axis is its place on the time scale: its colour.
  auto colourOf = [&](const ParallelLine& line) {
    return line.mean ? viridis(line.heights.back()) : QColor(150, 150, 150);
  };
  auto drawLine = [&](int i, double width) {
    const ParallelLine& line = m_view.lines[static_cast<std::size_t>(i)];
    QPainterPath path(pointOf(i, 0));
    for (int a = 1; a < axes; ++a) path.lineTo(pointOf(i, a));
    QPen pen(colourOf(line), width);
    if (!line.mean) pen.setStyle(Qt::DashLine);
    p.setPen(pen);
    p.setBrush(Qt::NoBrush);
    p.drawPath(path);
  };
  // Slowest first, so that the fast lines lie on top.
  std::vector<int> order(m_view.lines.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const auto& la = m_view.lines[static_cast<std::size_t>(a)];
    const auto& lb = m_view.lines[static_cast<std::size_t>(b)];
    const double ta = la.mean.value_or(std::numeric_limits<double>::infinity());
    const double tb = lb.mean.value_or(std::numeric_limits<double>::infinity());
    return ta > tb;
  });
  for (int i : order) {
    if (i != m_highlighted) drawLine(i, 1.6);
  }
  if (m_highlighted >= 0) drawLine(m_highlighted, 4.0);
  // Axes over the lines: a line, its title above, its ticks to the left.
  for (int a = 0; a < axes; ++a) {
    const ParallelAxis& axis = m_view.axes[static_cast<std::size_t>(a)];
    const double x = axisX(area, a);
    p.setPen(QPen(QColor(60, 60, 60), 1.2));
    p.drawLine(QPointF(x, area.bottom()), QPointF(x, area.bottom() - area.height() / kSweepNotReachedHeight));
    const QString title = fm.elidedText(axis.title, Qt::ElideLeft, std::max(80, area.width() / std::max(1, axes)));
    p.drawText(QRectF(x - 120, area.top() - 44, 240, 18), Qt::AlignCenter, title);
    for (std::size_t k = 0; k < axis.labels.size(); ++k) {
      const double y = area.bottom() - axis.heights[k] * area.height() / kSweepNotReachedHeight;
      p.drawLine(QPointF(x - 4, y), QPointF(x, y));
      const QRectF box(x - 8 - 110, y - 9, 110, 18);
      p.fillRect(box.adjusted(110 - fm.horizontalAdvance(axis.labels[k]) - 4, 2, 0, -2), QColor(255, 255, 255, 200));
      p.drawText(box, Qt::AlignRight | Qt::AlignVCenter, axis.labels[k]);
    }
  }
  // The colour bar: what a line's colour means.
  const QRect bar(area.right() + 40, area.bottom() - area.height() * 0.85, 14, static_cast<int>(area.height() * 0.8));
  QLinearGradient gradient(bar.bottomLeft(), bar.topLeft());
  for (int i = 0; i <= 10; ++i) gradient.setColorAt(i / 10.0, viridis(i / 10.0));
  p.fillRect(bar, gradient);
  p.setPen(QColor(60, 60, 60));
  p.drawRect(bar);
  p.drawText(QRectF(bar.right() + 4, bar.bottom() - 9, 60, 18), Qt::AlignLeft | Qt::AlignVCenter,
             secondsText(m_view.lo) + QStringLiteral(" s"));
  p.drawText(QRectF(bar.right() + 4, bar.top() - 9, 60, 18), Qt::AlignLeft | Qt::AlignVCenter,
             secondsText(m_view.hi) + QStringLiteral(" s"));
}

}  // namespace dasp::ui
