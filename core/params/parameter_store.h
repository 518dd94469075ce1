// SPDX-License-Identifier: MIT
#pragma once
// ParameterStore: the parameter server's model — flat float parameters, the SGD momentum
// buffer and the version. An update is one vectorized pass over memory that folds up to
// `count` gradients with their weights into the momentum and the parameters:
//   g = Σ_k w_k·g_k;  v = μ·v + g + λ·θ;  θ -= η·v;  version++.
// (PyTorch's SGD with dampening 0 is the same rule.) Buffers are allocated once.
// A snapshot() is an immutable version of the parameters: a pull sends it without copying
// it. An update that finds the current buffer held by a snapshot writes the new version to
// a buffer no snapshot holds (copy on write), so a snapshot never changes under its reader.
// An update over a large model may be shared with helper threads (setApplyThreads); each
// value is computed by the same operations whichever thread computes it, so the result is
// bitwise that of one thread.
// Threading: not thread-safe; the server guards it with its lock. A snapshot may be read,
// and dropped, on any thread without that lock.

#include "core/params/range_team.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

namespace dasp {

class ParameterStore {
 public:
  ParameterStore(std::vector<float> initial, double momentum, double weightDecay);

  using Snapshot = std::shared_ptr<const std::vector<float>>;

  // Constant, so it may be read without the server's lock (the buffer it was read from
  // before is swapped under the lock).
  std::int64_t size() const { return m_size; }
  std::int64_t version() const { return m_version; }
  // Changes with every apply() and restore(), unlike the version, which a restore may set
  // back: parameters copied at one revision are the current ones while it is unchanged.
  std::int64_t revision() const { return m_revision; }
  const float* parameters() const { return m_params->values.data(); }
  // The current version's parameters, unchanged for as long as the snapshot is held.
  Snapshot snapshot() const;
  const std::vector<float>& momentumBuffer() const { return m_momentum; }

  // Applies one update of `count` gradients (each `size()` floats) weighted by `weights`,
  // with learning rate `lr`. Returns the new version. `mirror`, when given (size()
  // floats), receives the new parameters in the same pass, each block while it is in
  // cache: a shared-memory worker's parameter slot, which then needs no copy of its own.
  std::int64_t apply(const float* const* gradients, const double* weights, int count, double lr,
                     float* mirror = nullptr);

  // Folds `count` weighted gradients into `out` (size() floats) with the same float
  // operations as apply(): applying `out` with weight 1 afterwards gives bitwise the same
  // parameters as applying the gradients directly (chain replication relies on it).
  void combine(const float* const* gradients, const double* weights, int count, float* out) const;

  // Replaces parameters, momentum and version (restore from a checkpoint or a replica).
  void restore(const float* params, const float* momentum, std::int64_t version);
  void setVersion(std::int64_t version) { m_version = version; }

  // Updates of at least kParallelFloats values are shared among `threads` threads, the
  // caller's included (1, the default: the caller alone).
  static constexpr std::size_t kParallelFloats = 1u << 20;
  void setApplyThreads(int threads);
  // What the parameter server uses: this machine's cores, at most 4 (beyond, a pass over
  // memory gains little).
  static int serverApplyThreads();
  int applyThreads() const { return m_team ? m_team->threads() : 1; }

  // Buffers the store has moved to because a snapshot held the current one (copies on write).
  std::int64_t copiesOnWrite() const { return m_copiesOnWrite; }

 private:
  // The parameters, writable: the current buffer when no snapshot holds it, otherwise a
  // spare that none holds (allocated when none is free), holding the current values when
  // `keepValues`. Spares are reused, so a long run allocates at most one per reader.
  float* writableParameters(bool keepValues);
  // apply()'s pass over the values [begin, end) (whole blocks but for the last).
  void applyRange(std::size_t begin, std::size_t end, float* theta, const float* const* gradients,
                  const double* weights, int count, float eta, float* mirror);

  // A parameter buffer and the number of snapshots that hold it. A reader drops its
  // snapshot with a release decrement, which the writer's acquire load of the count sees
  // before it writes the buffer again (an ordering ThreadSanitizer follows, as it does not
  // a fence after shared_ptr's relaxed use_count()).
  struct Buffer {
    explicit Buffer(std::vector<float> v) : values(std::move(v)) {}
    std::vector<float> values;
    mutable std::atomic<std::int64_t> snapshots{0};
  };
  static bool unheld(const std::shared_ptr<Buffer>& buffer);

  std::shared_ptr<Buffer> m_params;
  std::vector<std::shared_ptr<Buffer>> m_spares;
  std::int64_t m_size;
  std::int64_t m_copiesOnWrite = 0;
  std::vector<float> m_momentum;
  double m_mu;
  double m_lambda;
  std::int64_t m_version = 0;
  std::int64_t m_revision = 0;
  std::unique_ptr<RangeTeam> m_team;  // null: one thread
};

// True when every value is finite; gradients with NaN/Inf are rejected before they are
// held or applied.
bool allFinite(const float* values, std::int64_t count);

}  // namespace dasp
