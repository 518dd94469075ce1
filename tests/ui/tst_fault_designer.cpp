// SPDX-License-Identifier: MIT
// The experiment designer's recovery modes and fault drills: they round-trip through the
// spec and the presets, each mode shows its own knobs, and a bad drill cell is a message.
// Its Slurm launcher's job settings round-trip through launch.salloc_args and srun_args.
#include "tests/ui/fault_fixtures.h"

#include <QLineEdit>

using namespace fault_fixtures;

class TestFaultDesigner : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void designerRoundTripsRecoveryAndFaults();
  void faultPresetsRoundTrip();
  void designerShowsTheKnobsOfTheMode();
  void badDrillCellsAreMessages();
  void designerOffersTheSlurmLauncher();
};

void TestFaultDesigner::designerRoundTripsRecoveryAndFaults() {
  SpecDesigner designer;
  const ExperimentSpec spec = parse(kDrillSpec);
  designer.setSpec(spec);
  QVERIFY2(!designer.hasError(), qPrintable(designer.message()));
  QTableWidget* drills = designer.faultTable()->table();
  QCOMPARE(drills->rowCount(), 2);
  QCOMPARE(cell(drills, 0, FaultTable::Node), QStringLiteral("server"));
  QCOMPARE(cell(drills, 0, FaultTable::Action), QStringLiteral("kill"));
  QCOMPARE(cell(drills, 0, FaultTable::AtS), QStringLiteral("4"));
  QCOMPARE(cell(drills, 0, FaultTable::RestartAfterS), QStringLiteral("2"));
  QCOMPARE(cell(drills, 1, FaultTable::Node), QStringLiteral("worker-1"));
  QCOMPARE(cell(drills, 1, FaultTable::Action), QStringLiteral("pause"));
  QCOMPARE(cell(drills, 1, FaultTable::AtS), QStringLiteral("7.5"));
  QCOMPARE(cell(drills, 1, FaultTable::RestartAfterS), QString());  // never
  auto* every = designer.findChild<QLineEdit*>(QStringLiteral("spec.recovery.checkpoint_every_updates"));
  QVERIFY(every);
  QCOMPARE(every->text(), QStringLiteral("50"));

  auto built = designer.buildSpec();
  QVERIFY2(built.isOk(), built.message().c_str());
  QVERIFY2(sameSpec(built.value(), spec), specToJson(built.value()).c_str());
  QVERIFY(!built->faults(1).has_restart_after_s());

  // Through a JSON file and back.
  QTemporaryDir dir;
  const QString path = dir.filePath(QStringLiteral("drill.json"));
  QVERIFY2(designer.saveFile(path), qPrintable(designer.message()));
  auto reread = loadSpecFile(path.toStdString());
  QVERIFY2(reread.isOk(), reread.message().c_str());
  QVERIFY(sameSpec(reread.value(), spec));
  SpecDesigner other;
  QVERIFY(other.loadFile(path));
  auto again = other.buildSpec();
  QVERIFY2(again.isOk(), again.message().c_str());
  QVERIFY(sameSpec(again.value(), spec));

  // Edits reach the spec: a knob, a cell, a new drill, a removed one.
  every->setText(QStringLiteral("25"));
  Q_EMIT every->textEdited(every->text());
  drills->item(1, FaultTable::RestartAfterS)->setText(QStringLiteral("1.5"));
  designer.faultTable()->addFault();
  QCOMPARE(drills->rowCount(), 3);
  QCOMPARE(cell(drills, 2, FaultTable::Node), QStringLiteral("server"));
  QCOMPARE(cell(drills, 2, FaultTable::AtS), QStringLiteral("17.5"));  // 10 s after the last drill
  drills->selectRow(0);
  designer.faultTable()->removeSelectedFaults();
  built = designer.buildSpec();
  QVERIFY2(built.isOk(), built.message().c_str());
  QCOMPARE(built->recovery().checkpoint_every_updates(), std::int64_t{25});
  QCOMPARE(built->faults_size(), 2);
  QCOMPARE(built->faults(0).node(), std::string("worker-1"));
  QCOMPARE(built->faults(0).restart_after_s(), 1.5);
  QCOMPARE(built->faults(1).action(), v1::FaultSpec::KILL);
  QCOMPARE(built->faults(1).restart_after_s(), 5.0);
  QVERIFY(designer.validate());
  QVERIFY(specToJson(built.value()).find("\"restart_after_s\"") != std::string::npos);
  // A worker's drill may cut its link instead.
  drills->item(0, FaultTable::Action)->setText(QStringLiteral("disconnect"));
  built = designer.buildSpec();
  QVERIFY2(built.isOk(), built.message().c_str());
  QCOMPARE(built->faults(0).action(), v1::FaultSpec::DISCONNECT);
  QVERIFY(designer.validate());
}

