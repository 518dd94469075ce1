// SPDX-License-Identifier: MIT
#pragma once
// Parallel coordinates of a sweep (SweepTable, sweep_heatmap.h): one vertical axis per
// swept spec path (after a strategy axis when several strategies ran), then one for the
// mean time to target; one polyline per grid point of one strategy (a SweepRow),
// coloured by that time on the heatmap's viridis scale (darker = faster). A researcher
// sees at a glance which combinations of knob values are fast, also when more than two
// paths are swept and a heatmap would need facets. A grid point none of whose runs
// reached the target ends, dashed and grey, in the "not reached" band above the time axis.
//
// sweepParallelOf() lays the view out as numbers (heights in [0, 1] per axis), so it can
// be checked without pixels; SweepParallelChart draws it (QPainter) and highlights one
// line, e.g. the row chosen in a table.
//
// Threading: sweepParallelOf is a plain computation (any thread); the widget is GUI
// thread only.

#include "ui/charts/sweep_heatmap.h"

#include <QPointF>
#include <QRect>
#include <QString>
#include <QWidget>

#include <optional>
#include <vector>

namespace dasp::ui {

// The height of the "not reached" band on the time axis, above its top (1).
constexpr double kSweepNotReachedHeight = 1.12;

struct ParallelAxis {
  QString title;                 // the spec path, "strategy" or "time to target (s)"
  std::vector<QString> labels;   // tick labels
  std::vector<double> heights;   // where each label sits, in [0, 1] (0 = bottom)
};

struct ParallelLine {
  std::vector<double> heights;   // one per axis; on the time axis kSweepNotReachedHeight when not reached
  std::optional<double> mean;    // mean time to target (s) of the runs that reached it
  int runs = 0, reached = 0;
  QString label;                 // "dasp · strategy.dasp.delta=0.1 · cluster.count=4: 3.2 s (2/2 reached)"
};

struct SweepParallel {
  std::vector<ParallelAxis> axes;
  std::vector<ParallelLine> lines;  // in SweepTable::rows' order
  double lo = 0, hi = 0;            // the time axis's range in seconds (lo == hi: one value or none)
  bool empty() const { return lines.empty(); }
};

// The view of `table` (empty when it is not a sweep). A numeric path's values sit at
// heights proportional to their value, any other path's evenly in axis order; the time
// axis runs from the fastest mean (bottom) to the slowest.
SweepParallel sweepParallelOf(const SweepTable& table);

// A QPainter chart of a SweepParallel: axes with their titles and ticks, a colour bar
// legend, one polyline per line. The context menu exports it (PNG, SVG).
class SweepParallelChart : public QWidget {
  Q_OBJECT

 public:
  explicit SweepParallelChart(QWidget* parent = nullptr);

  void setView(SweepParallel view);
  const SweepParallel& view() const { return m_view; }
  // Draws line `index` on top, thicker (-1: none).
  void setHighlighted(int index);
  int highlighted() const { return m_highlighted; }
  // Where line `line` crosses axis `axis` in the widget, at its current size.
  QPointF pointOf(int line, int axis) const;
  QSize sizeHint() const override { return {720, 320}; }
  QSize minimumSizeHint() const override { return {360, 200}; }

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  QRect plotArea() const;
  double axisX(const QRect& area, int axis) const;  // where axis `axis` stands in `area`

  SweepParallel m_view;
  int m_highlighted = -1;
};

}  // namespace dasp::ui
