// SPDX-License-Identifier: MIT
#pragma once
// ParameterStore: the parameter server's model — flat float parameters, the SGD momentum
// buffer and the version. An update is one vectorized pass over memory that folds up to
// `count` gradients with their weights into the momentum and the parameters:
//   g = Σ_k w_k·g_k;  v = μ·v + g + λ·θ;  θ -= η·v;  version++.
// (PyTorch's SGD with dampening 0 is the same rule.) Buffers are allocated once.
// Threading: not thread-safe; the server guards it with its lock.

#include <cstdint>
#include <vector>

namespace dasp {

class ParameterStore {
 public:
  ParameterStore(std::vector<float> initial, double momentum, double weightDecay);

  std::int64_t size() const { return static_cast<std::int64_t>(m_params.size()); }
  std::int64_t version() const { return m_version; }
  const float* parameters() const { return m_params.data(); }
  float* mutableParameters() { return m_params.data(); }
  const std::vector<float>& momentumBuffer() const { return m_momentum; }

  // Applies one update of `count` gradients (each `size()` floats) weighted by `weights`,
  // with learning rate `lr`. Returns the new version.
  std::int64_t apply(const float* const* gradients, const double* weights, int count, double lr);

  // Folds `count` weighted gradients into `out` (size() floats) with the same float
  // operations as apply(): applying `out` with weight 1 afterwards gives bitwise the same
  // parameters as applying the gradients directly (chain replication relies on it).
  void combine(const float* const* gradients, const double* weights, int count, float* out) const;

  // Replaces parameters, momentum and version (restore from a checkpoint or a replica).
  void restore(const float* params, const float* momentum, std::int64_t version);
  void setVersion(std::int64_t version) { m_version = version; }

 private:
  std::vector<float> m_params;
  std::vector<float> m_momentum;
  double m_mu;
  double m_lambda;
  std::int64_t m_version = 0;
};

// True when every value is finite; gradients with NaN/Inf are rejected before they are
// held or applied.
bool allFinite(const float* values, std::int64_t count);

}  // namespace dasp