void TestFaultDesigner::faultPresetsRoundTrip() {
  // Every preset with drills (a suite over the recovery modes): read back unchanged.
  const QDir dir(QStringLiteral(DASP_SOURCE_DIR "/experiments"));
  int presets = 0;
  for (const QString& file : dir.entryList({QStringLiteral("*.json")}, QDir::Files, QDir::Name)) {
    auto loaded = loadSpecFile(dir.filePath(file).toStdString());
    QVERIFY2(loaded.isOk(), loaded.message().c_str());
    if (loaded->faults_size() == 0 && !loaded->has_recovery()) continue;
    ++presets;
    SpecDesigner designer;
    QVERIFY2(designer.loadFile(dir.filePath(file)), qPrintable(designer.message()));
    QCOMPARE(designer.faultTable()->faultCount(), loaded->faults_size());
    auto built = designer.buildSpec();
    QVERIFY2(built.isOk(), built.message().c_str());
    QVERIFY2(sameSpec(built.value(), loaded.value()), qPrintable(file));
  }
  // experiments/ has fault presets (fault-1kill.json, fault-disconnect.json, ...): none is a failure.
  QVERIFY2(presets > 0, "no preset with fault drills in experiments/");
}

void TestFaultDesigner::designerShowsTheKnobsOfTheMode() {
  SpecDesigner designer;
  designer.setSpec(parse(kDrillSpec));
  auto group = [&](const char* mode) {
    return designer.findChild<QWidget*>(QStringLiteral("recoveryKnobs.") + QLatin1String(mode));
  };
  QVERIFY(group("CHECKPOINT") && group("CHAIN") && group("STATELESS"));
  QVERIFY(visibleIn(group("CHECKPOINT"), &designer));
  QVERIFY(!visibleIn(group("CHAIN"), &designer));
  QVERIFY(!visibleIn(group("STATELESS"), &designer));
  QVERIFY(visibleIn(designer.findChild<QLineEdit*>(QStringLiteral("spec.recovery.reconnect_timeout_s")), &designer));
  QStringList names = designer.faultTable()->nodeNames();
  for (const char* n : {"server", "evaluator", "worker-0", "worker-1", "worker-2"}) {
    QVERIFY2(names.contains(QLatin1String(n)), n);
  }
  QVERIFY(!names.contains(QStringLiteral("server-0")));

  auto* mode = designer.findChild<QComboBox*>(QStringLiteral("spec.recovery.mode"));
  QVERIFY(mode);
  selectValue(mode, QStringLiteral("CHAIN"));
  QVERIFY(!visibleIn(group("CHECKPOINT"), &designer));
  QVERIFY(visibleIn(group("CHAIN"), &designer));
  names = designer.faultTable()->nodeNames();
  for (const char* n : {"server", "server-0", "server-1", "server-2", "evaluator"}) QVERIFY2(names.contains(QLatin1String(n)), n);
  auto* replicas = designer.findChild<QLineEdit*>(QStringLiteral("spec.recovery.replicas"));
  QVERIFY(replicas);
  replicas->setText(QStringLiteral("4"));
  Q_EMIT replicas->textEdited(replicas->text());
  QVERIFY(designer.faultTable()->nodeNames().contains(QStringLiteral("server-3")));
  auto built = designer.buildSpec();
  QVERIFY2(built.isOk(), built.message().c_str());
  QCOMPARE(built->recovery().mode(), v1::RecoverySpec::CHAIN);
  QCOMPARE(built->recovery().replicas(), 4);

  // The node column edits with a combo of those names, still open to any name.
  QTableWidget* drills = designer.faultTable()->table();
  QStyleOptionViewItem option;
  std::unique_ptr<QWidget> editor(
      drills->itemDelegate()->createEditor(drills->viewport(), option, drills->model()->index(0, FaultTable::Node)));
  auto* combo = qobject_cast<QComboBox*>(editor.get());
  QVERIFY(combo);
  QVERIFY(combo->isEditable());
  QVERIFY(combo->findText(QStringLiteral("server-3")) >= 0);
  combo->setEditText(QStringLiteral("server-2"));
  drills->itemDelegate()->setModelData(combo, drills->model(), drills->model()->index(0, FaultTable::Node));
  QCOMPARE(cell(drills, 0, FaultTable::Node), QStringLiteral("server-2"));
  std::unique_ptr<QWidget> actionEditor(
      drills->itemDelegate()->createEditor(drills->viewport(), option, drills->model()->index(0, FaultTable::Action)));
  auto* actions = qobject_cast<QComboBox*>(actionEditor.get());
  QVERIFY(actions);
  QCOMPARE(actions->count(), 3);
  QCOMPARE(actions->itemText(2), QStringLiteral("disconnect"));  // a worker's link cut

  selectValue(mode, QStringLiteral("STATELESS"));
  QVERIFY(visibleIn(group("STATELESS"), &designer));
  QVERIFY(!visibleIn(group("CHAIN"), &designer));
  QVERIFY(!designer.faultTable()->nodeNames().contains(QStringLiteral("server-2")));
  // A chain replica's drill without a chain: the CLI's message names it.
  QVERIFY(designer.hasError());
  QVERIFY2(designer.message().contains(QStringLiteral("faults[0].node")), qPrintable(designer.message()));
  drills->item(0, FaultTable::Node)->setText(QStringLiteral("server"));
  QVERIFY2(!designer.hasError(), qPrintable(designer.message()));
  auto* scale = designer.findChild<QLineEdit*>(QStringLiteral("spec.recovery.backlog_lr_scale"));
  auto* rule = designer.findChild<QComboBox*>(QStringLiteral("spec.recovery.backlog_rule"));
  QVERIFY(scale && rule);
  QVERIFY(!scale->isEnabled());  // SUM: no scale
  selectValue(rule, QStringLiteral("SCALED_LR"));
  QVERIFY(scale->isEnabled());
  scale->setText(QStringLiteral("0.05"));
  Q_EMIT scale->textEdited(scale->text());
  built = designer.buildSpec();
  QVERIFY2(built.isOk(), built.message().c_str());
  QCOMPARE(built->recovery().backlog_rule(), v1::RecoverySpec::SCALED_LR);
  QCOMPARE(built->recovery().backlog_lr_scale(), 0.05);
  QVERIFY(designer.validate());
  // A knob out of range: the CLI's message.
  scale->setText(QStringLiteral("2"));
  Q_EMIT scale->textEdited(scale->text());
  QVERIFY(designer.hasError());
  QVERIFY2(designer.message().contains(QStringLiteral("recovery.backlog_lr_scale")), qPrintable(designer.message()));
  scale->setText(QStringLiteral("0.05"));
  Q_EMIT scale->textEdited(scale->text());
  // CLIPPED_SUM: its clip, and no scale.
  auto* clip = designer.findChild<QLineEdit*>(QStringLiteral("spec.recovery.backlog_clip_gradients"));
  QVERIFY(clip);
  QVERIFY(!clip->isEnabled());  // SCALED_LR: no clip
  selectValue(rule, QStringLiteral("CLIPPED_SUM"));
  QVERIFY(clip->isEnabled());
  QVERIFY(!scale->isEnabled());
  clip->setText(QStringLiteral("0"));
  Q_EMIT clip->textEdited(clip->text());
  QVERIFY(designer.hasError());
  QVERIFY2(designer.message().contains(QStringLiteral("recovery.backlog_clip_gradients")), qPrintable(designer.message()));
  clip->setText(QStringLiteral("20"));
  Q_EMIT clip->textEdited(clip->text());
  built = designer.buildSpec();
  QVERIFY2(built.isOk(), built.message().c_str());
  QCOMPARE(built->recovery().backlog_rule(), v1::RecoverySpec::CLIPPED_SUM);
  QCOMPARE(built->recovery().backlog_clip_gradients(), 20);
}

