// SPDX-License-Identifier: MIT
// RunStore and RunRecorder over the SQLite C API. See core/run_store.h.
//
// Opening: the first statement on a connection reads the schema (SQLite only notices a
// file that is not a database then), the schema version is checked before anything is
// written, then the connection is switched to WAL and pending migrations run, one
// transaction each. RunStore::open also marks as interrupted the `running` runs of this
// host whose writing process is gone.
//
// RunRecorder: producers append to a vector under a mutex; a writer thread swaps the vector
// out and commits it in one transaction with statements prepared once. A sequence number
// (records queued / records committed) lets flush() wait without polling.

#include "core/run_store.h"

#include "core/legacy_events.h"

#include <sqlite3.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <mutex>
#include <sstream>
#include <system_error>
#include <thread>
#include <type_traits>
#include <utility>
#include <variant>

#include <pwd.h>
#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

namespace dasp {

namespace {

// ---------------------------------------------------------------------------------------
// Schema and migrations. Entry i brings the schema from version i to version i + 1.
// Never edit a released entry; append a new one.

const char* const kMigrations[] = {
    // Version 1: the initial schema.
    R"sql(
CREATE TABLE IF NOT EXISTS schema_version(version INTEGER NOT NULL);

CREATE TABLE runs(
  id INTEGER PRIMARY KEY,
  kind TEXT NOT NULL DEFAULT '',
  name TEXT NOT NULL DEFAULT '',
  model TEXT NOT NULL DEFAULT '',
  dataset TEXT NOT NULL DEFAULT '',
  strategy TEXT NOT NULL DEFAULT '',
  recovery TEXT NOT NULL DEFAULT '',
  engine TEXT NOT NULL DEFAULT '',
  seed INTEGER NOT NULL DEFAULT 0,
  status TEXT NOT NULL DEFAULT 'running',
  spec_json TEXT NOT NULL DEFAULT '',
  host TEXT NOT NULL DEFAULT '',
  pid INTEGER NOT NULL DEFAULT 0,
  pid_start TEXT NOT NULL DEFAULT '',
  code_version TEXT NOT NULL DEFAULT '',
  started_at REAL NOT NULL DEFAULT 0,
  ended_at REAL NULL,
  tags TEXT NOT NULL DEFAULT '',
  notes TEXT NOT NULL DEFAULT '',
  error TEXT NOT NULL DEFAULT ''
);
CREATE INDEX runs_status ON runs(status);

-- The primary key (run_id, node) doubles as the index on run_id.
CREATE TABLE nodes(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  node TEXT NOT NULL,
  role TEXT NOT NULL DEFAULT '',
  host TEXT NOT NULL DEFAULT '',
  pid INTEGER NOT NULL DEFAULT 0,
  exit_code INTEGER NULL,
  signal INTEGER NULL,
  cpu_s REAL NOT NULL DEFAULT 0,
  max_rss_kb INTEGER NOT NULL DEFAULT 0,
  bytes_sent INTEGER NOT NULL DEFAULT 0,
  bytes_received INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY(run_id, node)
);

CREATE TABLE evaluations(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  t_s REAL NOT NULL,
  version INTEGER NOT NULL,
  updates INTEGER NOT NULL,
  samples INTEGER NOT NULL,
  loss REAL NOT NULL,
  accuracy REAL NOT NULL
);
CREATE INDEX evaluations_run ON evaluations(run_id);

CREATE TABLE samples(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  node TEXT NOT NULL,
  series TEXT NOT NULL,
  t_s REAL NOT NULL,
  version INTEGER NOT NULL,
  value REAL NOT NULL
);
CREATE INDEX samples_run_series ON samples(run_id, series);

CREATE TABLE state_intervals(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  node TEXT NOT NULL,
  state TEXT NOT NULL,
  parallel_state TEXT NOT NULL DEFAULT '',
  t0_s REAL NOT NULL,
  t1_s REAL NOT NULL
);
CREATE INDEX state_intervals_run ON state_intervals(run_id);

CREATE TABLE decisions(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  t_s REAL NOT NULL,
  node TEXT NOT NULL DEFAULT '',
  decision TEXT NOT NULL,
  reason TEXT NOT NULL DEFAULT ''
);
CREATE INDEX decisions_run ON decisions(run_id);

CREATE TABLE events(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  t_s REAL NOT NULL,
  kind TEXT NOT NULL,
  node TEXT NOT NULL DEFAULT '',
  detail TEXT NOT NULL DEFAULT ''
);
CREATE INDEX events_run ON events(run_id);

CREATE TABLE node_logs(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  node TEXT NOT NULL,
  t_s REAL NOT NULL,
  stream TEXT NOT NULL,
  line TEXT NOT NULL
);
CREATE INDEX node_logs_run ON node_logs(run_id);

-- The primary key (run_id, key) doubles as the index on run_id.
CREATE TABLE summaries(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  key TEXT NOT NULL,
  value REAL NULL,
  text TEXT NOT NULL DEFAULT '',
  PRIMARY KEY(run_id, key)
);
)sql",
    // Version 2: the fault drills of a run with their recovery metrics
    // (core/recovery_metrics.h); NULL where a figure is absent (or not finite).
    R"sql(
CREATE TABLE faults(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  idx INTEGER NOT NULL,
  node TEXT NOT NULL DEFAULT '',
  action TEXT NOT NULL DEFAULT '',
  at_s REAL NOT NULL,
  restart_at_s REAL NULL,
  detected_at_s REAL NULL,
  resumed_at_s REAL NULL,
  version_before INTEGER NOT NULL DEFAULT 0,
  version_after INTEGER NULL,
  gradients_during_outage INTEGER NOT NULL DEFAULT 0,
  gradients_dropped INTEGER NOT NULL DEFAULT 0,
  gradients_discarded INTEGER NOT NULL DEFAULT 0,
  cpu_s REAL NOT NULL DEFAULT 0,
  detail TEXT NOT NULL DEFAULT '',
  detection_s REAL NULL,
  downtime_s REAL NULL,
  updates_lost INTEGER NULL,
  accuracy_before REAL NULL,
  accuracy_lowest_after REAL NULL,
  recover_s REAL NULL,
  accuracy_jump REAL NULL,
  final_accuracy REAL NULL,
  PRIMARY KEY(run_id, idx)
);
)sql",
    // Version 3: typed events. `code` is a dasp.v1.RunEvent.Code number and `target` the
    // node the event acts on; the rows already there get both from their text once, in
    // backfillEventCodes() below (kMigrationBackfills).
    R"sql(
ALTER TABLE events ADD COLUMN code INTEGER NOT NULL DEFAULT 0;
ALTER TABLE events ADD COLUMN target TEXT NOT NULL DEFAULT '';
)sql",
};

