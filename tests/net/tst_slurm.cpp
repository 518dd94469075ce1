// SPDX-License-Identifier: MIT
// net.slurm: `dasp run` with the SLURM launcher through a real Slurm (slurmctld and two
// slurmd, nodes dasp-a and dasp-b, on 127.0.0.1; tools/slurm-test-cluster.sh). The server
// and the evaluator run on dasp-a, four workers on dasp-b, each node a step of one job:
// inside an allocation (salloc, sbatch), or in the runner's own. A cancelled step is a
// node that exits; the runner's SIGKILL leaves no job and no node process; a job Slurm
// refuses or does not grant in time is an error that says why. A spec without hosts runs on
// the nodes of its allocation; a host's GPUs go one to each of its workers.
// Needs root and Debian's slurmctld, slurmd, slurm-client and munge (tools/setup.sh).
#include "core/store/run_store.h"
#include "tests/support/processes.h"
#include "tests/support/skips.h"
#include "tests/support/specs.h"

#include <signal.h>
#include <unistd.h>

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include <set>

namespace {

using RE = dasp::v1::RunEvent;

int scaled(int ms) { return static_cast<int>(ms * test_support::kProcessTimeScale); }

QString clusterScript() { return QStringLiteral(DASP_SOURCE_DIR "/tools/slurm-test-cluster.sh"); }

// The environment of a `dasp run` outside any allocation: the test's, less Slurm's job.
QProcessEnvironment outsideAnyJob() {
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  for (const QString& key : env.keys()) {
    if (key.startsWith(QLatin1String("SLURM_")) && key != QLatin1String("SLURM_CONF")) env.remove(key);
  }
  return env;
}

}  // namespace

class TestSlurm : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void runInsideAnAllocation();
  void runInItsOwnAllocation();
  void runFromAnSbatchScript();
  void specWithoutHostsTakesTheAllocationsNodes();
  void slurmScriptRunsALaptopSpec();
  void eachWorkerSeesItsOwnGpu();
  void cancelledStepIsANodeExit();
  void killedRunnerLeavesNoJobAndNoNode();
  void refusedJobNamesSlurmsReason();
  void allocationNotGrantedInTimeIsWithdrawn();
  void cleanupTestCase();

 private:
  // A 4-worker spec on synthetic data, without a launch block.
  static QJsonObject laptopSpec(const QString& name, const QString& strategy, double seconds);
  // The same with the SLURM launcher: server and evaluator on dasp-a, workers on dasp-b.
  QString writeSpec(const QString& name, const QString& strategy, double seconds, const QJsonObject& launchExtra = {});
  QString work() const { return m_dir.filePath(QStringLiteral("work")); }
  // squeue's jobs (and steps, with `steps`) of this cluster as "ID NAME" lines.
  QStringList squeue(bool steps = false);
  // The last `lines` lines of each daemon's log of the test cluster (slurmctld, slurmd),
  // quoted when a job did not end as it should.
  QString clusterLogTails(int lines) const;
  // A finished run of `db`: completed, its nodes on the Slurm nodes of the placement, each
  // a step of one job; returns that job's id.
  QString checkPlacedRun(const QString& db, std::int64_t runId);

  QTemporaryDir m_dir;
  QProcess m_guard;  // stops the cluster when the test ends, also when it is killed
};