void TestFaultDesigner::badDrillCellsAreMessages() {
  SpecDesigner designer;
  designer.setSpec(parse(kDrillSpec));
  QTableWidget* drills = designer.faultTable()->table();
  auto setAndCheck = [&](int column, const QString& text, const QString& expected) {
    drills->item(1, column)->setText(text);  // itemChanged: validated at once
    QVERIFY(designer.hasError());
    QVERIFY2(designer.message().contains(expected), qPrintable(designer.message() + QStringLiteral(" / ") + expected));
    QVERIFY(!designer.validate());
    QVERIFY(!designer.buildSpec().isOk() || !validateSpec(designer.buildSpec().value()));
    (void)designer.spec();  // the lenient view never fails
  };
  setAndCheck(FaultTable::AtS, QStringLiteral("soon"), QStringLiteral("faults[1].at_s: 'soon' is not a number"));
  setAndCheck(FaultTable::AtS, QString(), QStringLiteral("faults[1].at_s: empty"));
  setAndCheck(FaultTable::AtS, QStringLiteral("-3"), QStringLiteral("faults[1].at_s"));
  setAndCheck(FaultTable::AtS, QStringLiteral("nan"), QStringLiteral("faults[1].at_s"));
  drills->item(1, FaultTable::AtS)->setText(QStringLiteral("7"));
  QVERIFY2(!designer.hasError(), qPrintable(designer.message()));
  setAndCheck(FaultTable::RestartAfterS, QStringLiteral("inf"), QStringLiteral("faults[1].restart_after_s"));
  setAndCheck(FaultTable::RestartAfterS, QStringLiteral("-1"), QStringLiteral("faults[1].restart_after_s"));
  drills->item(1, FaultTable::RestartAfterS)->setText(QString());
  setAndCheck(FaultTable::Action, QStringLiteral("explode"), QStringLiteral("faults[1].action: 'explode' is not kill, pause or disconnect"));
  drills->item(1, FaultTable::Action)->setText(QStringLiteral("PAUSE"));  // any case
  QVERIFY2(!designer.hasError(), qPrintable(designer.message()));
  setAndCheck(FaultTable::Node, QString(), QStringLiteral("faults[1].node"));
  setAndCheck(FaultTable::Node, QStringLiteral("worker 1; rm"), QStringLiteral("faults[1].node"));
  drills->item(1, FaultTable::Node)->setText(QStringLiteral("worker-1"));
  QVERIFY2(designer.validate(), qPrintable(designer.message()));
  // Removing with nothing selected does nothing; every row removed leaves no faults.
  drills->clearSelection();
  designer.faultTable()->removeSelectedFaults();
  QCOMPARE(drills->rowCount(), 2);
  drills->selectAll();
  designer.faultTable()->removeSelectedFaults();
  QCOMPARE(drills->rowCount(), 0);
  auto built = designer.buildSpec();
  QVERIFY(built.isOk());
  QCOMPARE(built->faults_size(), 0);
}

