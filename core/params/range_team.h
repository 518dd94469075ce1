// SPDX-License-Identifier: MIT
#pragma once
// RangeTeam: a loop over [0, n) shared by the calling thread and a few helper threads kept
// for the team's life (made once: a thread started per call would cost more than it saves
// on all but the largest loops). The server's apply step uses it: a pass over a large
// model is bound by memory, and measured on a 2-core machine two threads did it in
// 0.6–0.8 of one thread's time (`dasp bench ps`: apply_ms against apply_ms_one_thread),
// while the pushing worker waits.
// Each range gets the same code: a loop whose iterations are independent gives the same
// bits whatever the split.
// Threading: run() from one thread at a time (the owner's); the helpers are internal.

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace dasp {

class RangeTeam {
 public:
  // `threads` ≥ 1 in all, the caller included (1: no helper; run() calls fn once).
  explicit RangeTeam(int threads);
  ~RangeTeam();
  RangeTeam(const RangeTeam&) = delete;
  RangeTeam& operator=(const RangeTeam&) = delete;

  int threads() const { return static_cast<int>(m_helpers.size()) + 1; }
  // fn(begin, end) over contiguous ranges covering [0, n), one per thread, cut at
  // multiples of `grain`; the caller runs the first. Returns when every range is done.
  void run(std::size_t n, std::size_t grain, const std::function<void(std::size_t, std::size_t)>& fn);

 private:
  void helperLoop(std::size_t index);
  std::mutex m_mu;
  std::condition_variable m_start;
  std::condition_variable m_done;
  std::size_t m_generation = 0;  // bumped for every run()
  std::size_t m_pending = 0;     // helpers still in the current run
  bool m_stop = false;
  const std::function<void(std::size_t, std::size_t)>* m_fn = nullptr;
  std::vector<std::size_t> m_cuts;  // range i is [m_cuts[i], m_cuts[i + 1])
  std::vector<std::thread> m_helpers;
};

}  // namespace dasp