constexpr int kMigrationCount = static_cast<int>(sizeof(kMigrations) / sizeof(kMigrations[0]));

// Data steps of a migration that SQL cannot express, by the version the migration
// reaches; run in the migration's transaction, after its SQL.
Status backfillEventCodes(const std::string& path, sqlite3* db);
struct MigrationBackfill {
  int version;
  Status (*run)(const std::string& path, sqlite3* db);
};
const MigrationBackfill kMigrationBackfills[] = {{3, backfillEventCodes}};

constexpr std::size_t kBatchRows = 4096;  // the writer commits early past this many rows

// ---------------------------------------------------------------------------------------
// Small helpers.

double nowSeconds() {
  using namespace std::chrono;
  return duration_cast<duration<double>>(system_clock::now().time_since_epoch()).count();
}

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

// The schema version stored in the file: 0 for a new (empty) file. Fails when the file is
// not SQLite, or is a SQLite database that is not a run store.
Result<int> readSchemaVersion(const std::string& path, sqlite3* db) {
  Stmt tables;
  if (!tables.prepare(db,
                      "SELECT count(*), sum(name = 'schema_version') FROM sqlite_master "
                      "WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'")) {
    return openError(path, db);
  }
  int rc = tables.step();
  if (rc != SQLITE_ROW) return openError(path, db);
  const std::int64_t tableCount = tables.int64(0);
  const std::int64_t hasVersion = tables.int64(1);
  if (tableCount == 0) return 0;
  if (hasVersion == 0) {
    return Status::error(path + ": not a dasp run store (SQLite database without a " +
                         "schema_version table)");
  }
  Stmt version;
  if (!version.prepare(db, "SELECT max(version) FROM schema_version")) return openError(path, db);
  rc = version.step();
  if (rc != SQLITE_ROW) return openError(path, db);
  return static_cast<int>(version.int64(0));
}

