// SPDX-License-Identifier: MIT
// RunRecorder: producers append to a vector under a mutex; a writer thread swaps the vector
// out and commits it in one transaction with statements prepared once. A sequence number
// (records queued / records committed) lets flush() wait without polling. A batch that
// fails because the disk is full (SQLITE_FULL) is rolled back whole (the file stays as it
// was: SQLite's journal guarantees it) and put back in front of the queue: the rows stay
// in memory, in order, and the writer tries again every second until space comes back;
// at finish() it gives up after a grace period and says how many rows were not written.
#include "core/store/run_store.h"
#include "core/common/durations.h"
#include "core/store/sqlite_store.h"

#include <sqlite3.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <algorithm>
#include <condition_variable>
#include <iterator>
#include <mutex>
#include <thread>
#include <type_traits>
#include <utility>
#include <variant>

namespace dasp {

using namespace store_detail;

// -----------------------------------------------------------------------------------------
// RunRecorder

namespace {
// recordFaults(): replaces every fault row of the run.
struct FaultsRecord {
  std::vector<RecoveryMetrics> faults;
};
using Record = std::variant<EvaluationRow, SampleRow, StateIntervalRow, DecisionRow, EventRow,
                            LogRow, NodeRow, SummaryRow, FaultsRecord>;
using SteadyClock = std::chrono::steady_clock;

// While the disk is full: how often the writer tries again, how many rows it holds at most
// (later ones are dropped and counted), and how long finish() keeps trying.
constexpr auto kFullRetry = std::chrono::seconds(1);
constexpr std::size_t kMaxHeldRows = 2'000'000;
constexpr auto kFinishGrace = std::chrono::seconds(5);

bool isDiskFull(sqlite3* db) { return (sqlite3_errcode(db) & 0xff) == SQLITE_FULL; }

double secondsBetween(SteadyClock::time_point a, SteadyClock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}
}  // namespace

struct RunRecorder::Impl {
  std::string path;
  std::int64_t runId = 0;
  std::chrono::milliseconds interval{200};
  sqlite3* db = nullptr;

  // Prepared once, used by the writer thread only (and by finish() after the join).
  Stmt insertEvaluation, insertSample, insertInterval, insertDecision, insertEvent, insertLog,
      replaceNode, replaceSummary, deleteFaults, replaceFault;

  std::mutex mutex;
  std::condition_variable wake;       // the writer waits on it
  std::condition_variable committed;  // flush() waits on it
  std::vector<Record> queue;          // guarded by mutex
  std::uint64_t recordedSeq = 0;      // records queued so far (guarded)
  std::uint64_t committedSeq = 0;     // records written (or failed) so far (guarded)
  std::uint64_t flushTarget = 0;      // the highest seq a flush() waits for (guarded)
  bool stopping = false;              // guarded
  bool writerDone = false;            // guarded
  bool finished = false;              // guarded
  Status firstError;                  // guarded
  // The disk-full state (guarded): rows held in `queue`, since when, and the totals.
  bool full = false;
  SteadyClock::time_point fullSince;
  double fullSecondsBefore = 0;       // of earlier full spells
  std::size_t heldMax = 0;
  std::int64_t lostRows = 0;          // dropped beyond kMaxHeldRows or given up at finish
  Status fullError;                   // the latest SQLITE_FULL error
  std::thread writer;

