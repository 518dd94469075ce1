// SPDX-License-Identifier: MIT
// The run store's disk filling up mid-run (`dasp run` with --db on a small tmpfs that the
// test fills to the last page while the run trains). Space that comes back: the runner
// kept its rows in memory, writes them when it can, says so, and the run completes with
// no row lost. Space that never comes back: the run ends with an error that names the
// store and counts the rows not written. Either way the store file passes SQLite's
// integrity check and the rows committed before stay readable. Mounting needs root (CI
// runs as root, so there this test never skips).
#include "core/store/run_store.h"
#include "tests/support/processes.h"
#include "tests/support/specs.h"

#include <sqlite3.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <QDir>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

using RE = dasp::v1::RunEvent;

namespace {

// One read-only connection for a query's single integer, or its text (-1 / "" on error).
struct ReadOnlyStore {
  explicit ReadOnlyStore(const QString& path) {
    if (sqlite3_open_v2(path.toUtf8().constData(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) close();
  }
  ~ReadOnlyStore() { close(); }
  void close() {
    sqlite3_close(db);
    db = nullptr;
  }
  std::string text(const char* sql) const {
    if (db == nullptr) return {};
    sqlite3_stmt* stmt = nullptr;
    std::string out;
    if (sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr) == SQLITE_OK && sqlite3_step(stmt) == SQLITE_ROW) {
      const auto* t = sqlite3_column_text(stmt, 0);
      out = t ? reinterpret_cast<const char*>(t) : "";
    }
    sqlite3_finalize(stmt);
    return out;
  }
  long long number(const char* sql) const {
    const std::string t = text(sql);
    return t.empty() ? -1 : std::stoll(t);
  }
  sqlite3* db = nullptr;
};

// Fills the file system of `path` to its last page; the file stays until removed.
bool fillDisk(const QString& path) {
  std::FILE* f = std::fopen(path.toUtf8().constData(), "wb");
  if (f == nullptr) return false;
  std::setvbuf(f, nullptr, _IONBF, 0);
  const std::vector<char> chunk(1 << 20, 'x');
  for (std::size_t size : {std::size_t{1} << 20, std::size_t{4096}, std::size_t{1}}) {
    while (std::fwrite(chunk.data(), 1, size, f) == size) {
    }
    std::clearerr(f);
  }
  const bool full = errno == ENOSPC;
  std::fclose(f);
  return full;
}

}  // namespace

class TestStoreFull : public QObject {
  Q_OBJECT

 private slots:
  void init();
  void cleanup();
  void spaceComesBack();
  void spaceNeverComesBack();

 private:
  // Starts `dasp run` on a synthetic run of `seconds` with its store on the tmpfs, and
  // returns once it has committed a few evaluations.
  void startRun(QProcess& p, const QString& name, double seconds);
  QString readErr(QProcess& p);