void TestSlurm::initTestCase() {
  QVERIFY(m_dir.isValid());
  for (const char* program : {"munged", "slurmctld", "slurmd", "salloc", "srun", "squeue", "scancel", "sbatch"}) {
    if (QStandardPaths::findExecutable(QLatin1String(program)).isEmpty() &&
        QStandardPaths::findExecutable(QLatin1String(program), {"/usr/sbin", "/sbin"}).isEmpty()) {
      QSKIP(qPrintable(QStringLiteral("no %1: tools/setup.sh installs slurmctld slurmd slurm-client munge")
                           .arg(QLatin1String(program))));
    }
  }
  if (::geteuid() != 0) DASP_SKIP_NEEDS_ROOT("the Slurm test cluster needs root (slurmd starts the tasks)");
  // munged wants every directory down to its socket traversable.
  QVERIFY(QFile::setPermissions(m_dir.path(), QFileDevice::ReadOwner | QFileDevice::WriteOwner |
                                                  QFileDevice::ExeOwner | QFileDevice::ExeGroup |
                                                  QFileDevice::ExeOther));
  QVERIFY(QDir().mkpath(work()));
  const QString cluster = m_dir.filePath(QStringLiteral("cluster"));
  qputenv("SLURM_CONF", (cluster + "/slurm.conf").toUtf8());
  // The guard lives in its own session and waits for its stdin, this test's pipe: it stops
  // the cluster when cleanupTestCase closes the pipe or when the test dies (a CTest timeout).
  m_guard.setProcessChannelMode(QProcess::MergedChannels);
  m_guard.start(QStringLiteral("setsid"),
                {"/bin/sh", "-c", "read -r _; exec \"$0\" stop \"$1\"", clusterScript(), cluster});
  QVERIFY(m_guard.waitForStarted(10000));
  const auto up = test_support::runProgram(clusterScript(), {"start", cluster}, 60000);
  QVERIFY2(up.exitCode == 0, qPrintable(up.out + up.err));
}

void TestSlurm::cleanupTestCase() {
  if (m_guard.state() == QProcess::NotRunning) return;
  m_guard.closeWriteChannel();
  QVERIFY2(m_guard.waitForFinished(60000), "the cluster did not stop within 60 s");
  QVERIFY2(m_guard.exitCode() == 0, m_guard.readAll().constData());
}

QJsonObject TestSlurm::laptopSpec(const QString& name, const QString& strategy, double seconds) {
  test_support::SyntheticSpec base;
  base.name = name;
  base.strategy = strategy;
  base.workers = 4;
  base.trainCount = 2048;
  base.testCount = 256;
  base.maxSeconds = seconds;
  return base.json();
}

QString TestSlurm::writeSpec(const QString& name, const QString& strategy, double seconds,
                             const QJsonObject& launchExtra) {
  QJsonObject spec = laptopSpec(name, strategy, seconds);
  auto host = [&](const char* node) {
    return QJsonObject{{"name", node}, {"address", "127.0.0.1"}, {"work_dir", work()}};
  };
  QJsonObject launch{{"launcher", "SLURM"},
                     {"hosts", QJsonArray{host("dasp-a"), host("dasp-b")}},
                     {"placement", QJsonObject{{"servers", QJsonArray{"dasp-a"}},
                                               {"evaluator", "dasp-a"},
                                               {"workers", QJsonArray{"dasp-b"}}}}};
  for (auto it = launchExtra.begin(); it != launchExtra.end(); ++it) launch[it.key()] = it.value();
  spec["launch"] = launch;
  return test_support::writeSpecFile(m_dir.path(), name, spec);
}

QStringList TestSlurm::squeue(bool steps) {
  QStringList args{"-h", "-o", "%i %j"};
  if (steps) args << "-s";
  const auto r = test_support::runProgram(QStringLiteral("squeue"), args, 20000);
  if (r.exitCode != 0) qWarning("squeue: %s", qPrintable(r.err));
  return r.out.split(QLatin1Char('\n'), Qt::SkipEmptyParts);
}

QString TestSlurm::clusterLogTails(int lines) const {
  QString out;
  const QDir logs(m_dir.filePath(QStringLiteral("cluster/log")));
  for (const QString& name : logs.entryList({QStringLiteral("*.log")}, QDir::Files, QDir::Name)) {
    QFile f(logs.filePath(name));
    if (!f.open(QIODevice::ReadOnly)) continue;
    const QStringList all = QString::fromUtf8(f.readAll()).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    out += QStringLiteral("== %1\n%2\n").arg(name, all.mid(std::max<qsizetype>(0, all.size() - lines)).join('\n'));
  }
  return out;
}