  ~Impl() {
    stop();
    // The statements are finalized after this body runs (members); close_v2 defers the
    // actual close until then.
    sqlite3_close_v2(db);
  }

  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopping = true;
    }
    wake.notify_all();
    if (writer.joinable()) writer.join();
  }

  bool prepareAll() {
    return insertEvaluation.prepare(db,
                                    "INSERT INTO evaluations(run_id, t_s, version, updates, samples, "
                                    "loss, accuracy) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)") &&
           insertSample.prepare(db,
                                "INSERT INTO samples(run_id, node, series, t_s, version, value) "
                                "VALUES(?1, ?2, ?3, ?4, ?5, ?6)") &&
           insertInterval.prepare(db,
                                  "INSERT INTO state_intervals(run_id, node, state, parallel_state, "
                                  "t0_s, t1_s) VALUES(?1, ?2, ?3, ?4, ?5, ?6)") &&
           insertDecision.prepare(db,
                                  "INSERT INTO decisions(run_id, t_s, node, decision, reason, kind) "
                                  "VALUES(?1, ?2, ?3, ?4, ?5, ?6)") &&
           insertEvent.prepare(db,
                               "INSERT INTO events(run_id, t_s, kind, node, detail, code, target) "
                               "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)") &&
           insertLog.prepare(db,
                             "INSERT INTO node_logs(run_id, node, t_s, stream, line) "
                             "VALUES(?1, ?2, ?3, ?4, ?5)") &&
           replaceNode.prepare(db,
                               "INSERT OR REPLACE INTO nodes(run_id, node, role, host, pid, "
                               "exit_code, signal, cpu_s, max_rss_kb, bytes_sent, bytes_received, slurm_step) "
                               "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)") &&
           replaceSummary.prepare(db,
                                  "INSERT OR REPLACE INTO summaries(run_id, key, value, text) "
                                  "VALUES(?1, ?2, ?3, ?4)") &&
           deleteFaults.prepare(db, "DELETE FROM faults WHERE run_id = ?1") &&
           replaceFault.prepare(db,
                                "INSERT OR REPLACE INTO faults(run_id, idx, node, action, at_s, "
                                "restart_at_s, detected_at_s, resumed_at_s, version_before, version_after, "
                                "gradients_during_outage, gradients_dropped, gradients_discarded, cpu_s, "
                                "detail, detection_s, downtime_s, updates_lost, accuracy_before, "
                                "accuracy_lowest_after, recover_s, accuracy_jump, final_accuracy) "
                                "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, "
                                "?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23)");
  }

  template <typename Row>
  void enqueue(Row&& row) {
    bool notify = false;
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (finished || stopping) return;
      if (full && queue.size() >= kMaxHeldRows) {
        ++lostRows;
        return;
      }
      queue.emplace_back(std::forward<Row>(row));
      ++recordedSeq;
      // Wake the writer when the queue becomes non-empty (it starts its interval) and when
      // it grows past a batch (it commits at once); not on every record.
      notify = queue.size() == 1 || queue.size() == kBatchRows + 1;
    }
    if (notify) wake.notify_one();
  }

  // Deletes the run's fault rows and inserts these; false on a write error. SQLite stores
  // a NaN as NULL: a non-finite fault time or CPU time is written as 0 (those columns are
  // NOT NULL and one bad figure must not roll back the batch), a non-finite final
  // accuracy as NULL (read back as NaN).
  bool writeFaults(const FaultsRecord& record) {
    const auto finite = [](double v) { return std::isfinite(v) ? v : 0.0; };
    deleteFaults.bind(1, runId);
    bool ok = deleteFaults.step() == SQLITE_DONE;
    deleteFaults.reset();
    for (const RecoveryMetrics& m : record.faults) {
      if (!ok) break;
      const FaultRecord& f = m.fault;
      Stmt& s = replaceFault;
      s.bind(1, runId);
      s.bind(2, static_cast<std::int64_t>(f.index));
      s.bind(3, f.node);
      s.bind(4, f.action);
      s.bind(5, finite(f.atS));
      s.bind(6, f.restartAtS);
      s.bind(7, f.detectedAtS);
      s.bind(8, f.resumedAtS);
      s.bind(9, f.versionBefore);
      s.bind(10, f.versionAfter);
      s.bind(11, f.gradientsDuringOutage);
      s.bind(12, f.gradientsDropped);
      s.bind(13, f.gradientsDiscarded);
      s.bind(14, finite(f.cpuS));
      s.bind(15, f.detail);
      s.bind(16, m.detectionS);
      s.bind(17, m.downtimeS);
      s.bind(18, m.updatesLost);
      s.bind(19, m.accuracyBefore);
      s.bind(20, m.accuracyLowestAfter);
      s.bind(21, m.recoverS);
      s.bind(22, m.accuracyJump);
      if (std::isfinite(m.finalAccuracy)) {
        s.bind(23, m.finalAccuracy);
      } else {
        s.bindNull(23);
      }
      ok = s.step() == SQLITE_DONE;
      s.reset();  // also drops the bindings, which point into `record`
    }
    return ok;
  }

  // Binds and steps one record; false on a write error.
  bool write(const Record& record) {
    if (const auto* faults = std::get_if<FaultsRecord>(&record)) return writeFaults(*faults);
    Stmt* stmt = nullptr;
    std::visit(
        [&](const auto& row) {
          using T = std::decay_t<decltype(row)>;
          if constexpr (std::is_same_v<T, EvaluationRow>) {
            stmt = &insertEvaluation;
            stmt->bind(1, runId);
            stmt->bind(2, row.tS);
            stmt->bind(3, row.version);
            stmt->bind(4, row.updates);
            stmt->bind(5, row.samples);
            stmt->bind(6, row.loss);
            stmt->bind(7, row.accuracy);
          } else if constexpr (std::is_same_v<T, SampleRow>) {
            stmt = &insertSample;
            stmt->bind(1, runId);
            stmt->bind(2, row.node);
            stmt->bind(3, row.series);
            stmt->bind(4, row.tS);
            stmt->bind(5, row.version);
            stmt->bind(6, row.value);
          } else if constexpr (std::is_same_v<T, StateIntervalRow>) {
            stmt = &insertInterval;
            stmt->bind(1, runId);
            stmt->bind(2, row.node);
            stmt->bind(3, row.state);
            stmt->bind(4, row.parallelState);
            stmt->bind(5, row.t0S);
            stmt->bind(6, row.t1S);
          } else if constexpr (std::is_same_v<T, DecisionRow>) {
            stmt = &insertDecision;
            stmt->bind(1, runId);
            stmt->bind(2, row.tS);
            stmt->bind(3, row.node);
            stmt->bind(4, row.decision);
            stmt->bind(5, row.reason);
            if (row.kind) {
              stmt->bind(6, static_cast<int>(*row.kind));
            } else {
              stmt->bindNull(6);
            }
          } else if constexpr (std::is_same_v<T, EventRow>) {
            stmt = &insertEvent;
            stmt->bind(1, runId);
            stmt->bind(2, row.tS);
            stmt->bind(3, kindName(row.kind));
            stmt->bind(4, row.node);
            stmt->bind(5, row.detail);
            stmt->bind(6, static_cast<int>(row.code));
            stmt->bind(7, row.target);
          } else if constexpr (std::is_same_v<T, LogRow>) {
            stmt = &insertLog;
            stmt->bind(1, runId);
            stmt->bind(2, row.node);
            stmt->bind(3, row.tS);
            stmt->bind(4, row.stream);
            stmt->bind(5, row.line);
          } else if constexpr (std::is_same_v<T, NodeRow>) {
            stmt = &replaceNode;
            stmt->bind(1, runId);
            stmt->bind(2, row.node);
            stmt->bind(3, row.role);
            stmt->bind(4, row.host);
            stmt->bind(5, row.pid);
            stmt->bind(6, row.exitCode);
            stmt->bind(7, row.signal);
            stmt->bind(8, row.cpuS);
            stmt->bind(9, row.maxRssKb);
            stmt->bind(10, row.bytesSent);
            stmt->bind(11, row.bytesReceived);
            stmt->bind(12, row.slurmStep);
          } else if constexpr (std::is_same_v<T, FaultsRecord>) {
            // Written by writeFaults() above.
          } else {
            static_assert(std::is_same_v<T, SummaryRow>);
            stmt = &replaceSummary;
            stmt->bind(1, runId);
            stmt->bind(2, row.key);
            stmt->bind(3, row.value);
            stmt->bind(4, row.text);
          }
        },
        record);
    const bool ok = stmt->step() == SQLITE_DONE;
    stmt->reset();  // also drops the bindings, which point into `record`
    return ok;
  }

  // Commits a batch in one transaction; returns the error, if any (the batch is rolled
  // back). `diskFull`: the error was SQLITE_FULL (read before the rollback resets it).
  Status writeBatch(const std::vector<Record>& batch, bool* diskFull) {
    *diskFull = false;
    if (Status s = exec(path, db, "BEGIN IMMEDIATE"); !s) {
      *diskFull = isDiskFull(db);
      return s;
    }
    for (const Record& record : batch) {
      if (!write(record)) {
        Status s = sqlError(path, db);
        *diskFull = isDiskFull(db);
        exec(path, db, "ROLLBACK");
        return s;
      }
    }
    if (Status s = exec(path, db, "COMMIT"); !s) {
      *diskFull = isDiskFull(db);
      exec(path, db, "ROLLBACK");
      return s;
    }
    return Status::ok();
  }

  // A batch the full disk refused: back in front of the rows queued meanwhile (guarded).
  void holdBack(std::vector<Record>& batch, const Status& why) {
    if (!full) {
      full = true;
      fullSince = SteadyClock::now();
    }
    fullError = why;
    batch.insert(batch.end(), std::make_move_iterator(queue.begin()), std::make_move_iterator(queue.end()));
    queue.swap(batch);
    batch.clear();
    heldMax = std::max(heldMax, queue.size());
    committed.notify_all();  // a flush() waiting returns: its rows are held, not written
  }

  // Space came back: the held rows are written (guarded).
  void endFull() {
    if (!full) return;
    fullSecondsBefore += secondsBetween(fullSince, SteadyClock::now());
    full = false;
  }

  std::string fullText(std::size_t rows) const {
    return path + ": the disk is full (" + fullError.message() + "): " + std::to_string(rows) + " rows of run " +
           std::to_string(runId) + " could not be written; the rows committed before stay readable";
  }

  bool urgent() const { return stopping || queue.size() > kBatchRows || flushTarget > committedSeq; }

  void run() {
    std::vector<Record> batch;
    std::optional<SteadyClock::time_point> stopDeadline;  // set when stopping with a full disk
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      wake.wait(lock, [&] { return stopping || !queue.empty(); });
      if (!urgent()) {
        wake.wait_until(lock, std::chrono::steady_clock::now() + interval, [&] { return urgent(); });
      }
      if (queue.empty()) {
        if (stopping) break;
        continue;
      }
      batch.swap(queue);  // `queue` takes the old batch's (cleared) capacity
      const std::uint64_t seq = recordedSeq;
      lock.unlock();
      bool diskFull = false;
      Status s = writeBatch(batch, &diskFull);
      lock.lock();
      if (diskFull) {
        holdBack(batch, s);
        if (stopping && !stopDeadline) stopDeadline = SteadyClock::now() + kFinishGrace;
        if (!stopDeadline || SteadyClock::now() < *stopDeadline) {
          const auto retry = SteadyClock::now() + kFullRetry;
          while (SteadyClock::now() < retry) wake.wait_until(lock, retry);
          continue;
        }
        // finish() waited long enough: the held rows are lost, and said so.
        lostRows += static_cast<std::int64_t>(queue.size());
        if (firstError.isOk()) firstError = Status::error(fullText(queue.size()));
        queue.clear();
        committedSeq = recordedSeq;
        break;
      }
      endFull();
      batch.clear();
      if (!s && firstError.isOk()) firstError = s;
      committedSeq = seq;
      committed.notify_all();
    }
    writerDone = true;
    committed.notify_all();
  }

  Status flush() {
    std::unique_lock<std::mutex> lock(mutex);
    const std::uint64_t target = recordedSeq;
    if (committedSeq < target && !writerDone) {
      if (flushTarget < target) flushTarget = target;
      wake.notify_one();
      committed.wait(lock, [&] { return committedSeq >= target || writerDone || full; });
    }
    if (full && firstError.isOk() && committedSeq < target) return Status::error(fullText(queue.size()));
    return firstError;
  }
};

