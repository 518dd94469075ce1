// SPDX-License-Identifier: MIT
// RunStore over the SQLite C API (RunRecorder: run_recorder.cpp; the schema and opening:
// run_store_schema.cpp). See core/store/run_store.h. RunStore::open also marks as
// interrupted the `running` runs of this host whose writing process is gone.
#include "core/store/run_store.h"
#include "core/common/durations.h"
#include "core/store/sqlite_store.h"

#include <sqlite3.h>

#include <cerrno>
#include <cstdlib>
#include <limits>
#include <utility>

#include <pwd.h>
#include <unistd.h>

namespace dasp {

using namespace store_detail;

// -----------------------------------------------------------------------------------------

const char* toString(RunStatus status) {
  switch (status) {
    case RunStatus::Running: return "running";
    case RunStatus::Completed: return "completed";
    case RunStatus::Stopped: return "stopped";
    case RunStatus::Failed: return "failed";
    case RunStatus::Interrupted: return "interrupted";
    case RunStatus::Diverged: return "diverged";
  }
  return "failed";
}

std::optional<RunStatus> runStatusFromString(const std::string& text) {
  for (RunStatus s : {RunStatus::Running, RunStatus::Completed, RunStatus::Stopped,
                      RunStatus::Failed, RunStatus::Interrupted, RunStatus::Diverged}) {
    if (text == toString(s)) return s;
  }
  return std::nullopt;
}

std::string defaultStorePath() {
  if (const char* db = std::getenv("DASP_DB"); db && *db) return db;
  std::string base;
  if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg && *xdg) {
    base = xdg;
  } else {
    std::string home;
    if (const char* h = std::getenv("HOME"); h && *h) {
      home = h;
    } else if (const passwd* pw = getpwuid(getuid()); pw && pw->pw_dir) {
      home = pw->pw_dir;
    } else {
      home = ".";
    }
    base = home + "/.local/share";
  }
  return base + "/dasp/runs.sqlite";
}

// -----------------------------------------------------------------------------------------
// RunStore

RunStore::RunStore(std::string path, sqlite3* db) : m_path(std::move(path)), m_db(db) {}

RunStore::~RunStore() { sqlite3_close_v2(m_db); }

int RunStore::schemaVersion() { return migrationCount(); }

Result<std::unique_ptr<RunStore>> RunStore::open(const std::string& path) {
  sqlite3* db = nullptr;
  if (Status s = openDatabase(path, &db); !s) return s;
  std::unique_ptr<RunStore> store(new RunStore(path, db));
  if (Status s = markInterruptedRuns(path, db); !s) return s;
  return store;
}

Result<std::int64_t> RunStore::createRun(const NewRun& run) {
  Stmt s;
  if (!s.prepare(m_db,
                 "INSERT INTO runs(kind, name, model, dataset, strategy, recovery, engine, seed, "
                 "status, spec_json, host, pid, pid_start, code_version, started_at, tags) "
                 "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'running', ?9, ?10, ?11, ?12, ?13, ?14, ?15)")) {
    return sqlError(m_path, m_db);
  }
  const std::string host = hostName();
  const std::string pidStart = processStartToken("/proc/self/stat");
  s.bind(1, run.kind);
  s.bind(2, run.name);
  s.bind(3, run.model);
  s.bind(4, run.dataset);
  s.bind(5, run.strategy);
  s.bind(6, run.recovery);
  s.bind(7, run.engine);
  s.bind(8, run.seed);
  s.bind(9, run.specJson);
  s.bind(10, host);
  s.bind(11, static_cast<std::int64_t>(getpid()));
  s.bind(12, pidStart);
  s.bind(13, run.codeVersion);
  s.bind(14, wallClockSeconds());
  s.bind(15, run.tags);
  if (s.step() != SQLITE_DONE) return sqlError(m_path, m_db);
  return static_cast<std::int64_t>(sqlite3_last_insert_rowid(m_db));
}

Status RunStore::finishRun(std::int64_t runId, RunStatus status, const std::string& error) {
  Stmt s;
  if (!s.prepare(m_db, "UPDATE runs SET status = ?2, ended_at = ?3, error = ?4 WHERE id = ?1")) {
    return sqlError(m_path, m_db);
  }
  s.bind(1, runId);
  s.bind(2, toString(status));
  s.bind(3, wallClockSeconds());
  s.bind(4, error);
  if (s.step() != SQLITE_DONE) return sqlError(m_path, m_db);
  if (sqlite3_changes(m_db) == 0) return notFound(runId, m_path);
  return Status::ok();
}

