// SPDX-License-Identifier: MIT
#include "core/params/parameter_store.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>

namespace dasp {
// No snapshot holds `buffer`: every reader's decrement is seen, and with it their reads.
bool ParameterStore::unheld(const std::shared_ptr<Buffer>& buffer) {
  return buffer->snapshots.load(std::memory_order_acquire) == 0;
}

ParameterStore::Snapshot ParameterStore::snapshot() const {
  m_params->snapshots.fetch_add(1, std::memory_order_relaxed);  // under the server's lock, as every write
  std::shared_ptr<Buffer> hold = m_params;  // a snapshot outlives even the store
  const std::vector<float>* values = &hold->values;
  return Snapshot(values, [hold = std::move(hold)](const std::vector<float>*) {
    hold->snapshots.fetch_sub(1, std::memory_order_release);
  });
}

ParameterStore::ParameterStore(std::vector<float> initial, double momentum, double weightDecay)
    : m_params(std::make_shared<Buffer>(std::move(initial))),
      m_size(static_cast<std::int64_t>(m_params->values.size())),
      m_momentum(m_params->values.size(), 0.0f),
      m_mu(momentum),
      m_lambda(weightDecay) {}

float* ParameterStore::writableParameters(bool keepValues) {
  if (unheld(m_params)) return m_params->values.data();
  auto spare = std::find_if(m_spares.begin(), m_spares.end(), unheld);
  if (spare == m_spares.end()) {
    m_spares.push_back(std::make_shared<Buffer>(std::vector<float>(m_params->values.size())));
    spare = m_spares.end() - 1;
  }
  if (keepValues) std::memcpy((*spare)->values.data(), m_params->values.data(), m_params->values.size() * sizeof(float));
  std::swap(*spare, m_params);  // the held buffer becomes a spare, free once its readers are done
  ++m_copiesOnWrite;
  return m_params->values.data();
}

namespace {
// Blocks keep the partial sums in L1 while several gradients are folded in, so each
// gradient is read once and θ, v are read and written once; a block's new θ is copied
// to the mirror while it is still in cache.
constexpr std::size_t kBlock = 2048;
}  // namespace

int ParameterStore::serverApplyThreads() {
  return static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 4u));
}

void ParameterStore::setApplyThreads(int threads) {
  if (threads == applyThreads()) return;
  m_team = threads > 1 ? std::make_unique<RangeTeam>(threads) : nullptr;
}

std::int64_t ParameterStore::apply(const float* const* gradients, const double* weights, int count,
                                   double lr, float* mirror) {
  const std::size_t n = m_params->values.size();
  float* theta = writableParameters(true);
  const float eta = static_cast<float>(lr);
  if (m_team && n >= kParallelFloats) {
    m_team->run(n, kBlock, [&](std::size_t begin, std::size_t end) {
      applyRange(begin, end, theta, gradients, weights, count, eta, mirror);
    });
  } else {
    applyRange(0, n, theta, gradients, weights, count, eta, mirror);
  }
  ++m_revision;
  return ++m_version;
}

void ParameterStore::applyRange(std::size_t begin, std::size_t end, float* theta, const float* const* gradients,
                                const double* weights, int count, float eta, float* mirror) {
  float* __restrict v = m_momentum.data();
  const float mu = static_cast<float>(m_mu);
  const float lambda = static_cast<float>(m_lambda);
  float sum[kBlock];
  for (std::size_t b = begin; b < end; b += kBlock) {
    const std::size_t len = std::min(kBlock, end - b);
    float* __restrict t = theta + b;
    float* __restrict m = v + b;
    if (count == 1) {
      // One gradient (ASP, DASP's ASYNC nodes, a one-member round): no partial sums.
      const float w0 = static_cast<float>(weights[0]);
      const float* __restrict g = gradients[0] + b;
      for (std::size_t i = 0; i < len; ++i) {
        const float vi = mu * m[i] + w0 * g[i] + lambda * t[i];
        m[i] = vi;
        t[i] -= eta * vi;
      }
    } else {
      if (count == 0) {
        std::memset(sum, 0, len * sizeof(float));
      } else {
        const float w0 = static_cast<float>(weights[0]);
        const float* __restrict g0 = gradients[0] + b;
        for (std::size_t i = 0; i < len; ++i) sum[i] = w0 * g0[i];
        for (int k = 1; k < count; ++k) {
          const float wk = static_cast<float>(weights[k]);
          const float* __restrict gk = gradients[k] + b;
          for (std::size_t i = 0; i < len; ++i) sum[i] += wk * gk[i];
        }
      }
      for (std::size_t i = 0; i < len; ++i) {
        const float vi = mu * m[i] + sum[i] + lambda * t[i];
        m[i] = vi;
        t[i] -= eta * vi;
      }
    }
    if (mirror != nullptr) std::memcpy(mirror + b, t, len * sizeof(float));
  }
}

void ParameterStore::combine(const float* const* gradients, const double* weights, int count, float* out) const {
  const std::size_t n = m_params->values.size();
  if (count == 0) {
    std::memset(out, 0, n * sizeof(float));
    return;
  }
  const float w0 = static_cast<float>(weights[0]);
  for (std::size_t i = 0; i < n; ++i) out[i] = w0 * gradients[0][i];
  for (int k = 1; k < count; ++k) {
    const float wk = static_cast<float>(weights[k]);
    const float* __restrict gk = gradients[k];
    for (std::size_t i = 0; i < n; ++i) out[i] += wk * gk[i];
  }
}

void ParameterStore::restore(const float* params, const float* momentum, std::int64_t version) {
  std::memcpy(writableParameters(false), params, m_params->values.size() * sizeof(float));
  if (momentum != nullptr) {
    std::memcpy(m_momentum.data(), momentum, m_momentum.size() * sizeof(float));
  } else {
    std::fill(m_momentum.begin(), m_momentum.end(), 0.0f);
  }
  m_version = version;
  ++m_revision;
}

bool allFinite(const float* values, std::int64_t count) {
  // A float is NaN or Inf exactly when its exponent bits are all ones; an integer
  // OR-reduction over those bits vectorizes (a float reduction would not, without
  // -ffast-math).
  std::uint32_t bad = 0;
  for (std::int64_t i = 0; i < count; ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, values + i, sizeof bits);
    bad |= static_cast<std::uint32_t>((bits & 0x7f800000u) == 0x7f800000u);
  }
  return bad == 0;
}

}  // namespace dasp