RunRecorder::RunRecorder(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}

RunRecorder::~RunRecorder() = default;  // Impl::~Impl drains the queue and joins

Result<std::unique_ptr<RunRecorder>> RunRecorder::open(const std::string& path, std::int64_t runId,
                                                       int flushIntervalMs) {
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->runId = runId;
  impl->interval = std::chrono::milliseconds(flushIntervalMs > 0 ? flushIntervalMs : 1);
  if (Status s = openDatabase(path, &impl->db); !s) return s;

  {
    Stmt check;
    if (!check.prepare(impl->db, "SELECT 1 FROM runs WHERE id = ?1")) return sqlError(path, impl->db);
    check.bind(1, runId);
    const int rc = check.step();
    if (rc == SQLITE_DONE) return notFound(runId, path);
    if (rc != SQLITE_ROW) return sqlError(path, impl->db);
  }
  if (!impl->prepareAll()) return sqlError(path, impl->db);

  Impl* raw = impl.get();
  try {
    impl->writer = std::thread([raw] { raw->run(); });
  } catch (const std::system_error& e) {
    return Status::error(path + ": cannot start the recorder thread: " + e.what());
  }
  return std::unique_ptr<RunRecorder>(new RunRecorder(std::move(impl)));
}

std::int64_t RunRecorder::runId() const { return m_impl->runId; }