QString TestSlurm::checkPlacedRun(const QString& db, std::int64_t runId) {
  auto store = dasp::RunStore::open(db.toStdString());
  if (!store) return QStringLiteral("store: ") + QString::fromStdString(store.message());
  const auto run = store.value()->run(runId);
  if (!run || run->status != dasp::RunStatus::Completed) return QStringLiteral("the run did not complete");
  const auto nodes = store.value()->nodes(runId).value();
  if (nodes.size() != 6) return QStringLiteral("%1 nodes, not 6").arg(nodes.size());
  static const QRegularExpression step(QStringLiteral("^(\\d+)\\.(\\d+)$"));
  std::set<QString> jobs;
  for (const auto& n : nodes) {
    const char* expected = n.role == "worker" ? "dasp-b" : "dasp-a";
    if (n.host != expected) return QString::fromStdString(n.node + " ran on '" + n.host + "'");
    const auto m = step.match(QString::fromStdString(n.slurmStep));
    if (!m.hasMatch()) return QString::fromStdString(n.node + ": no Slurm step recorded ('" + n.slurmStep + "')");
    jobs.insert(m.captured(1));
    if (!n.exitCode || *n.exitCode != 0) return QString::fromStdString(n.node + " did not exit 0");
  }
  if (jobs.size() != 1) return QStringLiteral("the nodes ran in %1 jobs").arg(jobs.size());
  return *jobs.begin();
}

void TestSlurm::runInsideAnAllocation() {
  const QString db = m_dir.filePath(QStringLiteral("inside.sqlite"));
  const auto r = test_support::runProgram(
      QStringLiteral("salloc"),
      {"-N2", "--job-name=dasp-test-inside", test_support::daspBinary(), "run",
       writeSpec("slurm-inside", "asp", 3), "--db", db, "--json", "--quiet"},
      scaled(120000));
  QVERIFY2(r.exitCode == 0, qPrintable(r.err));
  // salloc says which job it granted; every node was a step of that job.
  const auto granted = QRegularExpression(QStringLiteral("Granted job allocation (\\d+)")).match(r.err);
  QVERIFY2(granted.hasMatch(), qPrintable(r.err));
  const auto json = QJsonDocument::fromJson(r.out.trimmed().split('\n').last().toUtf8()).object();
  QVERIFY2(json["updates"].toInt() > 10, qPrintable(r.out));
  QCOMPARE(checkPlacedRun(db, json["run_id"].toInteger()), granted.captured(1));
  QTRY_VERIFY_WITH_TIMEOUT(squeue().isEmpty(), 20000);
}

void TestSlurm::runInItsOwnAllocation() {
  const QString db = m_dir.filePath(QStringLiteral("own.sqlite"));
  const auto r = test_support::runDasp({"run", writeSpec("slurm-own", "bsp", 3), "--db", db, "--json", "--quiet"},
                                       scaled(120000), outsideAnyJob());
  QVERIFY2(r.exitCode == 0, qPrintable(r.err));
  const auto json = QJsonDocument::fromJson(r.out.trimmed().split('\n').last().toUtf8()).object();
  QVERIFY2(json["updates"].toInt() > 10, qPrintable(r.out));
  const QString job = checkPlacedRun(db, json["run_id"].toInteger());
  QVERIFY2(QRegularExpression(QStringLiteral("^\\d+$")).match(job).hasMatch(), qPrintable(job));
  // The allocation ended with the run, and with it every step.
  QTRY_VERIFY_WITH_TIMEOUT(squeue().isEmpty(), 20000);
  QTRY_VERIFY_WITH_TIMEOUT(test_support::markedDaspProcesses("DASP_RUN_DIR=" + work().toStdString() + "/").empty(),
                           20000);
}

