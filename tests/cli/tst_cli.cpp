// SPDX-License-Identifier: MIT
// The `dasp` binary end to end: bad input gets a clear error naming the problem and a
// non-zero exit, a short real training run is recorded in the store, and Ctrl-C/SIGTERM
// leave a readable `stopped` run.
#include "core/store/run_store.h"
#include "tests/support/processes.h"

#include <sqlite3.h>
#include <zlib.h>

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <cstring>

namespace {

using test_support::daspBinary;
using test_support::runDasp;

void writeGz(const QString& path, const QByteArray& bytes) {
  gzFile f = gzopen(path.toLocal8Bit().constData(), "wb");
  QVERIFY(f != nullptr);
  QCOMPARE(gzwrite(f, bytes.constData(), static_cast<unsigned>(bytes.size())), bytes.size());
  gzclose(f);
}

QByteArray be32(quint32 v) {
  QByteArray b(4, '\0');
  b[0] = static_cast<char>(v >> 24);
  b[1] = static_cast<char>(v >> 16);
  b[2] = static_cast<char>(v >> 8);
  b[3] = static_cast<char>(v);
  return b;
}

QByteArray readAll(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return {};
  return f.readAll();
}

}  // namespace

class TestCli : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void missingDatasetSaysHowToInstall();
  void truncatedIdxIsNamed();
  void wrongMagicIsNamed();
  void unknownSpecFieldIsNamed();
  void invalidSpecValueIsNamed();
  void storeNotSqliteLosesNothing();
  void storeWithNewerSchema();
  void unknownOptionAndCommand();
  void badValuesNameFlagAndValue();
  void helpIsGeneratedPerCommand();
  void benchSimRunsEveryCase();
  void trainsAndRecordsRun();
  void sigtermLeavesStoppedRun();
  void simRealGradientsAreBitwiseReproducible();
  void simEngineErrorsAreNamed();
  void profileAndPredictFromARun();

 private:
  QTemporaryDir m_dir;
};

void TestCli::initTestCase() {
  QVERIFY2(QFile::exists(daspBinary()), qPrintable(daspBinary() + " not built"));
  QVERIFY(m_dir.isValid());
}

void TestCli::missingDatasetSaysHowToInstall() {
  const auto o = runDasp({"train", "--no-store", "--dataset-path", m_dir.filePath("nowhere")});
  QCOMPARE(o.exitCode, 2);
  QVERIFY2(o.err.contains("dataset-fashion-mnist") && o.err.contains("nowhere"), qPrintable(o.err));
}

void TestCli::truncatedIdxIsNamed() {
  QDir().mkpath(m_dir.filePath("trunc"));
  const auto dir = m_dir.filePath("trunc");
  QByteArray images = be32(0x803) + be32(10) + be32(28) + be32(28) + QByteArray(28 * 28 * 3, '\1');
  QByteArray labels = be32(0x801) + be32(10) + QByteArray(10, '\2');
  writeGz(dir + "/train-images-idx3-ubyte.gz", images);  // 3 of 10 images
  writeGz(dir + "/train-labels-idx1-ubyte.gz", labels);
  writeGz(dir + "/t10k-images-idx3-ubyte.gz", images);
  writeGz(dir + "/t10k-labels-idx1-ubyte.gz", labels);
  const auto o = runDasp({"train", "--no-store", "--dataset-path", dir});
  QCOMPARE(o.exitCode, 2);
  QVERIFY2(o.err.contains("train-images-idx3-ubyte.gz") && o.err.contains("truncated"), qPrintable(o.err));
}

void TestCli::wrongMagicIsNamed() {
  QDir().mkpath(m_dir.filePath("magic"));
  const auto dir = m_dir.filePath("magic");
  QByteArray labels = be32(0x801) + be32(2) + QByteArray(2, '\1');
  writeGz(dir + "/train-images-idx3-ubyte.gz", labels);  // a label file where images belong
  writeGz(dir + "/train-labels-idx1-ubyte.gz", labels);
  writeGz(dir + "/t10k-images-idx3-ubyte.gz", labels);
  writeGz(dir + "/t10k-labels-idx1-ubyte.gz", labels);
  const auto o = runDasp({"train", "--no-store", "--dataset-path", dir});
  QCOMPARE(o.exitCode, 2);
  QVERIFY2(o.err.contains("train-images-idx3-ubyte.gz") && o.err.contains("magic"), qPrintable(o.err));
}

