// SPDX-License-Identifier: MIT
#include "core/policy/cluster_state.h"

namespace dasp {

ClusterState::ClusterState(double alpha) : m_alpha(alpha) {}

void ClusterState::reset(int workers, double now, ParallelState initial) {
  const std::size_t n = workers > 0 ? static_cast<std::size_t>(workers) : 0;
  m_nodes.assign(n, Node{});
  // At most one bucket per live rank, plus one while a push moves a rank into a new bucket
  // before its old one is freed.
  m_buckets.assign(n + 2, Bucket{});
  m_freeBuckets.clear();
  m_freeBuckets.reserve(n + 2);
  for (std::size_t b = n + 2; b-- > 0;) m_freeBuckets.push_back(static_cast<int>(b));
  m_head = m_tail = -1;
  m_silentHead = m_silentTail = -1;
  m_live = static_cast<int>(n);
  m_lastMin = m_lastMax = 0;
  if (n == 0) return;
  const int b0 = allocBucket(0);
  linkBucketAfter(b0, -1);
  for (int r = 0; r < workers; ++r) {
    m_nodes[idx(r)].state = initial;
    appendToBucket(r, b0);
    // A rank is expected to pull and push from the start: a worker that never shows up is
    // as silent as one that vanished later.
    appendSilent(r, now);
  }
}

double ClusterState::pushInterval(int rank) const {
  const Node& n = m_nodes[idx(rank)];
  return n.pushes >= 2 ? n.lastPush - n.prevPush : -1.0;
}

std::int64_t ClusterState::cMin() const {
  return m_head >= 0 ? m_buckets[idx(m_head)].clock : m_lastMin;
}

std::int64_t ClusterState::cMax() const {
  return m_tail >= 0 ? m_buckets[idx(m_tail)].clock : m_lastMax;
}

int ClusterState::slowestRank() const { return m_head >= 0 ? m_buckets[idx(m_head)].first : -1; }

bool ClusterState::recordPush(int rank, double now) {
  Node& n = m_nodes[idx(rank)];
  if (n.released) {
    const double x = now - n.pullRelease;
    n.ema = n.ema < 0 ? x : m_alpha * x + (1.0 - m_alpha) * n.ema;
    n.released = false;
  }
  n.prevPush = n.lastPush;
  n.lastPush = now;
  if (n.pushes < 2) ++n.pushes;
  removeSilent(rank);
  if (!n.live) {
    ++n.clock;
    return false;
  }
  const std::int64_t oldMin = cMin();
  const int from = n.bucket;
  int to = m_buckets[idx(from)].next;
  if (to < 0 || m_buckets[idx(to)].clock != n.clock + 1) {
    to = allocBucket(n.clock + 1);
    linkBucketAfter(to, from);
  }
  removeFromBucket(rank);
  ++n.clock;
  appendToBucket(rank, to);
  return cMin() > oldMin;
}

void ClusterState::recordPullRelease(int rank, std::int64_t version, double now) {
  Node& n = m_nodes[idx(rank)];
  n.pulledVersion = version;
  n.pullRelease = now;
  n.released = true;
  if (n.live) {
    removeSilent(rank);
    appendSilent(rank, now);
  }
}

bool ClusterState::markDown(int rank) {
  Node& n = m_nodes[idx(rank)];
  if (!n.live) return false;
  const std::int64_t oldMin = cMin();
  removeFromBucket(rank);
  removeSilent(rank);
  n.live = false;
  n.released = false;  // the time it was away is no compute-time sample
  n.state = ParallelState::Down;
  --m_live;
  return m_head >= 0 && cMin() > oldMin;
}

void ClusterState::markUp(int rank, double now, ParallelState state) {
  Node& n = m_nodes[idx(rank)];
  if (n.live) return;
  n.live = true;
  n.state = state;
  ++m_live;
  if (m_head >= 0) {
    n.clock = cMin();
    appendToBucket(rank, m_head);
  } else {
    const int b = allocBucket(n.clock);
    linkBucketAfter(b, -1);
    appendToBucket(rank, b);
  }
  appendSilent(rank, now);
}

int ClusterState::allocBucket(std::int64_t clock) {
  const int b = m_freeBuckets.back();
  m_freeBuckets.pop_back();
  m_buckets[idx(b)] = Bucket{};
  m_buckets[idx(b)].clock = clock;
  return b;
}

void ClusterState::freeBucket(int b) { m_freeBuckets.push_back(b); }

void ClusterState::linkBucketAfter(int b, int after) {
  Bucket& nb = m_buckets[idx(b)];
  nb.prev = after;
  nb.next = after >= 0 ? m_buckets[idx(after)].next : m_head;
  if (nb.next >= 0) {
    m_buckets[idx(nb.next)].prev = b;
  } else {
    m_tail = b;
  }
  if (after >= 0) {
    m_buckets[idx(after)].next = b;
  } else {
    m_head = b;
  }
}

void ClusterState::unlinkBucket(int b) {
  const Bucket& ob = m_buckets[idx(b)];
  if (ob.prev >= 0) {
    m_buckets[idx(ob.prev)].next = ob.next;
  } else {
    m_head = ob.next;
  }
  if (ob.next >= 0) {
    m_buckets[idx(ob.next)].prev = ob.prev;
  } else {
    m_tail = ob.prev;
  }
}

void ClusterState::appendToBucket(int rank, int b) {
  Bucket& bk = m_buckets[idx(b)];
  Node& n = m_nodes[idx(rank)];
  n.bucket = b;
  n.prevInBucket = bk.last;
  n.nextInBucket = -1;
  if (bk.last >= 0) {
    m_nodes[idx(bk.last)].nextInBucket = rank;
  } else {
    bk.first = rank;
  }
  bk.last = rank;
  ++bk.count;
}

void ClusterState::removeFromBucket(int rank) {
  Node& n = m_nodes[idx(rank)];
  const int b = n.bucket;
  if (b < 0) return;
  Bucket& bk = m_buckets[idx(b)];
  if (n.prevInBucket >= 0) {
    m_nodes[idx(n.prevInBucket)].nextInBucket = n.nextInBucket;
  } else {
    bk.first = n.nextInBucket;
  }
  if (n.nextInBucket >= 0) {
    m_nodes[idx(n.nextInBucket)].prevInBucket = n.prevInBucket;
  } else {
    bk.last = n.prevInBucket;
  }
  n.bucket = n.prevInBucket = n.nextInBucket = -1;
  if (--bk.count == 0) {
    // Remember the extremes so cMin()/cMax() stay meaningful when the last rank leaves.
    if (b == m_head) m_lastMin = bk.clock;
    if (b == m_tail) m_lastMax = bk.clock;
    unlinkBucket(b);
    freeBucket(b);
  }
}

void ClusterState::appendSilent(int rank, double since) {
  Node& n = m_nodes[idx(rank)];
  n.silent = true;
  n.silentSince = since;
  n.prevSilent = m_silentTail;
  n.nextSilent = -1;
  if (m_silentTail >= 0) {
    m_nodes[idx(m_silentTail)].nextSilent = rank;
  } else {
    m_silentHead = rank;
  }
  m_silentTail = rank;
}

void ClusterState::removeSilent(int rank) {
  Node& n = m_nodes[idx(rank)];
  if (!n.silent) return;
  if (n.prevSilent >= 0) {
    m_nodes[idx(n.prevSilent)].nextSilent = n.nextSilent;
  } else {
    m_silentHead = n.nextSilent;
  }
  if (n.nextSilent >= 0) {
    m_nodes[idx(n.nextSilent)].prevSilent = n.prevSilent;
  } else {
    m_silentTail = n.prevSilent;
  }
  n.silent = false;
  n.prevSilent = n.nextSilent = -1;
}

}  // namespace dasp
