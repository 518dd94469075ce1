// SPDX-License-Identifier: MIT
#pragma once
// ClusterState: the parameter server's per-node state table that every sync policy reads
// and updates. Per rank it keeps the clock c_i (pushes received), the version v_i it last
// pulled, whether it is live, its parallel state, when its last pull was released, an EMA
// of its pull→push compute time (the speed DASP partitions by; pull→push rather than
// push-to-push because inside a barrier push-to-push hides who is slow), and its last two
// push times (DSSP's controller predicts from them).
//
// Two indexes keep the policies' hot queries O(1), so a decision never scans all workers:
//  - clock buckets: live ranks grouped by clock value in a doubly linked list of buckets
//    ordered by clock (a clock only ever moves up by one, or a returning rank enters at
//    c_min, so a rank moves to the neighbouring bucket). c_min, c_max and a rank at c_min
//    are O(1); buckets come from a pool of workers+2 slots, so memory is O(workers) however
//    far the clocks spread and nothing is allocated after reset().
//  - the silence list: live ranks the server expects a push from (pull released, or never
//    heard since reset), oldest first, so "who has been silent longest" (a vanished worker)
//    is O(1).
//
// Threading: not thread-safe; owned by one policy, which the server calls under its lock.

#include "core/policy/sync_policy.h"

#include <cstdint>
#include <vector>

namespace dasp {

class ClusterState {
 public:
  explicit ClusterState(double alpha = 0.2);

  // EMA factor of the compute-time estimate: Δ ← α·x + (1−α)·Δ (the first sample is Δ).
  void setAlpha(double alpha) { m_alpha = alpha; }
  double alpha() const { return m_alpha; }

  // All `workers` ranks live in `initial` state, clock 0, version 0, silent since `now`.
  // Allocates; nothing else does.
  void reset(int workers, double now, ParallelState initial);

  int workers() const { return static_cast<int>(m_nodes.size()); }
  int liveCount() const { return m_live; }
  bool valid(int rank) const { return rank >= 0 && rank < workers(); }

  bool isLive(int rank) const { return m_nodes[idx(rank)].live; }
  ParallelState state(int rank) const { return m_nodes[idx(rank)].state; }
  // Changes the parallel state of a live rank (Sync/Async). Down goes through markDown().
  void setState(int rank, ParallelState state) { m_nodes[idx(rank)].state = state; }
  std::int64_t clock(int rank) const { return m_nodes[idx(rank)].clock; }
  std::int64_t pulledVersion(int rank) const { return m_nodes[idx(rank)].pulledVersion; }
  double pullReleaseTime(int rank) const { return m_nodes[idx(rank)].pullRelease; }
  double lastPushTime(int rank) const { return m_nodes[idx(rank)].lastPush; }
  // Interval between the last two pushes; < 0 until the rank has pushed twice.
  double pushInterval(int rank) const;
  // EMA of pull-release→push time; < 0 until measured once.
  double computeTime(int rank) const { return m_nodes[idx(rank)].ema; }
  bool hasComputeTime(int rank) const { return m_nodes[idx(rank)].ema >= 0; }

  // Minimum and maximum clock over live ranks (the last known values when none is live).
  std::int64_t cMin() const;
  std::int64_t cMax() const;
  std::int64_t lead(int rank) const { return clock(rank) - cMin(); }
  // A live rank at c_min (the one that reached it first), -1 when none is live.
  int slowestRank() const;

  // The live rank silent for longest (oldest pull release without a push since), -1 when
  // none is expected to push; silentSince() is when that wait began.
  int oldestSilent() const { return m_silentHead; }
  double silentSince(int rank) const { return m_nodes[idx(rank)].silentSince; }

  // Events. recordPush() counts a push of a live rank: c_i++, push times, and the
  // compute-time sample when its pull was released before. Returns true when c_min rose.
  bool recordPush(int rank, double now);
  void recordPullRelease(int rank, std::int64_t version, double now);
  // Removes a rank from the clock index and the silence list. Returns true when c_min rose.
  bool markDown(int rank);
  // Re-adds a rank with c_i = c_min (its old clock when no rank is live), in `state`.
  void markUp(int rank, double now, ParallelState state);

 private:
  struct Node {
    std::int64_t clock = 0;
    std::int64_t pulledVersion = 0;
    double pullRelease = 0;
    double lastPush = 0;
    double prevPush = 0;
    double ema = -1;
    double silentSince = 0;
    int pushes = 0;  // saturates at 2: only "has pushed twice" matters
    int bucket = -1;
    int prevInBucket = -1;
    int nextInBucket = -1;
    int prevSilent = -1;
    int nextSilent = -1;
    bool live = true;
    bool released = false;  // pull released and no push since: the next push is a sample
    bool silent = false;    // in the silence list
    ParallelState state = ParallelState::Sync;
  };
  struct Bucket {
    std::int64_t clock = 0;
    int prev = -1;
    int next = -1;
    int first = -1;
    int last = -1;
    int count = 0;
  };

  static std::size_t idx(int rank) { return static_cast<std::size_t>(rank); }
  int allocBucket(std::int64_t clock);
  void freeBucket(int b);
  void linkBucketAfter(int b, int after);  // after = -1: at the head
  void unlinkBucket(int b);
  void appendToBucket(int rank, int b);
  void removeFromBucket(int rank);  // frees the bucket when it empties
  void appendSilent(int rank, double since);
  void removeSilent(int rank);

  double m_alpha;
  std::vector<Node> m_nodes;
  std::vector<Bucket> m_buckets;
  std::vector<int> m_freeBuckets;
  int m_head = -1;  // bucket with the smallest clock
  int m_tail = -1;  // bucket with the largest clock
  int m_silentHead = -1;
  int m_silentTail = -1;
  int m_live = 0;
  std::int64_t m_lastMin = 0;
  std::int64_t m_lastMax = 0;
};

}  // namespace dasp