void TestCli::unknownSpecFieldIsNamed() {
  const auto path = m_dir.filePath("unknown.json");
  QFile f(path);
  QVERIFY(f.open(QIODevice::WriteOnly));
  f.write(R"({"model": {"name": "mlp"}, "optimiser": {"lr": 0.1}})");
  f.close();
  const auto o = runDasp({"train", path, "--no-store"});
  QCOMPARE(o.exitCode, 2);
  QVERIFY2(o.err.contains(path) && o.err.contains("optimiser"), qPrintable(o.err));
}

void TestCli::invalidSpecValueIsNamed() {
  const auto path = m_dir.filePath("invalid.json");
  QFile f(path);
  QVERIFY(f.open(QIODevice::WriteOnly));
  f.write(R"({"optimizer": {"lr": -0.5}})");
  f.close();
  const auto o = runDasp({"train", path, "--no-store"});
  QCOMPARE(o.exitCode, 2);
  QVERIFY2(o.err.contains(path) && o.err.contains("optimizer.lr") && o.err.contains("-0.5"), qPrintable(o.err));
  const auto bad = runDasp({"train", "--no-store", "--set", "optimizer.momentum=lots"});
  QCOMPARE(bad.exitCode, 2);
  QVERIFY2(bad.err.contains("optimizer.momentum") && bad.err.contains("lots"), qPrintable(bad.err));
  // `dasp validate`: every number finite and in range, the field and the value named.
  const QString preset = QStringLiteral(DASP_SOURCE_DIR "/experiments/default.json");
  const std::pair<const char*, const char*> cases[] = {
      {"cluster.slowdowns=inf", "cluster.slowdowns[0]: must be a finite number (got inf)"},
      {"evaluation.every_s=0.001", "evaluation.every_s: must be 0 (by steps only) or at least 0.01 s (got 0.001)"},
      {"batch_size=100000000", "batch_size: 100000000 is larger than the training set (60000 samples)"},
  };
  for (const auto& [assignment, expected] : cases) {
    const auto refused = runDasp({"validate", preset, "--set", assignment});
    QVERIFY2(refused.exitCode == 2 && refused.err.contains(expected), qPrintable(refused.err));
  }
  // Beyond a worker's shard: valid, and a warning says the batch is clamped.
  const auto clamped = runDasp({"validate", preset, "--set", "cluster.count=1000"});
  QVERIFY2(clamped.exitCode == 0 && clamped.err.contains("warning") &&
               clamped.err.contains("is larger than a worker's shard (60 of the 60000") &&
               clamped.err.contains("clamped to the whole shard, 60 samples"),
           qPrintable(clamped.err));
}

void TestCli::storeNotSqliteLosesNothing() {
  const auto path = m_dir.filePath("notes.txt");
  QFile f(path);
  QVERIFY(f.open(QIODevice::WriteOnly));
  f.write("my precious notes, not a database\n");
  f.close();
  const auto before = readAll(path);
  for (const QStringList& args : {QStringList{"runs", "--db", path},
                                  QStringList{"train", "--dataset", "synthetic", "--db", path}}) {
    const auto o = runDasp(args);
    QCOMPARE(o.exitCode, 2);
    QVERIFY2(o.err.contains(path) && o.err.contains("not a SQLite database"), qPrintable(o.err));
  }
  QCOMPARE(readAll(path), before);
}

