// SPDX-License-Identifier: MIT
#include "core/bench/policy_bench.h"

#include "core/policy/sync_policy.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <limits>
#include <utility>
#include <vector>

namespace dasp {

namespace {

// splitmix64: a tiny, seedable generator; the jitter needs no better.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : m_state(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (m_state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)

 private:
  std::uint64_t m_state;
};

}  // namespace

PolicyBenchResult benchPolicyDecisions(const v1::StrategySpec& strategy, int workers,
                                       double seconds, std::uint64_t seed) {
  PolicyBenchResult result;
  result.workers = workers;
  auto made = makePolicy(strategy, 64);  // the bench's decisions do not depend on the batch
  if (!made.isOk()) {
    result.strategy = "error: " + made.message();
    return result;
  }
  SyncPolicy& policy = *made.value();
  result.strategy = policy.name();
  if (workers <= 0) return result;

  const std::size_t n = static_cast<std::size_t>(workers);
  constexpr double kBaseIteration = 0.01;  // virtual seconds; far below barrier timeouts
  static constexpr double kPattern[] = {1.0, 1.0, 1.0, 4.0};
  std::vector<double> iteration(n);
  for (std::size_t r = 0; r < n; ++r) iteration[r] = kBaseIteration * kPattern[r % 4];

  Rng rng(seed);
  using Event = std::pair<double, int>;  // (push time, rank)
  std::vector<Event> heap;
  heap.reserve(n);
  const auto later = std::greater<Event>();
  std::vector<std::int64_t> base(n, 0);
  std::vector<int> parked;
  parked.reserve(n);
  PolicyOutput out;
  out.gradients.reserve(n);
  out.updateBegin.reserve(n);
  out.dropped.reserve(n);
  out.decisions.reserve(n);
  std::int64_t decisions = 0;
  double now = 0;

  policy.reset(workers, now);
  auto release = [&](int r) {
    const auto ur = static_cast<std::size_t>(r);
    base[ur] = policy.version();
    policy.onPullReleased(r, base[ur], now);
    const double jitter = 1.0 + 0.1 * (rng.uniform() - 0.5);
    heap.emplace_back(now + iteration[ur] * jitter, r);
    std::push_heap(heap.begin(), heap.end(), later);
  };
  auto pull = [&](int r) {
    ++decisions;
    if (policy.mayProceed(r, now)) {
      release(r);
    } else {
      parked.push_back(r);
    }
  };
  auto recheck = [&]() {
    if (!out.recheckPulls) return;
    for (std::size_t i = 0; i < parked.size();) {
      const int r = parked[i];
      ++decisions;
      if (policy.mayProceed(r, now)) {
        parked[i] = parked.back();
        parked.pop_back();
        release(r);
      } else {
        ++i;
      }
    }
  };

  const auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < workers; ++r) pull(r);
  double elapsed = 0;
  for (std::uint64_t iter = 1;; ++iter) {
    if ((iter & 4095) == 0) {
      elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (elapsed >= seconds) break;
    }
    const double nextPush =
        heap.empty() ? std::numeric_limits<double>::infinity() : heap.front().first;
    const double deadline = policy.nextDeadline();
    if (deadline <= nextPush) {
      if (deadline == std::numeric_limits<double>::infinity()) break;  // nothing can happen
      now = std::max(now, deadline);
      out.clear();
      policy.onTick(now, out);
      recheck();
      continue;
    }
    std::pop_heap(heap.begin(), heap.end(), later);
    const Event ev = heap.back();
    heap.pop_back();
    now = ev.first;
    out.clear();
    policy.onPush(ev.second, base[static_cast<std::size_t>(ev.second)], now, out);
    ++decisions;
    recheck();
    pull(ev.second);
  }
  elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.decisions = decisions;
  result.decisionsPerS = elapsed > 0 ? static_cast<double>(decisions) / elapsed : 0;
  return result;
}

}  // namespace dasp
