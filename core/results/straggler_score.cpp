// SPDX-License-Identifier: MIT
#include "core/results/straggler_score.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace dasp {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int kMaxWindows = 256;

// a / b clamped to [0, 1]; NaN when it has no meaning. A reference of 0 (nobody iterated)
// gives 1: nobody is slower than anyone else.
double ratio(double a, double b) {
  if (!std::isfinite(a) || !std::isfinite(b) || a < 0 || b < 0) return kNaN;
  if (b == 0) return 1.0;
  return std::clamp(a / b, 0.0, 1.0);
}

}  // namespace

NodeThroughput windowedThroughput(const std::function<std::int64_t(double, double)>& count, double t0, double t1) {
  const double w = t1 - t0;
  if (!(w > 0) || !std::isfinite(w)) return {kNaN, kNaN};
  NodeThroughput out;
  out.current = static_cast<double>(count(t0, t1)) / w;
  out.best = out.current;
  // Whole windows only: a partial one at the start would understate the node's best. The
  // most recent kMaxWindows bound the cost of a long run seen through a narrow window.
  int windows = 0;
  for (double b = t0; b - w >= -1e-9 && windows < kMaxWindows; b -= w, ++windows) {
    out.best = std::max(out.best, static_cast<double>(count(b - w, b)) / w);
  }
  return out;
}

std::vector<StragglerScore> stragglerScores(const std::vector<NodeThroughput>& nodes, double threshold) {
  std::vector<StragglerScore> out(nodes.size(), StragglerScore{kNaN, kNaN, kNaN, false});
  double fastest = -1;
  for (const NodeThroughput& n : nodes) {
    if (std::isfinite(n.current)) fastest = std::max(fastest, n.current);
  }
  if (fastest < 0) return out;
  int scored = 0;
  std::size_t lowest = nodes.size();
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    StragglerScore& s = out[i];
    s.relative = ratio(nodes[i].current, fastest);
    s.individual = ratio(nodes[i].current, nodes[i].best);
    if (!std::isfinite(s.relative) || !std::isfinite(s.individual)) continue;
    s.score = std::min(s.relative, s.individual);
    ++scored;
    if (lowest == nodes.size() || s.score < out[lowest].score) lowest = i;
  }
  if (scored >= 2 && out[lowest].score < threshold) out[lowest].straggler = true;
  return out;
}

}  // namespace dasp
