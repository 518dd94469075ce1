// SPDX-License-Identifier: MIT
#pragma once
// Min/max-per-pixel decimation of a line series. A chart never hands Qt Charts more
// points than its plot has pixels: a live run at 10 Hz with 10^5 points per series would
// otherwise spend the GUI thread on drawing lines that land on the same pixel. Keeping the
// lowest and highest point of every pixel column keeps the drawn envelope identical
// (spikes, dips and the ends stay visible), unlike every-k-th thinning.
// Threading: pure functions, callable from any thread.

#include <QList>
#include <QPointF>

#include <cstddef>
#include <vector>

namespace dasp::ui {

// Decimates `points` (sorted by x) for a plot `pixels` columns wide spanning [xMin, xMax].
// Each column keeps its lowest and highest point, in x order, and the first and last
// point are always kept, so the result has at most 2*pixels + 2 points. Series no longer
// than that come back unchanged. Points with a non-finite x or y are dropped. When
// xMin < xMax, points outside the range are dropped except the nearest one on each side
// (so the line still runs to the plot's edges); otherwise the data's own range is used.
// pixels < 1 counts as 1.
QList<QPointF> decimateMinMax(const QPointF* points, std::size_t count, int pixels, double xMin = 0,
                              double xMax = 0);

inline QList<QPointF> decimateMinMax(const std::vector<QPointF>& points, int pixels, double xMin = 0,
                                     double xMax = 0) {
  return decimateMinMax(points.data(), points.size(), pixels, xMin, xMax);
}

inline QList<QPointF> decimateMinMax(const QList<QPointF>& points, int pixels, double xMin = 0,
                                     double xMax = 0) {
  return decimateMinMax(points.constData(), static_cast<std::size_t>(points.size()), pixels, xMin, xMax);
}

}  // namespace dasp::ui