void TestSlurm::runFromAnSbatchScript() {
  const QString db = m_dir.filePath(QStringLiteral("batch.sqlite"));
  const QString script = m_dir.filePath(QStringLiteral("batch.sh"));
  QFile f(script);
  QVERIFY(f.open(QIODevice::WriteOnly));
  f.write(QStringLiteral("#!/bin/sh\n#SBATCH --nodes=2\n#SBATCH --job-name=dasp-test-batch\nexec %1 run %2 --db %3 "
                         "--json --quiet\n")
              .arg(test_support::daspBinary(), writeSpec("slurm-batch", "asp", 3), db)
              .toUtf8());
  f.close();
  const auto submitted = test_support::runProgram(
      QStringLiteral("sbatch"), {"--parsable", "-o", m_dir.filePath(QStringLiteral("batch.out")), script}, 20000);
  QVERIFY2(submitted.exitCode == 0, qPrintable(submitted.err));
  const QString job = submitted.out.trimmed().section(QLatin1Char(';'), 0, 0);
  QTRY_VERIFY_WITH_TIMEOUT(squeue().isEmpty(), scaled(120000));
  QFile out(m_dir.filePath(QStringLiteral("batch.out")));
  QVERIFY(out.open(QIODevice::ReadOnly));
  const auto lines = QString::fromUtf8(out.readAll()).trimmed().split('\n');
  const auto json = QJsonDocument::fromJson(lines.last().toUtf8()).object();
  QVERIFY2(json["status"].toString() == QLatin1String("completed"), qPrintable(lines.join('\n')));
  QCOMPARE(checkPlacedRun(db, json["run_id"].toInteger()), job);
}

void TestSlurm::specWithoutHostsTakesTheAllocationsNodes() {
  QJsonObject spec = laptopSpec("slurm-hostless", "asp", 3);
  spec["launch"] = QJsonObject{{"launcher", "SLURM"}};
  const QString path = test_support::writeSpecFile(m_dir.path(), "slurm-hostless", spec);
  // Inside salloc -N2, and in the job the run asks for itself (two nodes by default): the
  // first node takes the server and the evaluator, the other the workers.
  for (const bool inside : {true, false}) {
    const QString db = m_dir.filePath(inside ? QStringLiteral("hostless-in.sqlite") : QStringLiteral("hostless.sqlite"));
    const QStringList run{"run", path, "--db", db, "--json", "--quiet"};
    const auto r = inside ? test_support::runProgram(QStringLiteral("salloc"),
                                                     QStringList{"-N2", test_support::daspBinary()} + run, scaled(120000))
                          : test_support::runDasp(run, scaled(120000), outsideAnyJob());
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    const auto json = QJsonDocument::fromJson(r.out.trimmed().split('\n').last().toUtf8()).object();
    const QString job = checkPlacedRun(db, json["run_id"].toInteger());
    QVERIFY2(QRegularExpression(QStringLiteral("^\\d+$")).match(job).hasMatch(), qPrintable(job));
    QTRY_VERIFY_WITH_TIMEOUT(squeue().isEmpty(), 20000);
  }
}

