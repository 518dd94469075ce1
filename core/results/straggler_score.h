// SPDX-License-Identifier: MIT
#pragma once
// Straggler scores: how far each node's throughput is below the fastest node's and below
// its own best, each as a ratio in [0, 1], the way nvidia-resiliency-ext's straggler
// detection scores ranks (a relative score against the best rank, an individual score
// against the rank's own best history; 1 = as fast as the reference, 0.5 = half as fast).
// A node's score is the lower of the two; the straggler is the node with the lowest score,
// when that score is below the threshold (0.75, nvidia-resiliency-ext's default). A
// node's throughput is its iterations per second over a window; its best is the best of
// the window and the equal windows before it.
// Threading: pure functions, any thread.

#include <cstdint>
#include <functional>
#include <vector>

namespace dasp {

constexpr double kStragglerThreshold = 0.75;

struct NodeThroughput {
  double current = 0;  // iterations per second in the window (NaN: no window)
  double best = 0;     // the best of the node's windows so far, the current one included
};

struct StragglerScore {
  double relative = 0;    // current / the fastest node's current (NaN: unknown)
  double individual = 0;  // current / the node's own best (NaN: unknown)
  double score = 0;       // min(relative, individual), in [0, 1] (NaN: unknown)
  bool straggler = false;
};

// The throughput in the window (t0, t1] and its best over that window and the equal
// windows before it that start at or after 0 (the latest 256 of them). `count(a, b)` gives the node's iterations
// with a < t <= b. An empty window (t1 <= t0) has NaN figures.
NodeThroughput windowedThroughput(const std::function<std::int64_t(double, double)>& count, double t0, double t1);

// One score per node, in the order given; a node with a non-finite throughput has NaN
// scores and is never the straggler, and no node is one unless two have scores.
std::vector<StragglerScore> stragglerScores(const std::vector<NodeThroughput>& nodes,
                                            double threshold = kStragglerThreshold);

}  // namespace dasp
