// SPDX-License-Identifier: MIT
#pragma once
// GradientGuard: what the parameter server (net/server) and the virtual-cluster engine
// (core/sim) do with a pushed gradient before the sync policy sees it, by its L2 norm
// (strategy.gradient_guard, experiment.proto):
//   - a non-finite gradient is always refused;
//   - a norm above max_norm is refused in every mode (so a first gradient of 3e38 is too);
//   - REFUSE_OUTLIERS: a norm above outlier_factor × the median of the last `window`
//     accepted norms is refused, once `warmup` norms have been accepted;
//   - CLIP: a norm above clip_norm is applied scaled down to clip_norm.
// The median is over accepted gradients only, so refused outliers never move it.
// A client that holds the run token can therefore move the parameters by at most
// lr × (the limit) per gradient, and never make them non-finite.
//
// Threading: not thread-safe; the server calls check() under its lock (gradientNorm() is a
// pure function, called outside it).

#include "dasp/v1/experiment.pb.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dasp {

// The L2 norm of `count` floats, summed in double; +inf or nan when a value is not finite
// (and +inf when the sum overflows double, which finite floats cannot make).
//
// The sum has one fixed order, whatever pieces it is taken in and however the values are
// split among the shards of a sharded server: the values fall into blocks of kNormBlock
// (the last may be shorter); a block's squares are summed in four lanes (the loop then
// vectorizes without reassociation) and its sum is ((l0 + l1) + (l2 + l3)); the squared
// norm is the blocks' sums added in block order, starting from 0. A shard whose range
// begins at a multiple of kNormBlock sums whole blocks of the model, so shard 0 continues
// the sum with the other shards' block sums (relayed in order) and gets the bits of one
// server.
inline constexpr std::int64_t kNormBlock = 1024;
double gradientNorm(const float* values, std::int64_t count);

// gradientNorm() taken a piece at a time, in order (pieces of any length): a receiver
// takes the norm of a gradient as its chunks land, while they are still in cache, instead
// of in a pass of its own after the last one. norm() equals gradientNorm() of all the
// values added, bit for bit.
class GradientNormSum {
 public:
  void add(const float* values, std::int64_t count);
  // Continues the sum with blocks summed elsewhere (another shard's blockSums(), in order).
  // Only at a block boundary: after whole blocks (or nothing) were added here.
  void addBlockSums(const double* sums, std::size_t count);
  double squaredNorm() const;
  double norm() const;
  // Records the sum of every block as it completes, for blockSums().
  void keepBlockSums() { m_keep = true; }
  // The sums of the blocks added so far, the open (last, shorter) block's included.
  std::vector<double> blockSums() const;
  // Whether the sum stands at a block boundary (addBlockSums() may follow).
  bool atBlockBoundary() const { return m_inBlock == 0; }

 private:
  double openBlockSum() const { return (m_lanes[0] + m_lanes[1]) + (m_lanes[2] + m_lanes[3]); }
  void closeBlock();

  double m_total = 0;                  // the completed blocks' sums, folded in order
  double m_lanes[4] = {0, 0, 0, 0};    // the open block's lanes
  std::int64_t m_inBlock = 0;          // values of the open block added so far
  bool m_keep = false;
  std::vector<double> m_blockSums;     // keepBlockSums(): the completed blocks'
};

// The guard's spec with every default filled in (the values a run uses).
v1::GradientGuardSpec resolvedGuardSpec(const v1::GradientGuardSpec& spec);

class GradientGuard {
 public:
  enum class Verdict {
    Accept,           // apply as it is
    Clip,             // apply scaled by `scale` (CLIP)
    RefuseNonFinite,  // NaN or Inf
    RefuseCap,        // above max_norm
    RefuseOutlier,    // above outlier_factor × the running median
  };
  struct Decision {
    Verdict verdict = Verdict::Accept;
    double norm = 0;
    double scale = 1;   // weight to apply the gradient with (Clip: clip_norm / norm)
    double limit = 0;   // the bound it was held to (0 while none applies but max_norm)
    double median = 0;  // REFUSE_OUTLIERS: the running median at the decision (0 in warm-up)
    bool refused() const { return verdict != Verdict::Accept && verdict != Verdict::Clip; }
  };

  explicit GradientGuard(const v1::GradientGuardSpec& spec);

  // Decides on a gradient of L2 norm `norm` (gradientNorm()); an accepted or clipped norm
  // joins the window.
  Decision check(double norm);

  // The running median of accepted norms (0 before any).
  double median() const;
  std::int64_t accepted() const { return m_accepted; }
  std::int64_t refused() const { return m_refused; }
  std::int64_t clipped() const { return m_clipped; }
  // The largest norm ÷ running median among accepted gradients after the warm-up
  // (REFUSE_OUTLIERS): how close legitimate training came to outlier_factor.
  double maxAcceptedRatio() const { return m_maxRatio; }
  const v1::GradientGuardSpec& spec() const { return m_spec; }

 private:
  v1::GradientGuardSpec m_spec;
  std::vector<double> m_window;  // ring buffer of the last accepted norms
  std::size_t m_next = 0;        // where the next accepted norm goes
  mutable std::vector<double> m_scratch;
  std::int64_t m_accepted = 0, m_refused = 0, m_clipped = 0;
  double m_maxRatio = 0;
};

// "accepted", "clipped", "refused: not finite", ... for logs.
const char* verdictName(GradientGuard::Verdict verdict);
// What a person reads about a refused or clipped gradient of worker `rank`: the norm, the
// bound and the spec field that set it (events' detail text, the worker's error status).
std::string describeDecision(const GradientGuard::Decision& d, int rank);

}  // namespace dasp