// A spec written for a laptop (no launch block) becomes a batch job with `dasp
// slurm-script`; its runs land in the store named with --db next to the runs already there,
// also when the job is cancelled.
void TestSlurm::slurmScriptRunsALaptopSpec() {
  const QString spec = test_support::writeSpecFile(m_dir.path(), "laptop", laptopSpec("laptop", "bsp", 3));
  const QString db = m_dir.filePath(QStringLiteral("laptop.sqlite"));
  auto earlier = test_support::runDasp({"run", spec, "--engine", "sim", "--db", db, "--quiet"}, scaled(60000));
  QVERIFY2(earlier.exitCode == 0, qPrintable(earlier.err));
  auto submit = [&](const QStringList& extra) -> QString {
    const QString script = m_dir.filePath(QStringLiteral("laptop.sh"));
    const auto written = test_support::runDasp(
        QStringList{"slurm-script", spec, "--db", db, "-o", script, "--set", "launch.salloc_args=--time=5"} + extra);
    if (written.exitCode != 0) return QStringLiteral("slurm-script: ") + written.err;
    QFile f(script);
    if (!f.open(QIODevice::ReadOnly)) return QStringLiteral("no script");
    const QString text = QString::fromUtf8(f.readAll());
    for (const char* line : {"#SBATCH --nodes=2\n", "#SBATCH --ntasks-per-node=4\n", "#SBATCH --time=5\n"}) {
      if (!text.contains(QLatin1String(line))) return QStringLiteral("no %1 in the script").arg(line);
    }
    if (text.contains(QLatin1String("TOKEN"))) return QStringLiteral("the script holds a token");
    const auto r = test_support::runProgram(
        QStringLiteral("sbatch"), {"--parsable", "-o", m_dir.filePath(QStringLiteral("laptop-%j.out")), script}, 20000);
    return r.exitCode == 0 ? r.out.trimmed().section(QLatin1Char(';'), 0, 0) : QStringLiteral("sbatch: ") + r.err;
  };
  const QString job = submit({});
  QVERIFY2(QRegularExpression(QStringLiteral("^\\d+$")).match(job).hasMatch(), qPrintable(job));
  QTRY_VERIFY_WITH_TIMEOUT(squeue().isEmpty(), scaled(120000));
  {
    auto store = dasp::RunStore::open(db.toStdString());
    QVERIFY(store.isOk());
    const auto runs = store.value()->listRuns().value();
    QCOMPARE(runs.size(), std::size_t{2});  // the earlier run is kept
    QCOMPARE(checkPlacedRun(db, runs.front().id), job);
  }
  // A job cancelled while it trains: the run stops, and its store still comes back.
  const QString cancelled = submit({"--set", "stop.max_seconds=300"});
  QVERIFY2(QRegularExpression(QStringLiteral("^\\d+$")).match(cancelled).hasMatch(), qPrintable(cancelled));
  QTRY_VERIFY_WITH_TIMEOUT(squeue(true).size() >= 6, scaled(60000));
  QVERIFY(test_support::runProgram(QStringLiteral("scancel"), {cancelled}, 20000).exitCode == 0);
  QTRY_VERIFY_WITH_TIMEOUT(squeue().isEmpty(), scaled(60000));
  auto store = dasp::RunStore::open(db.toStdString());
  QVERIFY(store.isOk());
  const auto runs = store.value()->listRuns().value();
  QFile jobOutput(m_dir.filePath(QStringLiteral("laptop-%1.out").arg(cancelled)));
  const QString said = jobOutput.open(QIODevice::ReadOnly) ? QString::fromUtf8(jobOutput.readAll()) : QString();
  QVERIFY2(runs.size() == 3, qPrintable(QStringLiteral("%1 runs in the store; the job said:\n%2\nthe cluster's logs end:\n%3")
                                            .arg(runs.size())
                                            .arg(said, clusterLogTails(12))));
  QCOMPARE(runs.front().status, dasp::RunStatus::Stopped);
}

void TestSlurm::eachWorkerSeesItsOwnGpu() {
  // dasp-b declares 2 GPUs and the job's environment lists devices 5 and 7 (as Slurm's own
  // binding would): its four workers alternate between them, one device each. dasp-a
  // declares none: its nodes keep the list they inherit.
  QJsonObject gpuHost{{"name", "dasp-b"}, {"address", "127.0.0.1"}, {"work_dir", work()}, {"gpus", 2}};
  QJsonObject plainHost{{"name", "dasp-a"}, {"address", "127.0.0.1"}, {"work_dir", work()}};
  const QString path = writeSpec("slurm-gpus", "asp", 300, QJsonObject{{"hosts", QJsonArray{plainHost, gpuHost}}});
  QProcessEnvironment env = outsideAnyJob();
  env.insert(QStringLiteral("CUDA_VISIBLE_DEVICES"), QStringLiteral("5,7"));
  QProcess p;
  p.setProcessEnvironment(env);
  test_support::startDasp(p, {"run", path, "--db", m_dir.filePath(QStringLiteral("gpus.sqlite")), "--quiet"});
  QVERIFY(p.waitForStarted());
  const std::string marker = "DASP_RUN_DIR=" + work().toStdString() + "/";
  QTRY_VERIFY_WITH_TIMEOUT(test_support::markedDaspProcesses(marker).size() >= 6, scaled(60000));
  const auto devices =
      test_support::environmentByNode(test_support::markedDaspProcesses(marker), "CUDA_VISIBLE_DEVICES");
  const std::map<std::string, std::string> expected{{"server", "5,7"},  {"evaluator", "5,7"}, {"worker-0", "5"},
                                                    {"worker-1", "7"}, {"worker-2", "5"},    {"worker-3", "7"}};
  p.terminate();  // the run stops as on Ctrl-C
  QVERIFY(p.waitForFinished(scaled(60000)));
  QVERIFY2(devices == expected, test_support::describe(devices).c_str());
  QTRY_VERIFY_WITH_TIMEOUT(squeue().isEmpty(), 20000);
  QTRY_VERIFY_WITH_TIMEOUT(test_support::markedDaspProcesses(marker).empty(), 20000);
}