Result<std::vector<RunRow>> RunStore::listRuns(const RunFilter& filter) {
  const std::string sql = std::string("SELECT ") + kRunColumns +
                          " FROM runs WHERE (?1 = '' OR strategy = ?1) AND (?2 = '' OR status = ?2)"
                          " AND (?3 = '' OR instr(tags, ?3) > 0) ORDER BY id DESC LIMIT ?4";
  return query<RunRow>(
      m_path, m_db, sql.c_str(),
      [&](Stmt& s) {
        s.bind(1, filter.strategy);
        s.bind(2, filter.status);
        s.bind(3, filter.tag);
        s.bind(4, filter.limit > 0 ? static_cast<std::int64_t>(filter.limit) : std::int64_t{-1});
      },
      readRunRow);
}

Result<RunRow> RunStore::run(std::int64_t runId) {
  const std::string sql = std::string("SELECT ") + kRunColumns + " FROM runs WHERE id = ?1";
  auto rows = query<RunRow>(
      m_path, m_db, sql.c_str(), [&](Stmt& s) { s.bind(1, runId); }, readRunRow);
  if (!rows) return rows.status();
  if (rows->empty()) return notFound(runId, m_path);
  return std::move(rows->front());
}

Status RunStore::setTags(std::int64_t runId, const std::string& tags) {
  return updateRun(m_path, m_db, runId, "UPDATE runs SET tags = ?2 WHERE id = ?1", &tags);
}

Status RunStore::setNotes(std::int64_t runId, const std::string& notes) {
  return updateRun(m_path, m_db, runId, "UPDATE runs SET notes = ?2 WHERE id = ?1", &notes);
}

Status RunStore::deleteRun(std::int64_t runId) {
  // foreign_keys=ON: the child rows go with the run (ON DELETE CASCADE).
  return updateRun(m_path, m_db, runId, "DELETE FROM runs WHERE id = ?1", nullptr);
}

Result<std::vector<EvaluationRow>> RunStore::evaluations(std::int64_t runId) {
  return query<EvaluationRow>(
      m_path, m_db,
      "SELECT run_id, t_s, version, updates, samples, loss, accuracy FROM evaluations "
      "WHERE run_id = ?1 ORDER BY t_s, rowid",
      [&](Stmt& s) { s.bind(1, runId); },
      [](const Stmt& s) {
        EvaluationRow row;
        row.runId = s.int64(0);
        row.tS = s.real(1);
        row.version = s.int64(2);
        row.updates = s.int64(3);
        row.samples = s.int64(4);
        row.loss = s.realOrNaN(5);
        row.accuracy = s.realOrNaN(6);
        return row;
      });
}

Result<std::vector<SampleRow>> RunStore::samples(std::int64_t runId, const std::string& series) {
  return query<SampleRow>(
      m_path, m_db,
      "SELECT run_id, node, series, t_s, version, value FROM samples "
      "WHERE run_id = ?1 AND (?2 = '' OR series = ?2) ORDER BY t_s, rowid",
      [&](Stmt& s) {
        s.bind(1, runId);
        s.bind(2, series);
      },
      [](const Stmt& s) {
        SampleRow row;
        row.runId = s.int64(0);
        row.node = s.text(1);
        row.series = s.text(2);
        row.tS = s.real(3);
        row.version = s.int64(4);
        row.value = s.realOrNaN(5);
        return row;
      });
}

Result<std::vector<StateIntervalRow>> RunStore::stateIntervals(std::int64_t runId) {
  return query<StateIntervalRow>(
      m_path, m_db,
      "SELECT run_id, node, state, parallel_state, t0_s, t1_s FROM state_intervals "
      "WHERE run_id = ?1 ORDER BY t0_s, rowid",
      [&](Stmt& s) { s.bind(1, runId); },
      [](const Stmt& s) {
        StateIntervalRow row;
        row.runId = s.int64(0);
        row.node = s.text(1);
        row.state = s.text(2);
        row.parallelState = s.text(3);
        row.t0S = s.real(4);
        row.t1S = s.real(5);
        return row;
      });
}

Result<std::vector<DecisionRow>> RunStore::decisions(std::int64_t runId) {
  return query<DecisionRow>(
      m_path, m_db,
      "SELECT run_id, t_s, node, decision, reason, kind FROM decisions WHERE run_id = ?1 "
      "ORDER BY t_s, rowid",
      [&](Stmt& s) { s.bind(1, runId); },
      [](const Stmt& s) {
        DecisionRow row;
        row.runId = s.int64(0);
        row.tS = s.real(1);
        row.node = s.text(2);
        row.decision = s.text(3);
        row.reason = s.text(4);
        if (const auto code = s.optInt64(5)) row.kind = decisionKindFromCode(*code);
        return row;
      });
}

