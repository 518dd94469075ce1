// SPDX-License-Identifier: MIT
// A diverging run is an outcome, not a crash: `dasp run` ends it with status "diverged"
// and its cause, on real processes (whose workers go on after their refused pushes) and on
// the engine alike, and the suite goes on with its next run.
#include "core/store/run_store.h"
#include "tests/support/processes.h"

#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

namespace {

using test_support::daspBinary;
using test_support::runDasp;

// An MLP on synthetic data at two rates in turn: 1000 (diverges within a few updates),
// then 0.02 (trains).
QByteArray divergingSuite(const char* engine) {
  return QByteArray(R"({"name": "diverging", "engine": ")") + engine + R"(",
    "model": {"name": "mlp", "hidden": 32}, "dataset": {"name": "synthetic"},
    "optimizer": {"lr": 0.02, "momentum": 0.9}, "lr_grid": [1000, 0.02], "batch_size": 32,
    "cluster": {"count": 3, "base_iteration_ms": 10},
    "strategy": {"name": "asp"}, "stop": {"max_seconds": 3, "stop_at_target": false, "target_accuracy": 0.9},
    "evaluation": {"every_s": 0.25}})";
}

QList<QJsonObject> jsonLines(const QString& out) {
  QList<QJsonObject> lines;
  for (const QString& line : out.split('\n')) {
    if (line.startsWith('{')) lines << QJsonDocument::fromJson(line.toUtf8()).object();
  }
  return lines;
}

}  // namespace

class TestDivergence : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QVERIFY2(QFile::exists(daspBinary()), qPrintable(daspBinary() + " not built"));
    QVERIFY(m_dir.isValid());
  }

  void divergedRunEndsAndSuiteGoesOn_data() {
    QTest::addColumn<QString>("engine");
    QTest::newRow("real") << QStringLiteral("real");
    QTest::newRow("sim") << QStringLiteral("sim");
  }

  void divergedRunEndsAndSuiteGoesOn() {
    QFETCH(QString, engine);
    const QString spec = m_dir.filePath(engine + ".json");
    const QString db = m_dir.filePath(engine + ".sqlite");
    QFile f(spec);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(divergingSuite(engine.toLatin1().constData()));
    f.close();
    const auto o = runDasp({"run", spec, "--json", "--db", db}, 120000);
    QVERIFY2(o.exitCode == 0, qPrintable(o.err));
    const auto lines = jsonLines(o.out);
    QCOMPARE(lines.size(), 2);
    const QJsonObject diverged = lines[0];
    QCOMPARE(diverged.value("lr").toDouble(), 1000.0);
    QCOMPARE(diverged.value("status").toString(), QStringLiteral("diverged"));
    QCOMPARE(diverged.value("stop_reason").toString(), QStringLiteral("diverged"));
    QVERIFY2(!diverged.value("divergence_cause").toString().isEmpty(), qPrintable(o.out));
    QVERIFY(diverged.value("diverged_version").isDouble());
    QVERIFY(diverged.value("diverged_t_s").toDouble() < 3.0);
    QVERIFY(diverged.value("time_to_target_s").isNull());
    // The next run of the suite ran, and trained.
    QCOMPARE(lines[1].value("lr").toDouble(), 0.02);
    QCOMPARE(lines[1].value("status").toString(), QStringLiteral("completed"));
    // No worker died of the refused pushes; the runner said why it ended the run.
    QVERIFY2(!o.err.contains("exit code 1") && !o.err.contains("every worker exited"), qPrintable(o.err));
    QVERIFY2(o.err.contains("diverged: "), qPrintable(o.err));

    auto store = dasp::RunStore::open(db.toStdString());
    QVERIFY2(store.isOk(), store.message().c_str());
    const auto id = static_cast<std::int64_t>(diverged.value("run_id").toDouble());
    auto row = (*store)->run(id);
    QVERIFY2(row.isOk(), row.message().c_str());
    QCOMPARE(row->status, dasp::RunStatus::Diverged);
    QVERIFY(row->divergence.has_value());
    QCOMPARE(std::string(dasp::toString(row->divergence->cause)), diverged.value("divergence_cause").toString().toStdString());
    auto events = (*store)->events(id);
    QVERIFY2(events.isOk(), events.message().c_str());
    int divergedEvents = 0;
    for (const auto& e : *events) divergedEvents += e.code == dasp::v1::RunEvent::DIVERGED ? 1 : 0;
    QCOMPARE(divergedEvents, 1);
  }

 private:
  QTemporaryDir m_dir;
};

QTEST_GUILESS_MAIN(TestDivergence)
#include "tst_divergence.moc"