void TestSlurm::cancelledStepIsANodeExit() {
  const QString db = m_dir.filePath(QStringLiteral("cancel.sqlite"));
  QProcess p;
  p.setProcessEnvironment(outsideAnyJob());
  test_support::startDasp(p, {"run", writeSpec("slurm-cancel", "bsp", 8), "--db", db, "--json", "--quiet"});
  QVERIFY(p.waitForStarted());
  // Training runs: worker-1's step is in squeue and the evaluator has judged twice.
  QString step;
  auto training = [&]() -> bool {
    for (const QString& line : squeue(true)) {
      if (line.endsWith(QLatin1String(" worker-1"))) step = line.section(QLatin1Char(' '), 0, 0);
    }
    auto store = dasp::RunStore::open(db.toStdString());
    if (step.isEmpty() || !store) return false;
    auto runs = store.value()->listRuns();
    if (!runs || runs->empty()) return false;
    auto evals = store.value()->evaluations(runs->front().id);
    return evals && evals->size() >= 2;
  };
  QTRY_VERIFY_WITH_TIMEOUT(training(), scaled(60000));
  const auto cancelled = test_support::runProgram(QStringLiteral("scancel"), {step}, 20000);
  QVERIFY2(cancelled.exitCode == 0, qPrintable(cancelled.err));

  // BSP goes on with three workers (the server declares worker-1 down at its barrier
  // timeout) to the end of the run.
  QVERIFY(p.waitForFinished(scaled(120000)));
  QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
  const auto json = QJsonDocument::fromJson(p.readAllStandardOutput().trimmed().split('\n').last()).object();
  const auto runId = json["run_id"].toInteger();
  auto store = dasp::RunStore::open(db.toStdString());
  QVERIFY(store.isOk());
  QCOMPARE(store.value()->run(runId)->status, dasp::RunStatus::Completed);
  double exitT = -1;
  bool down = false;
  for (const auto& e : store.value()->events(runId).value()) {
    if (e.kind == RE::EXIT && e.code == RE::EXITED && e.node == "worker-1") exitT = e.tS;
    down = down || (e.code == RE::NODE_DOWN && e.subject() == "worker-1");
  }
  QVERIFY2(exitT > 0, "worker-1's cancelled step was not recorded as its exit");
  QVERIFY(down);
  std::int64_t versionAtExit = 0, lastVersion = 0;
  for (const auto& e : store.value()->evaluations(runId).value()) {
    if (e.tS <= exitT) versionAtExit = e.version;
    lastVersion = e.version;
  }
  QVERIFY2(lastVersion > versionAtExit, "no update after worker-1's step was cancelled");
  for (const auto& n : store.value()->nodes(runId).value()) {
    if (n.node == "worker-1") {
      QCOMPARE(n.slurmStep, step.toStdString());
      QVERIFY(n.signal.has_value() || (n.exitCode && *n.exitCode != 0));
    } else {
      QVERIFY2(n.exitCode && *n.exitCode == 0, n.node.c_str());
    }
  }
  QTRY_VERIFY_WITH_TIMEOUT(squeue().isEmpty(), 20000);
}

