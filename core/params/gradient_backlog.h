// SPDX-License-Identifier: MIT
#pragma once
// A stateless worker's outage backlog: the real worker loop's (net/client/nodes.cpp) and
// the virtual cluster's (core/sim), so both bound it alike.
// Threading: owned by one thread (a worker loop's, or the engine's).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

namespace dasp {

// The gradients a stateless worker computed while no server answered: a bounded FIFO
// whose buffers are reused (the oldest is dropped, and counted, beyond the bound).
class Backlog {
 public:
  Backlog(std::size_t maxCount, double maxBytes, std::size_t parameters)
      : m_maxCount(std::max<std::size_t>(1, maxCount)),
        m_maxBytes(maxBytes),
        m_parameters(parameters) {}
  // A buffer to compute the next gradient into; commit() adds it.
  float* next() {
    if (m_spare.empty()) m_spare.emplace_back(m_parameters);
    return m_spare.back().data();
  }
  void commit(std::int64_t baseVersion, double computedAt) {
    m_items.push_back({std::move(m_spare.back()), baseVersion, computedAt});
    m_spare.pop_back();
    const double bytesEach = static_cast<double>(m_parameters) * sizeof(float);
    while (m_items.size() > m_maxCount || static_cast<double>(m_items.size()) * bytesEach > m_maxBytes) {
      m_spare.push_back(std::move(m_items.front().gradient));
      m_items.pop_front();
      ++m_dropped;
    }
  }
  std::size_t size() const { return m_items.size(); }
  bool empty() const { return m_items.empty(); }
  std::int64_t dropped() const { return m_dropped; }
  struct Item {
    std::vector<float> gradient;
    std::int64_t baseVersion;
    double computedAt;  // seconds on the worker's clock
  };
  const Item& at(std::size_t i) const { return m_items[i]; }
  void clear() {
    while (!m_items.empty()) {
      m_spare.push_back(std::move(m_items.front().gradient));
      m_items.pop_front();
    }
    m_dropped = 0;
  }

 private:
  std::size_t m_maxCount;
  double m_maxBytes;
  std::size_t m_parameters;
  std::deque<Item> m_items;
  std::vector<std::vector<float>> m_spare;
  std::int64_t m_dropped = 0;
};

}  // namespace dasp
