// SPDX-License-Identifier: MIT
#pragma once
// LiveRunFeed: carries a running experiment's event stream from the runner's watch thread
// to the GUI thread in batches. The watch thread calls push() for every EventBatch the
// server streams; push() only converts the events into RunData records (the same mapping
// as net/runner/event_recording.cpp: WAIT ends at the release, then PULL, COMPUTE with the
// emulated time, PUSH up to the arrival; staleness from APPLY; decisions; evaluations at
// the time their version was made; OFFLINE periods with a worker's work through an outage;
// node, control and recovery events) and appends them to a
// mutex-protected pending buffer. Nothing is signalled per event: the GUI thread drains
// the buffer on a timer (≥ 5 Hz) with drainInto(), so a fast run costs the GUI one
// repaint per tick, whatever the event rate.
//
// A suite runs several experiments in turn: records carry their run id, and drainInto()
// starts the RunData afresh when a new run begins.
//
// The runner's own events (fault drills, live actions, process exits, chain
// reconfiguration) do not pass through the server's stream: the main window merges them
// from the store (mergeStoreEvents()).
//
// Threading: beginRun(), runCreated() and push() are called on the runner's threads;
// drainInto() and clear() on the GUI thread. Every method takes the one mutex briefly.

#include "core/spec/spec.h"
#include "dasp/ps/v1/parameter_server.pb.h"
#include "ui/charts/run_data.h"

#include <QString>
#include <QStringList>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

namespace dasp::ui {

class LiveRunFeed {
 public:
  LiveRunFeed() = default;
  LiveRunFeed(const LiveRunFeed&) = delete;
  LiveRunFeed& operator=(const LiveRunFeed&) = delete;

  // Describes the next run (the resolved spec the runner gets): its node names (rank
  // order) and the metadata a new RunData starts with. Call before runExperiment().
  void beginRun(const ExperimentSpec& spec);
  // The run exists in the store: a fresh RunData with every worker lane, before any event.
  void runCreated(std::int64_t runId);
  // Converts and queues one batch from the server (watch thread).
  void push(std::int64_t runId, const dasp::ps::v1::EventBatch& batch);

  // Moves everything pending into `data` (GUI thread). A record of another run than
  // data.runId replaces `data` with that run's fresh RunData first. Returns whether
  // anything was moved.
  bool drainInto(RunData& data);
  // Whether records wait to be drained (cheap: an atomic flag).
  bool hasPending() const { return m_hasPending.load(std::memory_order_acquire); }
  // Drops everything pending.
  void clear();

  // Appends to `data` the store's events of its run that it does not hold yet (the
  // runner records drills, actions, exits and chain changes in the store only). Only
  // the runner's rows are taken (by kind and code: not the server's recovery steps); a row
  // equal to one `data` holds (the stream's control events) is skipped.
  // Returns the number appended. GUI thread; a static helper, it takes no lock.
  static int mergeStoreEvents(RunData& data, const std::vector<Event>& storeEvents);

 private:
  // Records of one run since the last drain. `fresh` holds the run's metadata and lanes
  // when the run started after the previous chunk (it then replaces the GUI's RunData).
  struct Chunk {
    std::int64_t runId = 0;
    bool fresh = false;
    RunData data;
  };
  Chunk& chunkFor(std::int64_t runId);  // with m_mu held
  QString nodeName(int rank) const;     // with m_mu held
  static void merge(RunData& into, RunData&& from);
  static RunData startOf(const RunData& chunkData);  // metadata and empty lanes

  mutable std::mutex m_mu;
  std::vector<Chunk> m_pending;
  std::atomic<bool> m_hasPending{false};
  // The run being described (beginRun) and the last run seen by push/runCreated.
  QStringList m_names;
  RunData m_meta;
  std::int64_t m_lastRunId = 0;
  std::int64_t m_samples = 0;  // training samples pushed in the last run so far
};

}  // namespace dasp::ui
