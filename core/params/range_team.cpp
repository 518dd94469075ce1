// SPDX-License-Identifier: MIT
#include "core/params/range_team.h"

#include <algorithm>

namespace dasp {

RangeTeam::RangeTeam(int threads) {
  const auto helpers = static_cast<std::size_t>(std::max(1, threads) - 1);
  m_cuts.resize(helpers + 2);
  for (std::size_t i = 0; i < helpers; ++i) m_helpers.emplace_back([this, i] { helperLoop(i + 1); });
}

RangeTeam::~RangeTeam() {
  {
    std::lock_guard<std::mutex> lock(m_mu);
    m_stop = true;
  }
  m_start.notify_all();
  for (auto& t : m_helpers) t.join();
}

void RangeTeam::run(std::size_t n, std::size_t grain, const std::function<void(std::size_t, std::size_t)>& fn) {
  const std::size_t parts = m_helpers.size() + 1;
  grain = std::max<std::size_t>(1, grain);
  const std::size_t grains = (n + grain - 1) / grain;
  for (std::size_t i = 0; i <= parts; ++i) m_cuts[i] = std::min(n, grains * i / parts * grain);
  if (parts == 1) {
    fn(0, n);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(m_mu);
    m_fn = &fn;
    m_pending = m_helpers.size();
    ++m_generation;
  }
  m_start.notify_all();
  if (m_cuts[0] < m_cuts[1]) fn(m_cuts[0], m_cuts[1]);
  std::unique_lock<std::mutex> lock(m_mu);
  m_done.wait(lock, [this] { return m_pending == 0; });
  m_fn = nullptr;
}

void RangeTeam::helperLoop(std::size_t index) {
  std::size_t seen = 0;
  std::unique_lock<std::mutex> lock(m_mu);
  for (;;) {
    m_start.wait(lock, [&] { return m_stop || m_generation != seen; });
    if (m_stop) return;
    seen = m_generation;
    const auto* fn = m_fn;
    const std::size_t begin = m_cuts[index], end = m_cuts[index + 1];
    lock.unlock();
    if (begin < end) (*fn)(begin, end);
    lock.lock();
    if (--m_pending == 0) m_done.notify_one();
  }
}

}  // namespace dasp