RunRecorder::StoreHealth RunRecorder::health() const {
  Impl& d = *m_impl;
  std::lock_guard<std::mutex> lock(d.mutex);
  StoreHealth h;
  h.full = d.full;
  h.heldRows = d.full ? d.queue.size() : 0;
  h.heldMax = d.heldMax;
  h.lostRows = d.lostRows;
  h.fullSeconds = d.fullSecondsBefore + (d.full ? secondsBetween(d.fullSince, SteadyClock::now()) : 0.0);
  if (d.full) h.error = d.fullError.message();
  return h;
}

void RunRecorder::record(EvaluationRow row) { m_impl->enqueue(std::move(row)); }
void RunRecorder::record(SampleRow row) { m_impl->enqueue(std::move(row)); }
void RunRecorder::record(StateIntervalRow row) { m_impl->enqueue(std::move(row)); }
void RunRecorder::record(DecisionRow row) { m_impl->enqueue(std::move(row)); }
void RunRecorder::record(EventRow row) { m_impl->enqueue(std::move(row)); }
void RunRecorder::record(LogRow row) { m_impl->enqueue(std::move(row)); }
void RunRecorder::record(NodeRow row) { m_impl->enqueue(std::move(row)); }

void RunRecorder::setSummary(const std::vector<SummaryRow>& rows) {
  // Queued like any record (INSERT OR REPLACE by key), so it is committed by the next
  // batch and by finish(), and survives a recorder destroyed without finish().
  for (const SummaryRow& row : rows) m_impl->enqueue(SummaryRow(row));
}