QTEST_MAIN(TestFaultDesigner)
void TestFaultDesigner::designerOffersTheSlurmLauncher() {
  SpecDesigner designer;
  const ExperimentSpec spec = parse(R"({"cluster": {"count": 2}, "launch": {"launcher": "SLURM",
      "salloc_args": ["--partition=gpu", "--time=30", "--qos=short", "--mem=8G"], "srun_args": ["--overlap"]}})");
  designer.setSpec(spec);
  QVERIFY2(!designer.hasError(), qPrintable(designer.message()));
  auto field = [&](const char* name) { return designer.findChild<QLineEdit*>(QLatin1String(name)); };
  QVERIFY(visibleIn(designer.findChild<QWidget*>(QStringLiteral("slurmFields")), &designer));
  QCOMPARE(field("slurm.partition")->text(), QStringLiteral("gpu"));
  QCOMPARE(field("slurm.time")->text(), QStringLiteral("30"));
  QCOMPARE(field("slurm.account")->text(), QString());
  QCOMPARE(field("slurm.sallocFlags")->text(), QStringLiteral("--qos=short --mem=8G"));
  QCOMPARE(field("slurm.srunFlags")->text(), QStringLiteral("--overlap"));
  auto built = designer.buildSpec();
  QVERIFY2(built.isOk(), built.message().c_str());
  QVERIFY2(sameSpec(built.value(), spec), specToJson(built.value()).c_str());

  // Edits become the job's options, in Slurm's own words.
  field("slurm.account")->setText(QStringLiteral("lab42"));
  field("slurm.nodes")->setText(QStringLiteral("3"));
  field("slurm.sallocFlags")->setText(QStringLiteral("  --qos=long "));
  field("slurm.srunFlags")->setText(QString());
  Q_EMIT field("slurm.account")->textEdited(QStringLiteral("lab42"));
  built = designer.buildSpec();
  QVERIFY2(built.isOk(), built.message().c_str());
  const std::vector<std::string> args(built->launch().salloc_args().begin(), built->launch().salloc_args().end());
  QCOMPARE(args, (std::vector<std::string>{"--partition=gpu", "--account=lab42", "--time=30", "--nodes=3", "--qos=long"}));
  QCOMPARE(built->launch().srun_args_size(), 0);
  QVERIFY(designer.validate());

  // Another launcher hides the job's settings and keeps them; a spec without launch stays so.
  selectValue(designer.findChild<QComboBox*>(QStringLiteral("spec.launch.launcher")), QString());  // LOCAL
  QVERIFY(!visibleIn(designer.findChild<QWidget*>(QStringLiteral("slurmFields")), &designer));
  built = designer.buildSpec();
  QVERIFY2(built.isOk(), built.message().c_str());
  QCOMPARE(built->launch().launcher(), v1::LaunchSpec::LOCAL);
  QCOMPARE(built->launch().salloc_args_size(), 5);
  designer.setSpec(parse(R"({"cluster": {"count": 2}})"));
  built = designer.buildSpec();
  QVERIFY2(built.isOk(), built.message().c_str());
  QVERIFY(!built->has_launch());
}

#include "tst_fault_designer.moc"
