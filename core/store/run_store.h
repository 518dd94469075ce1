// SPDX-License-Identifier: MIT
#pragma once
// RunStore: the SQLite file every run is written into and every view reads from.
//
// One file, WAL journal, a busy timeout, a versioned schema with migrations. The runner
// (or the single-node trainer) is the only writer of a run's data and writes through a
// RunRecorder (batched, on its own thread); the GUI reads and edits tags/notes through a
// RunStore of its own. Both may have the file open at once.
//
// Threading: a RunStore is one SQLite connection and is used from one thread at a time
// (the thread that owns it). A RunRecorder may be fed from any thread.

#include "core/results/recovery_metrics.h"
#include "core/results/divergence.h"
#include "core/common/result.h"
#include "core/events/run_events.h"
#include "core/policy/decision_kind.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

struct sqlite3;

namespace dasp {

// Diverged: the model left training (stop.divergence); RunRow::divergence says how.
enum class RunStatus { Running, Completed, Stopped, Failed, Interrupted, Diverged };
const char* toString(RunStatus status);
std::optional<RunStatus> runStatusFromString(const std::string& text);

// What a writer supplies when it creates a run.
struct NewRun {
  std::string kind;         // "train" (single node), "distributed", "sim"
  std::string name;         // the spec's name
  std::string specJson;     // the full, resolved ExperimentSpec as JSON
  std::string model;        // model name, for filtering
  std::string dataset;      // dataset name
  std::string strategy;     // "" for single-node runs
  std::string recovery;     // recovery mode, "" when not applicable
  std::string engine = "real";  // "real" or "sim"
  std::int64_t seed = 0;
  std::string tags;         // comma-separated
  std::string codeVersion;  // git describe or the project version
};

// One row of the runs table as the views show it.
struct RunRow {
  std::int64_t id = 0;
  std::string kind, name, model, dataset, strategy, recovery, engine;
  std::int64_t seed = 0;
  RunStatus status = RunStatus::Running;
  std::string host;
  std::int64_t pid = 0;
  std::string codeVersion;
  double startedAt = 0;               // Unix seconds
  std::optional<double> endedAt;      // Unix seconds
  std::string tags, notes;
  std::string error;                  // why a failed run failed
  std::optional<Divergence> divergence;  // status Diverged: what was seen, when
  std::string specJson;
};

struct RunFilter {
  std::string strategy;  // exact match when not empty
  std::string status;    // exact match when not empty
  std::string tag;       // substring of the tags when not empty
  int limit = 0;         // 0 = all
};

struct EvaluationRow {
  std::int64_t runId = 0;
  double tS = 0;            // seconds since the run started (server time of the version)
  std::int64_t version = 0; // model version evaluated
  std::int64_t updates = 0; // updates applied so far
  std::int64_t samples = 0; // training samples consumed so far
  double loss = 0;
  double accuracy = 0;
};

// A point of a named per-node series ("train_loss", "staleness", "wait_s", ...).
struct SampleRow {
  std::int64_t runId = 0;
  std::string node;
  std::string series;
  double tS = 0;
  std::int64_t version = 0;
  double value = 0;
};

struct StateIntervalRow {
  std::int64_t runId = 0;
  std::string node;
  std::string state;          // COMPUTE, PUSH, WAIT, PULL, DOWN, IDLE, OFFLINE
  std::string parallelState;  // SYNC, ASYNC, ... ("" when the strategy has none)
  double t0S = 0, t1S = 0;
};

struct DecisionRow {
  std::int64_t runId = 0;
  double tS = 0;
  std::string node;
  std::string decision;  // for people: "state_change SYNC->ASYNC", "drop 9", "barrier_timeout"
  std::string reason;
  // What the decision did; views decide on it. nullopt: a row whose text named no kind
  // when an older file was migrated.
  std::optional<DecisionKind> kind;
};

// One run event (core/events/run_events.h). Code acts on `kind`, `code` and `target`; `detail`
// is text for people, never parsed (a file of schema version 2 or older got its codes
// from the text once, when it was migrated: core/events/legacy_events.h).
struct EventRow {
  std::int64_t runId = 0;
  double tS = 0;
  EventKind kind = v1::RunEvent::KIND_UNSPECIFIED;  // stored by name: "node", "fault", ...
  std::string node;    // who reported it, or the node it happened to
  std::string detail;  // for people
  EventCode code = v1::RunEvent::CODE_UNSPECIFIED;
  std::string target;  // the node acted on (killed, restarted, promoted, ...); "" when none
  // The node the event is about: `target` when it names one, else `node`.
  const std::string& subject() const { return target.empty() ? node : target; }
};

struct LogRow {
  std::int64_t runId = 0;
  std::string node;
  double tS = 0;
  std::string stream;  // "stdout" or "stderr"
  std::string line;
};

struct NodeRow {
  std::int64_t runId = 0;
  std::string node;   // "server", "worker-0", "evaluator", "trainer"
  std::string role;
  std::string host;
  std::int64_t pid = 0;
  std::optional<int> exitCode;
  std::optional<int> signal;
  double cpuS = 0;
  std::int64_t maxRssKb = 0;
  std::int64_t bytesSent = 0, bytesReceived = 0;
  std::string slurmStep;  // "JOB.STEP" of a node run by the SLURM launcher, else ""
};

struct SummaryRow {
  std::string key;
  std::optional<double> value;  // numeric figures
  std::string text;             // or a text figure
};

class RunStore {
 public:
  // Opens (creating if needed) the store, migrates an older schema, and marks as
  // `interrupted` every `running` run of this host whose writing process is gone.
  // Fails with a message naming the file when it is not SQLite, has a newer schema, or
  // cannot be created.
  static Result<std::unique_ptr<RunStore>> open(const std::string& path);
  ~RunStore();
  RunStore(const RunStore&) = delete;
  RunStore& operator=(const RunStore&) = delete;

