// SPDX-License-Identifier: MIT
#include "core/bench/memory_bench.h"

#include "core/bench/median.h"
#include "core/params/parameter_store.h"

#include <chrono>
#include <cstring>
#include <vector>

namespace dasp {
namespace {

using Clock = std::chrono::steady_clock;

template <typename Pass>
MemoryBench timeRounds(std::int64_t floats, int rounds, double bytesPerFloat, Pass&& pass) {
  pass();  // warm: every page touched
  std::vector<double> times;
  for (int i = 0; i < rounds; ++i) {
    const auto t0 = Clock::now();
    pass();
    times.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  MemoryBench r;
  r.floats = floats;
  r.rounds = rounds;
  r.seconds = median(times);
  r.gbps = r.seconds > 0 ? bytesPerFloat * static_cast<double>(floats) / r.seconds / 1e9 : 0;
  return r;
}

}  // namespace

MemoryBench benchMemcpy(std::int64_t floats, int rounds) {
  std::vector<float> from(static_cast<std::size_t>(floats), 1.0f), to(static_cast<std::size_t>(floats), 0.0f);
  return timeRounds(floats, rounds, 4, [&] {
    std::memcpy(to.data(), from.data(), from.size() * sizeof(float));
    from[0] = to[1];  // keep the copies observable
  });
}

MemoryBench benchApply(std::int64_t floats, int rounds, int threads) {
  ParameterStore store(std::vector<float>(static_cast<std::size_t>(floats), 0.5f), 0.9, 1e-4);
  store.setApplyThreads(threads);
  std::vector<float> gradient(static_cast<std::size_t>(floats), 1e-3f);
  const float* gradients[] = {gradient.data()};
  const double weights[] = {1.0};
  return timeRounds(floats, rounds, 20, [&] { store.apply(gradients, weights, 1, 0.01); });
}

}  // namespace dasp
