// SPDX-License-Identifier: MIT
#pragma once
// Internal to the run store (core/store/*.cpp): the SQLite pieces its files share — the
// prepared-statement wrapper, a query helper, errors that name the file, the schema
// (run_store_schema.cpp) and the host/process facts recorded with a run. Not included
// outside core/store/.

#include "core/store/run_store.h"

#include <sqlite3.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace dasp::store_detail {

inline constexpr std::size_t kBatchRows = 4096;  // the writer commits early past this many rows
inline constexpr const char* kRunColumns =
    "id, kind, name, model, dataset, strategy, recovery, engine, seed, status, host, pid, "
    "code_version, started_at, ended_at, tags, notes, error, spec_json, divergence_cause, diverged_version, "
    "diverged_t_s";

// RAII wrapper of a prepared statement.
class Stmt {
 public:
  Stmt() = default;
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  ~Stmt() { sqlite3_finalize(m_stmt); }

  bool prepare(sqlite3* db, const char* sql) {
    sqlite3_finalize(m_stmt);
    m_stmt = nullptr;
    return sqlite3_prepare_v2(db, sql, -1, &m_stmt, nullptr) == SQLITE_OK;
  }
  sqlite3_stmt* get() const { return m_stmt; }

  void bind(int index, const std::string& text) {
    sqlite3_bind_text(m_stmt, index, text.data(), static_cast<int>(text.size()), SQLITE_STATIC);
  }
  void bind(int index, const char* text) { sqlite3_bind_text(m_stmt, index, text, -1, SQLITE_STATIC); }
  void bind(int index, std::int64_t value) { sqlite3_bind_int64(m_stmt, index, value); }
  void bind(int index, int value) { sqlite3_bind_int(m_stmt, index, value); }
  void bind(int index, double value) { sqlite3_bind_double(m_stmt, index, value); }
  void bindNull(int index) { sqlite3_bind_null(m_stmt, index); }
  template <typename T>
  void bind(int index, const std::optional<T>& value) {
    if (value) {
      bind(index, *value);
    } else {
      bindNull(index);
    }
  }

  int step() { return sqlite3_step(m_stmt); }
  void reset() {
    sqlite3_reset(m_stmt);
    sqlite3_clear_bindings(m_stmt);
  }

  std::string text(int column) const {
    const auto* data = reinterpret_cast<const char*>(sqlite3_column_text(m_stmt, column));
    if (!data) return {};
    return std::string(data, static_cast<std::size_t>(sqlite3_column_bytes(m_stmt, column)));
  }
  std::int64_t int64(int column) const { return sqlite3_column_int64(m_stmt, column); }
  double real(int column) const { return sqlite3_column_double(m_stmt, column); }
  bool isNull(int column) const { return sqlite3_column_type(m_stmt, column) == SQLITE_NULL; }
  // A float that may be NaN: SQLite stores a NaN as NULL.
  double realOrNaN(int column) const { return isNull(column) ? std::numeric_limits<double>::quiet_NaN() : real(column); }
  std::optional<double> optReal(int column) const {
    if (isNull(column)) return std::nullopt;
    return real(column);
  }
  std::optional<int> optInt(int column) const {
    if (isNull(column)) return std::nullopt;
    return sqlite3_column_int(m_stmt, column);
  }
  std::optional<std::int64_t> optInt64(int column) const {
    if (isNull(column)) return std::nullopt;
    return int64(column);
  }

 private:
  sqlite3_stmt* m_stmt = nullptr;
};

std::string hostName();
std::string processStartToken(const std::string& procStatPath);
std::string errorText(const std::string& path, sqlite3* db);
Status sqlError(const std::string& path, sqlite3* db);
Status exec(const std::string& path, sqlite3* db, const char* sql);
// The error of the first statement on a connection, where SQLite notices files that are
// not databases.
Status openError(const std::string& path, sqlite3* db);
Status notFound(std::int64_t runId, const std::string& path);
RunRow readRunRow(const Stmt& s);
// Runs a one-row UPDATE/DELETE keyed by run id; "not found" when it changed nothing.
Status updateRun(const std::string& path, sqlite3* db, std::int64_t runId, const char* sql, const std::string* text);
// Marks as interrupted the `running` runs of this host whose writing process is gone.
Status markInterruptedRuns(const std::string& path, sqlite3* db);

// The schema (run_store_schema.cpp): opens a connection, checks the file and its schema
// version, switches to WAL and runs the pending migrations.
Status openDatabase(const std::string& path, sqlite3** out);
int migrationCount();

// Runs a query bound by `bindFn` and collects its rows with `readFn`.
template <typename Row, typename BindFn, typename ReadFn>
Result<std::vector<Row>> query(const std::string& path, sqlite3* db, const char* sql, BindFn bindFn,
                               ReadFn readFn) {
  Stmt s;
  if (!s.prepare(db, sql)) return sqlError(path, db);
  bindFn(s);
  std::vector<Row> rows;
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) rows.push_back(readFn(s));
  if (rc != SQLITE_DONE) return sqlError(path, db);
  return rows;
}

}  // namespace dasp::store_detail