Status migrate(const std::string& path, sqlite3* db) {
  for (int from = 0; from < kMigrationCount; ++from) {
    // Re-read the version inside a write transaction: another process may have migrated.
    if (Status s = exec(path, db, "BEGIN IMMEDIATE"); !s) return s;
    auto current = readSchemaVersion(path, db);
    if (!current) {
      exec(path, db, "ROLLBACK");
      return current.status();
    }
    if (*current > from) {
      exec(path, db, "COMMIT");
      continue;
    }
    Status s = exec(path, db, kMigrations[from]);
    for (const auto& backfill : kMigrationBackfills) {
      if (s && backfill.version == from + 1) s = backfill.run(path, db);
    }
    if (s) {
      const std::string setVersion = "DELETE FROM schema_version; INSERT INTO schema_version(version) VALUES(" +
                                     std::to_string(from + 1) + ");";
      s = exec(path, db, setVersion.c_str());
    }
    if (s) s = exec(path, db, "COMMIT");
    if (!s) {
      exec(path, db, "ROLLBACK");
      return Status::error(s.message() + " (while migrating the schema to version " +
                           std::to_string(from + 1) + ")");
    }
  }
  return Status::ok();
}

// Schema version 3: the events of older files get their code and target from their kind
// and text, once (core/legacy_events.h: the one reader of `detail`).
Status backfillEventCodes(const std::string& path, sqlite3* db) {
  Stmt select;
  Stmt update;
  if (!select.prepare(db, "SELECT rowid, kind, detail FROM events") ||
      !update.prepare(db, "UPDATE events SET code = ?1, target = ?2 WHERE rowid = ?3")) {
    return sqlError(path, db);
  }
  int rc = SQLITE_ROW;
  while ((rc = select.step()) == SQLITE_ROW) {
    const LegacyMeaning meaning = classifyLegacyEvent(kindFromName(select.text(1)), select.text(2));
    if (meaning.code == v1::RunEvent::CODE_UNSPECIFIED && meaning.target.empty()) continue;
    update.bind(1, static_cast<int>(meaning.code));
    update.bind(2, meaning.target);
    update.bind(3, select.int64(0));
    if (update.step() != SQLITE_DONE) return sqlError(path, db);
    update.reset();
  }
  return rc == SQLITE_DONE ? Status::ok() : sqlError(path, db);
}

// Opens a connection, checks the file and its schema version (before writing anything),
// sets the pragmas and applies pending migrations. On success *out owns the connection.
Status openDatabase(const std::string& path, sqlite3** out) {
  *out = nullptr;
  if (path.empty()) return Status::error("run store path is empty");

  std::error_code ec;
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty() && !std::filesystem::exists(parent, ec)) {
    std::filesystem::create_directories(parent, ec);
    if (ec) {
      return Status::error(path + ": cannot create directory " + parent.string() + ": " +
                           ec.message());
    }
  }

  sqlite3* db = nullptr;
  const int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX;
  if (sqlite3_open_v2(path.c_str(), &db, flags, nullptr) != SQLITE_OK) {
    Status s = sqlError(path, db);
    sqlite3_close(db);
    return s;
  }
  sqlite3_extended_result_codes(db, 1);
  sqlite3_busy_timeout(db, 5000);

  auto fail = [&](Status s) {
    sqlite3_close(db);
    return s;
  };

  // The first statement: detects a file that is not SQLite and a newer schema, both
  // before anything is written to the file.
  auto version = readSchemaVersion(path, db);
  if (!version) return fail(version.status());
  if (*version > kMigrationCount) {
    return fail(Status::error(path + ": schema version " + std::to_string(*version) +
                              " is newer than this build supports (" +
                              std::to_string(kMigrationCount) +
                              "); upgrade dasp or use another --db file"));
  }

  for (const char* pragma : {"PRAGMA journal_mode=WAL", "PRAGMA busy_timeout=5000",
                             "PRAGMA foreign_keys=ON", "PRAGMA synchronous=NORMAL"}) {
    if (Status s = exec(path, db, pragma); !s) return fail(s);
  }

  if (*version < kMigrationCount) {
    if (Status s = migrate(path, db); !s) return fail(s);
  }
  *out = db;
  return Status::ok();
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
  const double now = nowSeconds();
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

RunStatus statusFromColumn(const std::string& text) {
  // An unknown word (written by a newer build) reads as failed rather than running.
  return runStatusFromString(text).value_or(RunStatus::Failed);
}