  const std::string& path() const { return m_path; }
  static int schemaVersion();  // the version this build writes

  Result<std::int64_t> createRun(const NewRun& run);
  Status finishRun(std::int64_t runId, RunStatus status, const std::string& error = {});
  Result<std::vector<RunRow>> listRuns(const RunFilter& filter = {});
  Result<RunRow> run(std::int64_t runId);
  Status setTags(std::int64_t runId, const std::string& tags);
  Status setNotes(std::int64_t runId, const std::string& notes);
  Status deleteRun(std::int64_t runId);

  Result<std::vector<EvaluationRow>> evaluations(std::int64_t runId);
  Result<std::vector<SampleRow>> samples(std::int64_t runId, const std::string& series = {});
  Result<std::vector<StateIntervalRow>> stateIntervals(std::int64_t runId);
  Result<std::vector<DecisionRow>> decisions(std::int64_t runId);
  Result<std::vector<EventRow>> events(std::int64_t runId);
  Result<std::vector<LogRow>> logs(std::int64_t runId, const std::string& node = {});
  Result<std::vector<NodeRow>> nodes(std::int64_t runId);
  Result<std::vector<SummaryRow>> summary(std::int64_t runId);
  // The run's fault drills with their recovery metrics, by fault index (empty when none).
  Result<std::vector<RecoveryMetrics>> faults(std::int64_t runId);

 private:
  RunStore(std::string path, sqlite3* db);
  std::string m_path;
  sqlite3* m_db = nullptr;
};

// The default store file: $DASP_DB, else ${XDG_DATA_HOME:-~/.local/share}/dasp/runs.sqlite.
std::string defaultStorePath();

// Writes one run's data in batches on its own thread with its own connection, so a
// trainer or a gRPC callback never waits on the disk. Records are queued and committed in
// one transaction every `flushIntervalMs` or when the queue is large. finish() writes the
// summary and the final status and joins the thread; the destructor of an unfinished
// recorder flushes and leaves the run `running` (the next open marks it interrupted).
// Threading: every record*/flush/finish method may be called from any thread.
class RunRecorder {
 public:
  static Result<std::unique_ptr<RunRecorder>> open(const std::string& path, std::int64_t runId,
                                                   int flushIntervalMs = 200);
  ~RunRecorder();
  RunRecorder(const RunRecorder&) = delete;
  RunRecorder& operator=(const RunRecorder&) = delete;

  std::int64_t runId() const;
  void record(EvaluationRow row);
  void record(SampleRow row);
  void record(StateIntervalRow row);
  void record(DecisionRow row);
  void record(EventRow row);
  void record(LogRow row);
  void record(NodeRow row);  // insert or replace by (run, node)
  void setSummary(const std::vector<SummaryRow>& rows);
  // Replaces the run's fault rows (table `faults`, keyed by fault index) with these, in
  // one step of the batched writer: the latest call wins. Absent or NaN figures are
  // stored as NULL (a NaN final accuracy reads back as NaN).
  void recordFaults(const std::vector<RecoveryMetrics>& faults);
  // Blocks until everything recorded so far is committed, or is held because the disk is
  // full (then returns that error); returns the first write error.
  Status flush();
  // The writer's state on a full disk (SQLITE_FULL): it keeps the rows in memory (at most
  // 2,000,000; later ones are dropped and counted) and retries every second; finish()
  // retries for 5 s more, then gives up and returns an error that counts the rows lost.
  struct StoreHealth {
    bool full = false;            // the last write found the disk full
    std::size_t heldRows = 0;     // rows waiting in memory now
    std::size_t heldMax = 0;      // the most ever held
    std::int64_t lostRows = 0;    // dropped beyond the bound, or not written at finish
    double fullSeconds = 0;       // time the disk was full, all spells together
    std::string error;            // SQLite's message while full
  };
  StoreHealth health() const;
  // Flushes, sets the final status (and error text; for Diverged, what was seen) and stops
  // the writer thread.
  Status finish(RunStatus status, const std::string& error = {}, const std::optional<Divergence>& divergence = {});

 private:
  struct Impl;
  explicit RunRecorder(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> m_impl;
};

}  // namespace dasp