void TestSlurm::killedRunnerLeavesNoJobAndNoNode() {
  const QString db = m_dir.filePath(QStringLiteral("killed.sqlite"));
  QProcess p;
  p.setProcessEnvironment(outsideAnyJob());
  test_support::startDasp(p, {"run", writeSpec("slurm-killed", "asp", 300), "--db", db, "--quiet"});
  QVERIFY(p.waitForStarted());
  const std::string marker = "DASP_RUN_DIR=" + work().toStdString() + "/";
  QTRY_VERIFY_WITH_TIMEOUT(test_support::markedDaspProcesses(marker).size() >= 6 && squeue(true).size() >= 6,
                           scaled(60000));
  p.kill();
  QVERIFY(p.waitForFinished(10000));
  // The allocation's holder sees its stdin close: salloc releases the job, Slurm ends the steps.
  QTRY_VERIFY_WITH_TIMEOUT(squeue().isEmpty(), 30000);
  QTRY_VERIFY_WITH_TIMEOUT(test_support::markedDaspProcesses(marker).empty(), 30000);
}

void TestSlurm::refusedJobNamesSlurmsReason() {
  struct Case {
    QJsonObject launch;
    const char* reason;
  };
  // A partition that does not exist; a third node that does not.
  QJsonObject thirdHost{{"hosts", QJsonArray{QJsonObject{{"name", "dasp-a"}, {"work_dir", work()}},
                                             QJsonObject{{"name", "dasp-b"}, {"work_dir", work()}},
                                             QJsonObject{{"name", "dasp-c"}, {"work_dir", work()}}}},
                        {"placement", QJsonObject{{"servers", QJsonArray{"dasp-a"}},
                                                  {"workers", QJsonArray{"dasp-b", "dasp-c"}}}}};
  const Case cases[] = {{QJsonObject{{"salloc_args", QJsonArray{"--partition=nosuch"}}}, "Invalid partition name"},
                        {thirdHost, "Invalid node name"}};
  const QString db = m_dir.filePath(QStringLiteral("refused.sqlite"));
  for (const Case& c : cases) {
    QElapsedTimer timer;
    timer.start();
    const auto r = test_support::runDasp({"run", writeSpec("slurm-refused", "asp", 3, c.launch), "--db", db, "--quiet"},
                                         60000, outsideAnyJob());
    QVERIFY(timer.elapsed() < 30000);
    QVERIFY(r.exitCode != 0);
    QVERIFY2(r.err.contains(QLatin1String("Slurm refused the allocation")) && r.err.contains(QLatin1String(c.reason)),
             qPrintable(r.err));
  }
  auto store = dasp::RunStore::open(db.toStdString());
  QVERIFY(store.isOk());
  for (const auto& run : store.value()->listRuns().value()) {
    QCOMPARE(run.status, dasp::RunStatus::Failed);
    QVERIFY(store.value()->nodes(run.id)->empty());
  }
  QVERIFY(squeue().isEmpty());
}

void TestSlurm::allocationNotGrantedInTimeIsWithdrawn() {
  // A job that may begin only in an hour: pending until launch.allocation_wait_s.
  const QJsonObject launch{{"salloc_args", QJsonArray{"--begin=now+3600"}}, {"allocation_wait_s", 2}};
  QElapsedTimer timer;
  timer.start();
  const auto r = test_support::runDasp({"run", writeSpec("slurm-pending", "asp", 3, launch), "--db",
                                        m_dir.filePath(QStringLiteral("pending.sqlite")), "--quiet"},
                                       60000, outsideAnyJob());
  QVERIFY(timer.elapsed() < 30000);
  QVERIFY(r.exitCode != 0);
  QVERIFY2(r.err.contains(QLatin1String("no allocation within launch.allocation_wait_s 2 s")) &&
               r.err.contains(QLatin1String("queued and waiting for resources")),
           qPrintable(r.err));
  QTRY_VERIFY_WITH_TIMEOUT(squeue().isEmpty(), 20000);  // the request was withdrawn
}

QTEST_GUILESS_MAIN(TestSlurm)
#include "tst_slurm.moc"
