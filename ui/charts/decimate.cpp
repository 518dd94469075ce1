// SPDX-License-Identifier: MIT
#include "ui/charts/decimate.h"

#include <algorithm>
#include <cmath>

namespace dasp::ui {

namespace {

bool finitePoint(const QPointF& p) { return std::isfinite(p.x()) && std::isfinite(p.y()); }

}  // namespace

QList<QPointF> decimateMinMax(const QPointF* points, std::size_t count, int pixels, double xMin, double xMax) {
  QList<QPointF> out;
  if (points == nullptr || count == 0) return out;
  pixels = std::max(pixels, 1);

  // The slice [begin, end) to draw: the visible range plus one neighbour on each side.
  std::size_t begin = 0, end = count;
  const bool ranged = std::isfinite(xMin) && std::isfinite(xMax) && xMin < xMax;
  if (ranged) {
    const QPointF* first = std::lower_bound(points, points + count, xMin,
                                            [](const QPointF& p, double x) { return p.x() < x; });
    const QPointF* last = std::upper_bound(points, points + count, xMax,
                                           [](double x, const QPointF& p) { return x < p.x(); });
    begin = static_cast<std::size_t>(first - points);
    end = static_cast<std::size_t>(last - points);
    if (begin > 0) --begin;
    if (end < count) ++end;
  }
  // Finite points only; indices into `points` keep the order.
  std::vector<std::size_t> idx;
  idx.reserve(end - begin);
  for (std::size_t i = begin; i < end; ++i) {
    if (finitePoint(points[i])) idx.push_back(i);
  }
  if (idx.empty()) return out;
  const std::size_t cap = 2 * static_cast<std::size_t>(pixels) + 2;
  if (idx.size() <= cap) {
    out.reserve(static_cast<qsizetype>(idx.size()));
    for (std::size_t i : idx) out.append(points[i]);
    return out;
  }

  double x0 = ranged ? xMin : points[idx.front()].x();
  double x1 = ranged ? xMax : points[idx.back()].x();
  if (!(x1 > x0)) x1 = x0 + 1;
  const double scale = pixels / (x1 - x0);
  auto column = [&](double x) {
    const double c = std::floor((x - x0) * scale);
    if (!(c >= 0)) return 0;  // also NaN
    return c >= pixels ? pixels - 1 : static_cast<int>(c);
  };

  out.reserve(static_cast<qsizetype>(cap));
  std::size_t lastEmitted = idx.front();
  out.append(points[lastEmitted]);
  auto push = [&](std::size_t i) {
    if (i > lastEmitted) {
      out.append(points[i]);
      lastEmitted = i;
    }
  };
  auto flush = [&](std::size_t lo, std::size_t hi) {
    if (lo <= hi) {
      push(lo);
      push(hi);
    } else {
      push(hi);
      push(lo);
    }
  };

  int col = column(points[idx.front()].x());
  std::size_t lo = idx.front(), hi = idx.front();
  for (std::size_t k = 1; k < idx.size(); ++k) {
    const std::size_t i = idx[k];
    const int c = column(points[i].x());
    if (c != col) {
      flush(lo, hi);
      col = c;
      lo = hi = i;
      continue;
    }
    if (points[i].y() < points[lo].y()) lo = i;
    if (points[i].y() > points[hi].y()) hi = i;
  }
  flush(lo, hi);
  push(idx.back());
  return out;
}

}  // namespace dasp::ui