void TestCli::storeWithNewerSchema() {
  const auto path = m_dir.filePath("future.sqlite");
  {
    auto store = dasp::RunStore::open(path.toStdString());
    QVERIFY(store.isOk());
  }
  sqlite3* db = nullptr;
  QCOMPARE(sqlite3_open(path.toLocal8Bit().constData(), &db), SQLITE_OK);
  QCOMPARE(sqlite3_exec(db, "UPDATE schema_version SET version = 99", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  const auto o = runDasp({"runs", "--db", path});
  QCOMPARE(o.exitCode, 2);
  QVERIFY2(o.err.contains(path) && o.err.contains("newer"), qPrintable(o.err));
}

void TestCli::unknownOptionAndCommand() {
  auto o = runDasp({"train", "--epoch", "3"});
  QCOMPARE(o.exitCode, 2);
  QVERIFY2(o.err.contains("--epoch"), qPrintable(o.err));
  o = runDasp({"fly"});
  QCOMPARE(o.exitCode, 2);
  QVERIFY2(o.err.contains("fly"), qPrintable(o.err));
}

void TestCli::badValuesNameFlagAndValue() {
  // Typed, range-checked options: the message names the flag and the value refused.
  const QList<QStringList> cases{{"train", "--lr", "fast"},
                                 {"train", "--batch", "0"},
                                 {"runs", "--limit", "-3"},
                                 {"runs", "--status", "sideways"},
                                 {"server", "--spec", "x.json", "--port", "70000"},
                                 {"bench", "sim", "--seconds", "nan"},
                                 {"worker", "--server", "127.0.0.1:1", "--connect-timeout", "soon"}};
  for (const auto& args : cases) {
    const auto o = runDasp(args);
    QVERIFY2(o.exitCode == 2, qPrintable(args.join(' ') + ": exit " + QString::number(o.exitCode) + "\n" + o.err));
    QVERIFY2(o.err.contains(args[args.size() - 2]) && o.err.contains(args.last()),
             qPrintable(args.join(' ') + ":\n" + o.err));
  }
  // A flag given without its value.
  const auto missing = runDasp({"run", DASP_SOURCE_DIR "/experiments/hetero-4.json", "--db"});
  QCOMPARE(missing.exitCode, 2);
  QVERIFY2(missing.err.contains("--db"), qPrintable(missing.err));
}

void TestCli::helpIsGeneratedPerCommand() {
  const auto top = runDasp({"--help"});
  QCOMPARE(top.exitCode, 0);
  for (const char* command : {"run", "train", "runs", "tables", "validate", "bench", "info", "server", "worker"}) {
    QVERIFY2(top.out.contains(command), command);
  }
  // Each subcommand's help lists its own options, with their types and defaults.
  const auto run = runDasp({"run", "--help"});
  QCOMPARE(run.exitCode, 0);
  for (const char* option : {"--grid", "--seeds", "--engine", "--reference", "--lr-from", "--set", "--lr"}) {
    QVERIFY2(run.out.contains(option), qPrintable(option + QStringLiteral("\n") + run.out));
  }
  QVERIFY2(!run.out.contains("--restore"), qPrintable(run.out));  // a server option
  const auto sim = runDasp({"bench", "sim", "--help"});
  QCOMPARE(sim.exitCode, 0);
  QVERIFY2(sim.out.contains("--workers") && sim.out.contains("4096"), qPrintable(sim.out));
}

void TestCli::benchSimRunsEveryCase() {
  // The engine's benchmark under DASP's default (ADAPTIVE) rule, which resizes batches:
  // every case runs; the figures themselves are not asserted (no timed assertion).
  const auto o = runDasp({"bench", "sim", "--workers", "64", "--seconds", "0.5", "--json"});
  QVERIFY2(o.exitCode == 0, qPrintable(o.err));
  const auto json = QJsonDocument::fromJson(o.out.toUtf8()).object();
  const auto cases = json["cases"].toArray();
  QCOMPARE(cases.size(), 3);
  for (const auto& c : cases) QVERIFY2(c.toObject()["gradients"].toInteger() > 0, qPrintable(o.out));
}

void TestCli::trainsAndRecordsRun() {
  const auto db = m_dir.filePath("runs.sqlite");
  const auto model = m_dir.filePath("model.bin");
  const auto o = runDasp({"train", "--dataset", "synthetic", "--model", "logreg", "--epochs", "2",
                          "--set", "evaluation.every_steps=50", "--db", db, "--json", "--save", model});
  QVERIFY2(o.exitCode == 0, qPrintable(o.err));
  const auto lines = o.out.trimmed().split('\n');
  const auto json = QJsonDocument::fromJson(lines.last().toUtf8()).object();
  for (const char* key : {"run_id", "final_accuracy", "final_loss", "seconds", "steps", "samples_per_s"}) {
    QVERIFY2(json.contains(key), key);
  }
  QVERIFY(json["final_accuracy"].toDouble() > 0.9);
  QCOMPARE(json["steps"].toInt(), 128);

  auto store = dasp::RunStore::open(db.toStdString());
  QVERIFY(store.isOk());
  const auto runId = static_cast<std::int64_t>(json["run_id"].toInteger());
  auto run = store.value()->run(runId);
  QVERIFY(run.isOk());
  QCOMPARE(run->status, dasp::RunStatus::Completed);
  QCOMPARE(run->model, std::string("logreg"));
  QVERIFY(run->specJson.find("\"batch_size\"") != std::string::npos);
  QVERIFY(store.value()->evaluations(runId)->size() >= 2);
  QVERIFY(!store.value()->samples(runId, "train_loss")->empty());

  // The saved model evaluates to the same accuracy when loaded.
  const auto again = runDasp({"train", "--dataset", "synthetic", "--model", "logreg", "--set", "stop.max_updates=0",
                              "--set", "stop.epochs=0", "--set", "stop.max_seconds=0.000001", "--no-store",
                              "--load", model, "--json"});
  QVERIFY2(again.exitCode == 0, qPrintable(again.err));
  const auto j2 = QJsonDocument::fromJson(again.out.trimmed().split('\n').last().toUtf8()).object();
  QCOMPARE(j2["final_accuracy"].toDouble(), json["final_accuracy"].toDouble());

  const auto listed = runDasp({"runs", "--db", db, "--json"});
  QCOMPARE(listed.exitCode, 0);
  QVERIFY2(listed.out.contains("\"status\":\"completed\""), qPrintable(listed.out));
}

void TestCli::sigtermLeavesStoppedRun() {
  const auto db = m_dir.filePath("stop.sqlite");
  QProcess p;
  test_support::startDasp(p, {"train", "--dataset", "synthetic", "--model", "mlp", "--epochs", "100000", "--db", db,
                      "--quiet"});
  QVERIFY(p.waitForStarted());
  // Wait until the run is in the store and has written at least one evaluation.
  auto evaluated = [&]() -> bool {
    auto store = dasp::RunStore::open(db.toStdString());
    if (!store) return false;
    auto runs = store.value()->listRuns();
    if (!runs || runs->empty()) return false;
    auto evals = store.value()->evaluations(runs->front().id);
    return evals && !evals->empty();
  };
  QTRY_VERIFY_WITH_TIMEOUT(evaluated(), 30000);
  p.terminate();  // SIGTERM, as Ctrl-C would send SIGINT
  QVERIFY(p.waitForFinished(30000));
  QCOMPARE(p.exitCode(), 130);
  auto store = dasp::RunStore::open(db.toStdString());
  QVERIFY(store.isOk());
  auto runs = store.value()->listRuns();
  QCOMPARE(runs->size(), std::size_t{1});
  QCOMPARE(runs->front().status, dasp::RunStatus::Stopped);
  QVERIFY(!store.value()->evaluations(runs->front().id)->empty());
}

// The virtual-cluster engine with real LibTorch gradients (the MLP on synthetic data),
// run twice through `dasp run --engine sim`: the stored evaluation series are bitwise the
// same, and the run is stored as engine "sim".
void TestCli::simRealGradientsAreBitwiseReproducible() {
  const auto db = m_dir.filePath("sim.sqlite");
  const auto spec = m_dir.filePath("sim.json");
  QFile f(spec);
  QVERIFY(f.open(QIODevice::WriteOnly));
  f.write(R"({"name": "sim-cli", "model": {"name": "mlp", "hidden": 32}, "dataset": {"name": "synthetic"},
    "optimizer": {"lr": 0.02, "momentum": 0.9}, "batch_size": 32,
    "cluster": {"count": 4, "slowdowns": [1, 1, 2, 4], "base_iteration_ms": 20},
    "strategy": {"name": "dasp"}, "stop": {"max_seconds": 3, "stop_at_target": false, "target_accuracy": 0.9},
    "evaluation": {"every_s": 0.25}})");
  f.close();
  std::vector<std::int64_t> ids;
  for (int i = 0; i < 2; ++i) {
    const auto o = runDasp({"run", spec, "--engine", "sim", "--db", db, "--json", "--quiet"}, 120000);
    QVERIFY2(o.exitCode == 0, qPrintable(o.err));
    QVERIFY2(o.err.contains("dasp-run-created "), qPrintable(o.err));
    const auto json = QJsonDocument::fromJson(o.out.trimmed().split('\n').last().toUtf8()).object();
    QCOMPARE(json["engine"].toString(), QString("sim"));
    QCOMPARE(json["seconds"].toDouble(), 3.0);
    ids.push_back(static_cast<std::int64_t>(json["run_id"].toInteger()));
  }
  auto store = dasp::RunStore::open(db.toStdString());
  QVERIFY(store.isOk());
  QCOMPARE(store.value()->run(ids[0])->engine, std::string("sim"));
  const auto a = store.value()->evaluations(ids[0]).value();
  const auto b = store.value()->evaluations(ids[1]).value();
  QVERIFY(a.size() >= 12);
  QCOMPARE(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    QVERIFY2(std::memcmp(&a[i].accuracy, &b[i].accuracy, sizeof(double)) == 0, qPrintable(QString::number(i)));
    QVERIFY(std::memcmp(&a[i].loss, &b[i].loss, sizeof(double)) == 0);
    QVERIFY(std::memcmp(&a[i].tS, &b[i].tS, sizeof(double)) == 0);
    QCOMPARE(a[i].version, b[i].version);
  }
  QVERIFY(a.back().accuracy > 0.5);  // it learned
}

void TestCli::simEngineErrorsAreNamed() {
  auto o = runDasp({"run", "--engine", "warp", DASP_SOURCE_DIR "/experiments/hetero-4.json"});
  QCOMPARE(o.exitCode, 2);
  QVERIFY2(o.err.contains("--engine") && o.err.contains("warp"), qPrintable(o.err));
  o = runDasp({"run", DASP_SOURCE_DIR "/experiments/hetero-4.json", "--engine", "sim", "--set", "suite=",
               "--set", "cluster.link.mbit=-1"});
  QCOMPARE(o.exitCode, 2);
  QVERIFY2(o.err.contains("cluster.link.mbit"), qPrintable(o.err));
}

// dasp profile: the speeds and the speed change of an engine run are measured from its
// recorded iterations alone, and the run's spec on that measured cluster (--spec-out)
// runs to the same evaluations; dasp predict runs each strategy on it, the run's own to
// the run's result; a run that is missing or too short, or an unknown strategy, is named.
void TestCli::profileAndPredictFromARun() {
  const auto db = m_dir.filePath("profile.sqlite");
  const auto spec = m_dir.filePath("profiled.json");
  QFile f(spec);
  QVERIFY(f.open(QIODevice::WriteOnly));
  f.write(R"({"name": "profiled", "model": {"name": "mlp", "hidden": 32}, "dataset": {"name": "synthetic"},
    "optimizer": {"lr": 0.02, "momentum": 0.9}, "batch_size": 32,
    "cluster": {"workers": [{"speed": {"base_iteration_ms": 20}}, {"speed": {"base_iteration_ms": 20}},
                            {"speed": {"base_iteration_ms": 40, "changes": [{"at_s": 1.5, "slowdown": 3}]}}]},
    "strategy": {"name": "asp"}, "stop": {"max_seconds": 3, "stop_at_target": false, "target_accuracy": 0.9},
    "evaluation": {"every_s": 0.25}})");
  f.close();
  auto runOnce = [&](const QString& path, std::int64_t* id) {
    const auto o = runDasp({"run", path, "--engine", "sim", "--db", db, "--json", "--quiet"}, 120000);
    QVERIFY2(o.exitCode == 0, qPrintable(o.err));
    *id = static_cast<std::int64_t>(QJsonDocument::fromJson(o.out.trimmed().split('\n').last().toUtf8()).object()["run_id"].toInteger());
  };
  std::int64_t measured = 0, replayed = 0;
  runOnce(spec, &measured);
  const auto o = runDasp({"profile", QString::number(measured), "--db", db, "--json"});
  QVERIFY2(o.exitCode == 0, qPrintable(o.err));
  const auto workers = QJsonDocument::fromJson(o.out.trimmed().toUtf8()).object()["workers"].toArray();
  QCOMPARE(workers.size(), 3);
  auto segments = [&](int w) { return workers[w].toObject()["segments"].toArray(); };
  QCOMPARE(segments(0).size(), 1);
  QVERIFY(std::abs(segments(0)[0].toObject()["seconds_per_sample"].toDouble() - 0.020 / 32) < 1e-9);
  QCOMPARE(segments(2).size(), 2);  // the change, found at 1.5 s to within an iteration
  QVERIFY(std::abs(segments(2)[1].toObject()["seconds_per_sample"].toDouble() - 3 * 0.040 / 32) < 1e-9);
  QVERIFY2(std::abs(segments(2)[1].toObject()["from_s"].toDouble() - 1.5) < 0.12 + 0.01, qPrintable(o.out));
  const auto out = m_dir.filePath("measured.json");
  const auto written = runDasp({"profile", QString::number(measured), "--db", db, "--spec-out", out});
  QVERIFY2(written.exitCode == 0, qPrintable(written.err));
  runOnce(out, &replayed);
  auto store = dasp::RunStore::open(db.toStdString());
  QVERIFY(store.isOk());
  const auto a = store.value()->evaluations(measured).value();
  const auto b = store.value()->evaluations(replayed).value();
  QVERIFY(a.size() >= 12);
  QCOMPARE(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    QCOMPARE(a[i].version, b[i].version);
    QCOMPARE(a[i].accuracy, b[i].accuracy);
    QVERIFY(std::abs(a[i].tS - b[i].tS) < 1e-6);
  }
  // dasp predict: each strategy on the measured cluster, its own among them as it ran.
  const auto predicted = runDasp({"predict", QString::number(measured), "--db", db, "--strategies", "asp,bsp", "--json",
                                  "--quiet"}, 120000);
  QVERIFY2(predicted.exitCode == 0, qPrintable(predicted.err));
  QStringList lines;
  for (const QString& line : predicted.out.trimmed().split('\n')) {
    if (line.startsWith('{')) lines << line;
  }
  QCOMPARE(lines.size(), 2);
  const auto asp = QJsonDocument::fromJson(lines[0].toUtf8()).object();
  const auto bsp = QJsonDocument::fromJson(lines[1].toUtf8()).object();
  QCOMPARE(asp["strategy"].toString(), QString("asp"));
  QCOMPARE(bsp["strategy"].toString(), QString("bsp"));
  QCOMPARE(asp["predicted_from"].toInteger(), measured);
  QCOMPARE(asp["engine"].toString(), QString("sim"));
  const auto source = store.value()->summary(measured).value();
  for (const auto& row : source) {
    if (row.key == "updates") QCOMPARE(asp["updates"].toDouble(), *row.value);
    if (row.key == "final_accuracy") QCOMPARE(asp["final_accuracy"].toDouble(), *row.value);
  }
  // A sweep of DASP's knobs on the measured cluster: one prediction per grid value.
  const auto swept = runDasp({"predict", QString::number(measured), "--db", db, "--strategies", "dasp", "--grid",
                              "strategy.dasp.kappa=1.1,2", "--json", "--quiet"}, 120000);
  QVERIFY2(swept.exitCode == 0, qPrintable(swept.err));
  QStringList kappas;
  for (const QString& line : swept.out.trimmed().split('\n')) {
    if (line.startsWith('{')) kappas << QJsonDocument::fromJson(line.toUtf8()).object()["label"].toString();
  }
  QCOMPARE(kappas.size(), 2);
  QVERIFY2(kappas[0] != kappas[1] && kappas[0].contains("1.1"), qPrintable(kappas.join(", ")));
  const auto bad = runDasp({"predict", QString::number(measured), "--db", db, "--strategies", "asp,fast"});
  QCOMPARE(bad.exitCode, 2);
  QVERIFY2(bad.err.contains("'fast' is not a strategy"), qPrintable(bad.err));
  // Bad input: no such run; a run too short to measure.
  const auto missing = runDasp({"profile", "999", "--db", db});
  QCOMPARE(missing.exitCode, 2);
  QVERIFY2(missing.err.contains("999"), qPrintable(missing.err));
  const auto shortRun = runDasp({"run", spec, "--engine", "sim", "--db", db, "--json", "--quiet", "--set",
                                 "stop.max_seconds=0.2"}, 120000);
  QVERIFY2(shortRun.exitCode == 0, qPrintable(shortRun.err));
  const auto shortId = QJsonDocument::fromJson(shortRun.out.trimmed().split('\n').last().toUtf8()).object()["run_id"].toInteger();
  const auto tooShort = runDasp({"profile", QString::number(shortId), "--db", db});
  QCOMPARE(tooShort.exitCode, 2);
  QVERIFY2(tooShort.err.contains("iterations recorded") && tooShort.err.contains("a profile needs at least"),
           qPrintable(tooShort.err));
}

QTEST_GUILESS_MAIN(TestCli)
#include "tst_cli.moc"