  QTemporaryDir m_dir;
  QString m_mount;
  QString m_db;
  QString m_err;
};

void TestStoreFull::init() {
  if (geteuid() != 0) QSKIP("mounting a small tmpfs needs root (CI runs as root)");
  m_mount = m_dir.filePath("store-disk");
  QVERIFY(QDir().mkpath(m_mount));
  if (::mount("tmpfs", m_mount.toUtf8().constData(), "tmpfs", 0, "size=16m") != 0) {
    QFAIL(qPrintable(QString("cannot mount a tmpfs at %1: %2").arg(m_mount, strerror(errno))));
  }
  m_db = QDir(m_mount).filePath("runs.sqlite");
  m_err.clear();
}

void TestStoreFull::cleanup() {
  if (!m_mount.isEmpty()) ::umount2(m_mount.toUtf8().constData(), MNT_DETACH);
  m_mount.clear();
}

QString TestStoreFull::readErr(QProcess& p) {
  m_err += QString::fromUtf8(p.readAllStandardError());
  return m_err;
}

void TestStoreFull::startRun(QProcess& p, const QString& name, double seconds) {
  test_support::SyntheticSpec base;
  base.name = name;
  base.workers = 2;
  base.maxSeconds = seconds;
  const auto spec = test_support::writeSpecFile(m_dir.path(), name, base.json());
  test_support::startDasp(p, {"run", spec, "--db", m_db, "--json"});
  QVERIFY(p.waitForStarted(10000));
  // The run trains and its rows reach the store before the disk fills.
  QTRY_VERIFY2_WITH_TIMEOUT(ReadOnlyStore(m_db).number("SELECT COUNT(*) FROM evaluations") >= 3,
                            qPrintable(readErr(p)), 30000);
}

void TestStoreFull::spaceComesBack() {
  QProcess p;
  startRun(p, "store-full-then-room", 8);
  if (QTest::currentTestFailed()) return;
  const QString filler = QDir(m_mount).filePath("filler");
  QVERIFY(fillDisk(filler));
  // The recorder's next batch finds the disk full; the runner says it keeps the rows.
  QTRY_VERIFY2_WITH_TIMEOUT(readErr(p).contains("the run store is full"), qPrintable(m_err), 10000);
  QVERIFY(QFile::remove(filler));
  QTRY_VERIFY2_WITH_TIMEOUT(readErr(p).contains("the run store has room again"), qPrintable(m_err), 10000);
  QVERIFY2(p.waitForFinished(60000), qPrintable(readErr(p)));
  readErr(p);
  QCOMPARE(p.exitCode(), 0);
  const auto lines = QString::fromUtf8(p.readAllStandardOutput()).trimmed().split('\n');
  const auto json = QJsonDocument::fromJson(lines.last().toUtf8()).object();
  QCOMPARE(json["status"].toString(), QStringLiteral("completed"));

  ReadOnlyStore raw(m_db);
  QCOMPARE(raw.text("PRAGMA integrity_check"), std::string("ok"));
  auto store = dasp::RunStore::open(m_db.toStdString());
  QVERIFY2(store.isOk(), store.message().c_str());
  const auto runId = static_cast<std::int64_t>(json["run_id"].toInteger());
  QCOMPARE(store.value()->run(runId)->status, dasp::RunStatus::Completed);
  // The outage is recorded, with the rows of the run made meanwhile: evaluations kept
  // coming every 0.3 s while the disk was full, and are all there.
  const auto events = store.value()->events(runId).value();
  double fullAt = -1, writableAt = -1;
  for (const auto& e : events) {
    if (e.code == RE::STORE_FULL && fullAt < 0) fullAt = e.tS;
    if (e.code == RE::STORE_WRITABLE && writableAt < 0) writableAt = e.tS;
  }
  QVERIFY2(fullAt > 0 && writableAt > fullAt, qPrintable(m_err));
  const auto evaluations = store.value()->evaluations(runId).value();
  const auto during = std::count_if(evaluations.begin(), evaluations.end(),
                                    [&](const dasp::EvaluationRow& e) { return e.tS > fullAt && e.tS < writableAt; });
  QVERIFY2(during >= 1, qPrintable(QString("%1 evaluations between %2 and %3 s").arg(during).arg(fullAt).arg(writableAt)));
  // The store's recovery figures: held rows, none lost.
  std::map<std::string, double> summary;
  for (const auto& row : store.value()->summary(runId).value()) {
    if (row.value) summary[row.key] = *row.value;
  }
  qInfo("store full for %.2f s (events at %.2f and %.2f s), %.0f rows held at most, %.0f lost; %lld evaluations "
        "written while full",
        summary["store_full_s"], fullAt, writableAt, summary["store_rows_held_max"], summary["store_rows_lost"],
        static_cast<long long>(during));
  QVERIFY2(summary.count("store_rows_held_max") && summary["store_rows_held_max"] >= 1, qPrintable(m_err));
  QCOMPARE(summary["store_rows_lost"], 0.0);
  QVERIFY(summary["store_full_s"] > 0);
}

void TestStoreFull::spaceNeverComesBack() {
  QProcess p;
  startRun(p, "store-full-to-the-end", 4);
  if (QTest::currentTestFailed()) return;
  const long long before = ReadOnlyStore(m_db).number("SELECT COUNT(*) FROM evaluations");
  QVERIFY(fillDisk(QDir(m_mount).filePath("filler")));
  QVERIFY2(p.waitForFinished(60000), qPrintable(readErr(p)));
  readErr(p);
  // The run ends with an error that says what happened and where.
  QVERIFY2(p.exitStatus() == QProcess::NormalExit && p.exitCode() != 0, qPrintable(m_err));
  for (const QString& text : {m_db, QStringLiteral("the disk is full"), QStringLiteral("could not be written"),
                              QStringLiteral("stay readable")}) {
    QVERIFY2(m_err.contains(text), qPrintable(text + " not in: " + m_err));
  }
  qInfo("%s", qPrintable(m_err.trimmed().split('\n').last()));
  // Still full, the file is intact and what was committed is there.
  ReadOnlyStore raw(m_db);
  QCOMPARE(raw.text("PRAGMA integrity_check"), std::string("ok"));
  QVERIFY2(raw.number("SELECT COUNT(*) FROM evaluations") >= before, qPrintable(m_err));
  QCOMPARE(raw.number("SELECT COUNT(*) FROM runs"), 1LL);
}

QTEST_GUILESS_MAIN(TestStoreFull)
#include "tst_store_full.moc"
