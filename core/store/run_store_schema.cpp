// SPDX-License-Identifier: MIT
// The run store's schema and its migrations. Opening: the first statement on a connection
// reads the schema (SQLite only notices a file that is not a database then), the schema
// version is checked before anything is written, then the connection is switched to WAL
// and pending migrations run, one transaction each.
#include "core/store/sqlite_store.h"

#include "core/events/legacy_events.h"

#include <sqlite3.h>

#include <cerrno>
#include <filesystem>
#include <system_error>

namespace dasp::store_detail {

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
    // (core/results/recovery_metrics.h); NULL where a figure is absent (or not finite).
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
    // Version 4: divergence. A run whose model left training ends with status 'diverged';
    // the new runs columns say what was seen (core DivergenceCause's word), at which
    // version and run time (NULL for every other run, and for the runs of older files).
    // A diverging model's losses are NaN, which SQLite stores as NULL: the loss, accuracy
    // and sample value columns become nullable (NULL reads back as NaN), by rebuilding
    // their two tables as SQLite's ALTER TABLE cannot drop a NOT NULL.
    R"sql(
ALTER TABLE runs ADD COLUMN divergence_cause TEXT NULL;
ALTER TABLE runs ADD COLUMN diverged_version INTEGER NULL;
ALTER TABLE runs ADD COLUMN diverged_t_s REAL NULL;

CREATE TABLE evaluations_v4(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  t_s REAL NOT NULL,
  version INTEGER NOT NULL,
  updates INTEGER NOT NULL,
  samples INTEGER NOT NULL,
  loss REAL NULL,
  accuracy REAL NULL
);
INSERT INTO evaluations_v4 SELECT run_id, t_s, version, updates, samples, loss, accuracy FROM evaluations;
DROP TABLE evaluations;
ALTER TABLE evaluations_v4 RENAME TO evaluations;
CREATE INDEX evaluations_run ON evaluations(run_id);

CREATE TABLE samples_v4(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  node TEXT NOT NULL,
  series TEXT NOT NULL,
  t_s REAL NOT NULL,
  version INTEGER NOT NULL,
  value REAL NULL
);
INSERT INTO samples_v4 SELECT run_id, node, series, t_s, version, value FROM samples;
DROP TABLE samples;
ALTER TABLE samples_v4 RENAME TO samples;
CREATE INDEX samples_run_series ON samples(run_id, series);
)sql",
    // Version 5: typed decisions. `kind` is a core DecisionKind number (decision_kind.h);
    // the rows already there get it from the first word every writer put in `decision`
    // (toString(DecisionKind)), once, here; a row whose text names no kind keeps NULL.
    R"sql(
ALTER TABLE decisions ADD COLUMN kind INTEGER NULL;
UPDATE decisions SET kind = CASE
  WHEN decision LIKE 'state\_change%' ESCAPE '\' OR decision LIKE '%->%' THEN 0
  WHEN decision LIKE 'drop%' THEN 1
  WHEN decision LIKE 'barrier\_timeout%' ESCAPE '\' THEN 2
  WHEN decision LIKE 'repartition%' THEN 3
  WHEN decision LIKE 'grant%' THEN 4
END;
)sql",
    // Version 6: where a node ran under Slurm, its step as Slurm names it ("JOB.STEP",
    // squeue -s / sacct / scancel take it); '' for every other node.
    R"sql(
ALTER TABLE nodes ADD COLUMN slurm_step TEXT NOT NULL DEFAULT '';
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
// and text, once (core/events/legacy_events.h: the one reader of `detail`).
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

}  // namespace

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

int migrationCount() { return kMigrationCount; }

}  // namespace dasp::store_detail