Result<std::vector<EventRow>> RunStore::events(std::int64_t runId) {
  return query<EventRow>(
      m_path, m_db,
      "SELECT run_id, t_s, kind, node, detail, code, target FROM events WHERE run_id = ?1 ORDER BY t_s, rowid",
      [&](Stmt& s) { s.bind(1, runId); },
      [](const Stmt& s) {
        EventRow row;
        row.runId = s.int64(0);
        row.tS = s.real(1);
        row.kind = kindFromName(s.text(2));
        row.node = s.text(3);
        row.detail = s.text(4);
        const auto code = s.int64(5);
        row.code = v1::RunEvent::Code_IsValid(static_cast<int>(code)) ? static_cast<EventCode>(code)
                                                                       : v1::RunEvent::CODE_UNSPECIFIED;
        row.target = s.text(6);
        return row;
      });
}

Result<std::vector<LogRow>> RunStore::logs(std::int64_t runId, const std::string& node) {
  return query<LogRow>(
      m_path, m_db,
      "SELECT run_id, node, t_s, stream, line FROM node_logs "
      "WHERE run_id = ?1 AND (?2 = '' OR node = ?2) ORDER BY t_s, rowid",
      [&](Stmt& s) {
        s.bind(1, runId);
        s.bind(2, node);
      },
      [](const Stmt& s) {
        LogRow row;
        row.runId = s.int64(0);
        row.node = s.text(1);
        row.tS = s.real(2);
        row.stream = s.text(3);
        row.line = s.text(4);
        return row;
      });
}

Result<std::vector<NodeRow>> RunStore::nodes(std::int64_t runId) {
  return query<NodeRow>(
      m_path, m_db,
      "SELECT run_id, node, role, host, pid, exit_code, signal, cpu_s, max_rss_kb, bytes_sent, "
      "bytes_received, slurm_step FROM nodes WHERE run_id = ?1 ORDER BY node",
      [&](Stmt& s) { s.bind(1, runId); },
      [](const Stmt& s) {
        NodeRow row;
        row.runId = s.int64(0);
        row.node = s.text(1);
        row.role = s.text(2);
        row.host = s.text(3);
        row.pid = s.int64(4);
        row.exitCode = s.optInt(5);
        row.signal = s.optInt(6);
        row.cpuS = s.real(7);
        row.maxRssKb = s.int64(8);
        row.bytesSent = s.int64(9);
        row.bytesReceived = s.int64(10);
        row.slurmStep = s.text(11);
        return row;
      });
}

Result<std::vector<SummaryRow>> RunStore::summary(std::int64_t runId) {
  return query<SummaryRow>(
      m_path, m_db, "SELECT key, value, text FROM summaries WHERE run_id = ?1 ORDER BY key",
      [&](Stmt& s) { s.bind(1, runId); },
      [](const Stmt& s) {
        SummaryRow row;
        row.key = s.text(0);
        row.value = s.optReal(1);
        row.text = s.text(2);
        return row;
      });
}

Result<std::vector<RecoveryMetrics>> RunStore::faults(std::int64_t runId) {
  return query<RecoveryMetrics>(
      m_path, m_db,
      "SELECT idx, node, action, at_s, restart_at_s, detected_at_s, resumed_at_s, version_before, "
      "version_after, gradients_during_outage, gradients_dropped, gradients_discarded, cpu_s, detail, "
      "detection_s, downtime_s, updates_lost, accuracy_before, accuracy_lowest_after, recover_s, "
      "accuracy_jump, final_accuracy FROM faults WHERE run_id = ?1 ORDER BY idx",
      [&](Stmt& s) { s.bind(1, runId); },
      [](const Stmt& s) {
        RecoveryMetrics m;
        FaultRecord& f = m.fault;
        f.index = static_cast<int>(s.int64(0));
        f.node = s.text(1);
        f.action = s.text(2);
        f.atS = s.real(3);
        f.restartAtS = s.optReal(4);
        f.detectedAtS = s.optReal(5);
        f.resumedAtS = s.optReal(6);
        f.versionBefore = s.int64(7);
        f.versionAfter = s.optInt64(8);
        f.gradientsDuringOutage = s.int64(9);
        f.gradientsDropped = s.int64(10);
        f.gradientsDiscarded = s.int64(11);
        f.cpuS = s.real(12);
        f.detail = s.text(13);
        m.detectionS = s.optReal(14);
        m.downtimeS = s.optReal(15);
        m.updatesLost = s.optInt64(16);
        m.accuracyBefore = s.optReal(17);
        m.accuracyLowestAfter = s.optReal(18);
        m.recoverS = s.optReal(19);
        m.accuracyJump = s.optReal(20);
        m.finalAccuracy = s.optReal(21).value_or(std::numeric_limits<double>::quiet_NaN());
        return m;
      });
}

}  // namespace dasp
