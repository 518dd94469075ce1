// SPDX-License-Identifier: MIT
// The run store's SQLite helpers (core/store/sqlite_store.h).
#include "core/store/sqlite_store.h"
#include "core/common/durations.h"

#include <sqlite3.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <utility>

#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

namespace dasp::store_detail {

namespace {

RunStatus statusFromColumn(const std::string& text) {
  // An unknown word (written by a newer build) reads as failed rather than running.
  return runStatusFromString(text).value_or(RunStatus::Failed);
}

}  // namespace

std::string hostName() {
  char buffer[256] = {};
  if (gethostname(buffer, sizeof(buffer) - 1) != 0) return {};
  buffer[sizeof(buffer) - 1] = '\0';
  return buffer;
}

// Field 22 of /proc/<pid>/stat (start time in clock ticks since boot), "" if unreadable.
std::string processStartToken(const std::string& procStatPath) {
  std::ifstream in(procStatPath);
  if (!in) return {};
  std::string content;
  std::getline(in, content);
  // Field 2 is the command in parentheses and may itself contain spaces and ')'.
  const auto close = content.rfind(')');
  if (close == std::string::npos) return {};
  std::istringstream fields(content.substr(close + 1));
  std::string field;
  // After ')' the fields start at number 3; field 22 is the 20th token.
  for (int number = 3; number <= 22; ++number) {
    if (!(fields >> field)) return {};
  }
  return field;
}

std::string errorText(const std::string& path, sqlite3* db) {
  return path + ": " + (db ? sqlite3_errmsg(db) : "out of memory");
}

Status sqlError(const std::string& path, sqlite3* db) {
  return Status::error(errorText(path, db));
}

Status exec(const std::string& path, sqlite3* db, const char* sql) {
  char* message = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &message) != SQLITE_OK) {
    std::string text = path + ": " + (message ? message : sqlite3_errmsg(db));
    sqlite3_free(message);
    return Status::error(std::move(text));
  }
  return Status::ok();
}

// Maps the error of the first statement on a connection, where SQLite notices files that
// are not databases.
Status openError(const std::string& path, sqlite3* db) {
  if ((sqlite3_errcode(db) & 0xff) == SQLITE_NOTADB) {
    return Status::error(path + ": not a SQLite database (" + sqlite3_errmsg(db) + ")");
  }
  return sqlError(path, db);
}

bool processGone(std::int64_t pid, const std::string& pidStart) {
  if (pid <= 0 || pid > 0x7fffffff) return true;  // never a live writer's pid
  if (kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) return true;
  // The pid exists (or we may not signal it): check it is the same process, not a reuse.
  if (!pidStart.empty()) {
    const std::string now = processStartToken("/proc/" + std::to_string(pid) + "/stat");
    if (!now.empty() && now != pidStart) return true;
  }
  return false;
}

Status markInterruptedRuns(const std::string& path, sqlite3* db) {
  const std::string host = hostName();
  std::vector<std::int64_t> gone;
  {
    Stmt select;
    if (!select.prepare(db, "SELECT id, pid, pid_start FROM runs WHERE status = 'running' AND host = ?1")) {
      return sqlError(path, db);
    }
    select.bind(1, host);
    int rc;
    while ((rc = select.step()) == SQLITE_ROW) {
      if (processGone(select.int64(1), select.text(2))) gone.push_back(select.int64(0));
    }
    if (rc != SQLITE_DONE) return sqlError(path, db);
  }
  if (gone.empty()) return Status::ok();

  if (Status s = exec(path, db, "BEGIN IMMEDIATE"); !s) return s;
  Stmt update;
  if (!update.prepare(db,
                      "UPDATE runs SET status = 'interrupted', ended_at = ?2 "
                      "WHERE id = ?1 AND status = 'running'")) {
    Status s = sqlError(path, db);
    exec(path, db, "ROLLBACK");
    return s;
  }
  const double now = wallClockSeconds();
  for (std::int64_t id : gone) {
    update.bind(1, id);
    update.bind(2, now);
    if (update.step() != SQLITE_DONE) {
      Status s = sqlError(path, db);
      update.reset();
      exec(path, db, "ROLLBACK");
      return s;
    }
    update.reset();
  }
  if (Status s = exec(path, db, "COMMIT"); !s) {
    exec(path, db, "ROLLBACK");
    return s;
  }
  return Status::ok();
}

Status notFound(std::int64_t runId, const std::string& path) {
  return Status::error("run " + std::to_string(runId) + " not found in " + path);
}

RunRow readRunRow(const Stmt& s) {
  RunRow row;
  row.id = s.int64(0);
  row.kind = s.text(1);
  row.name = s.text(2);
  row.model = s.text(3);
  row.dataset = s.text(4);
  row.strategy = s.text(5);
  row.recovery = s.text(6);
  row.engine = s.text(7);
  row.seed = s.int64(8);
  row.status = statusFromColumn(s.text(9));
  row.host = s.text(10);
  row.pid = s.int64(11);
  row.codeVersion = s.text(12);
  row.startedAt = s.real(13);
  row.endedAt = s.optReal(14);
  row.tags = s.text(15);
  row.notes = s.text(16);
  row.error = s.text(17);
  row.specJson = s.text(18);
  if (auto cause = divergenceCauseFromString(s.text(19))) {
    Divergence d;
    d.cause = *cause;
    d.version = s.optInt64(20).value_or(0);
    d.tS = s.optReal(21).value_or(0);
    row.divergence = d;
  }
  return row;
}

// Runs a one-row UPDATE/DELETE keyed by run id; "not found" when it changed nothing.
Status updateRun(const std::string& path, sqlite3* db, std::int64_t runId, const char* sql,
                 const std::string* text) {
  Stmt s;
  if (!s.prepare(db, sql)) return sqlError(path, db);
  s.bind(1, runId);
  if (text) s.bind(2, *text);
  if (s.step() != SQLITE_DONE) return sqlError(path, db);
  if (sqlite3_changes(db) == 0) return notFound(runId, path);
  return Status::ok();
}

}  // namespace dasp::store_detail