void RunRecorder::recordFaults(const std::vector<RecoveryMetrics>& faults) {
  m_impl->enqueue(FaultsRecord{faults});
}

Status RunRecorder::flush() { return m_impl->flush(); }

Status RunRecorder::finish(RunStatus status, const std::string& error, const std::optional<Divergence>& divergence) {
  Impl& d = *m_impl;
  {
    std::lock_guard<std::mutex> lock(d.mutex);
    if (d.finished) {
      return Status::error(d.path + ": run " + std::to_string(d.runId) + " is already finished");
    }
  }
  d.flush();
  d.stop();  // drains anything queued meanwhile and joins the writer
  Status result;
  {
    std::lock_guard<std::mutex> lock(d.mutex);
    d.finished = true;
    result = d.firstError;
  }
  // The writer is joined: this thread may use the connection.
  Stmt update;
  if (!update.prepare(d.db,
                      "UPDATE runs SET status = ?2, ended_at = ?3, error = ?4, divergence_cause = ?5, "
                      "diverged_version = ?6, diverged_t_s = ?7 WHERE id = ?1")) {
    return result.isOk() ? sqlError(d.path, d.db) : result;
  }
  update.bind(1, d.runId);
  update.bind(2, toString(status));
  update.bind(3, wallClockSeconds());
  update.bind(4, error);
  if (divergence) {
    update.bind(5, toString(divergence->cause));
    update.bind(6, divergence->version);
    update.bind(7, divergence->tS);
  } else {
    update.bindNull(5);
    update.bindNull(6);
    update.bindNull(7);
  }
  if (update.step() != SQLITE_DONE) {
    Status s = sqlError(d.path, d.db);
    return result.isOk() ? s : result;
  }
  if (sqlite3_changes(d.db) == 0 && result.isOk()) return notFound(d.runId, d.path);
  return result;
}

}  // namespace dasp
