// SPDX-License-Identifier: MIT
#pragma once
// The adoption of recovery LOCAL (experiment.proto RecoverySpec.LOCAL): through an outage
// each worker trains its own copy of the parameters by local SGD steps; a restarted server
// adopts the average of the copies, each weighted by its local steps (a copy without steps
// weighs nothing: it holds a version the server had). The server folds in each rejoining
// worker's copy as it arrives (add) and takes the average once all are in; a copy that
// returns after the adoption is merged into the current parameters by the same rule
// (mergeLocalCopy). Sums are in double in arrival order, so the same copies in the same
// order give the same bits.
// Threading: one owner; not thread-safe (the server calls it under its lock).

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dasp {

class LocalModelAverage {
 public:
  // Forgets every copy; the next ones have `parameters` floats.
  void reset(std::size_t parameters);
  // Folds in `copy` (parameters floats) trained `steps` local steps; a copy with none is
  // not counted (returns false).
  bool add(const float* copy, std::int64_t steps);
  std::int64_t steps() const { return m_steps; }
  int copies() const { return m_copies; }
  // The average, Σ steps_i · copy_i / Σ steps_i, into `out`. Needs steps() > 0.
  void average(float* out) const;
  // How far the copies drifted apart: their steps-weighted RMS distance (L2) from the
  // average, sqrt(Σ steps_i · |copy_i − average|² / Σ steps_i). 0 with one copy.
  double spread() const;

 private:
  std::vector<double> m_sum;  // Σ steps_i · copy_i
  double m_squares = 0;       // Σ steps_i · |copy_i|²
  std::int64_t m_steps = 0;
  int m_copies = 0;
};

// A copy that returns after the adoption: `current` (n floats, the weight of `merged`
// local steps so far) becomes (merged · current + steps · copy) / (merged + steps), element
// by element in double. Returns merged + steps, the weight of the result.
std::int64_t mergeLocalCopy(float* current, std::int64_t merged, const float* copy, std::int64_t steps,
                            std::size_t n);

}  // namespace dasp