constexpr const char* kRunColumns =
    "id, kind, name, model, dataset, strategy, recovery, engine, seed, status, host, pid, "
    "code_version, started_at, ended_at, tags, notes, error, spec_json";

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
  return row;
}

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

}  // namespace

// -----------------------------------------------------------------------------------------

const char* toString(RunStatus status) {
  switch (status) {
    case RunStatus::Running: return "running";
    case RunStatus::Completed: return "completed";
    case RunStatus::Stopped: return "stopped";
    case RunStatus::Failed: return "failed";
    case RunStatus::Interrupted: return "interrupted";
  }
  return "failed";
}

std::optional<RunStatus> runStatusFromString(const std::string& text) {
  for (RunStatus s : {RunStatus::Running, RunStatus::Completed, RunStatus::Stopped,
                      RunStatus::Failed, RunStatus::Interrupted}) {
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

int RunStore::schemaVersion() { return kMigrationCount; }

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
  s.bind(14, nowSeconds());
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
  s.bind(3, nowSeconds());
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
        row.loss = s.real(5);
        row.accuracy = s.real(6);
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
        row.value = s.real(5);
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
      "SELECT run_id, t_s, node, decision, reason FROM decisions WHERE run_id = ?1 "
      "ORDER BY t_s, rowid",
      [&](Stmt& s) { s.bind(1, runId); },
      [](const Stmt& s) {
        DecisionRow row;
        row.runId = s.int64(0);
        row.tS = s.real(1);
        row.node = s.text(2);
        row.decision = s.text(3);
        row.reason = s.text(4);
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
      "bytes_received FROM nodes WHERE run_id = ?1 ORDER BY node",
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

// -----------------------------------------------------------------------------------------
// RunRecorder

namespace {
// recordFaults(): replaces every fault row of the run.
struct FaultsRecord {
  std::vector<RecoveryMetrics> faults;
};
using Record = std::variant<EvaluationRow, SampleRow, StateIntervalRow, DecisionRow, EventRow,
                            LogRow, NodeRow, SummaryRow, FaultsRecord>;
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
                                  "INSERT INTO decisions(run_id, t_s, node, decision, reason) "
                                  "VALUES(?1, ?2, ?3, ?4, ?5)") &&
           insertEvent.prepare(db,
                               "INSERT INTO events(run_id, t_s, kind, node, detail, code, target) "
                               "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)") &&
           insertLog.prepare(db,
                             "INSERT INTO node_logs(run_id, node, t_s, stream, line) "
                             "VALUES(?1, ?2, ?3, ?4, ?5)") &&
           replaceNode.prepare(db,
                               "INSERT OR REPLACE INTO nodes(run_id, node, role, host, pid, "
                               "exit_code, signal, cpu_s, max_rss_kb, bytes_sent, bytes_received) "
                               "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)") &&
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

  // Commits a batch in one transaction; returns the error, if any (the batch is rolled back).
  Status writeBatch(const std::vector<Record>& batch) {
    if (Status s = exec(path, db, "BEGIN IMMEDIATE"); !s) return s;
    for (const Record& record : batch) {
      if (!write(record)) {
        Status s = sqlError(path, db);
        exec(path, db, "ROLLBACK");
        return s;
      }
    }
    if (Status s = exec(path, db, "COMMIT"); !s) {
      exec(path, db, "ROLLBACK");
      return s;
    }
    return Status::ok();
  }

  bool urgent() const { return stopping || queue.size() > kBatchRows || flushTarget > committedSeq; }

  void run() {
    std::vector<Record> batch;
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
      Status s = writeBatch(batch);
      batch.clear();
      lock.lock();
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
      committed.wait(lock, [&] { return committedSeq >= target || writerDone; });
    }
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

Status RunRecorder::finish(RunStatus status, const std::string& error) {
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
  if (!update.prepare(d.db, "UPDATE runs SET status = ?2, ended_at = ?3, error = ?4 WHERE id = ?1")) {
    return result.isOk() ? sqlError(d.path, d.db) : result;
  }
  update.bind(1, d.runId);
  update.bind(2, toString(status));
  update.bind(3, nowSeconds());
  update.bind(4, error);
  if (update.step() != SQLITE_DONE) {
    Status s = sqlError(d.path, d.db);
    return result.isOk() ? s : result;
  }
  if (sqlite3_changes(d.db) == 0 && result.isOk()) return notFound(d.runId, d.path);
  return result;
}

}  // namespace dasp
