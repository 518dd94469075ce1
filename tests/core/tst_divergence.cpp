// SPDX-License-Identifier: MIT
// Divergence (core/results/divergence.h): which losses end a run as diverged, dated from
// when, and how the results tables read a diverged run.
#include "core/results/divergence.h"
#include "core/results/results_table.h"
#include "core/spec/spec.h"

#include <QtTest>

#include <cmath>
#include <limits>

using namespace dasp;

namespace {

v1::DivergenceRule rule(double factor, double windowS) {
  v1::DivergenceRule r;
  r.set_loss_factor(factor);
  r.set_window_s(windowS);
  return r;
}

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

v1::RunResult result(const std::string& status, std::optional<double> ttt) {
  v1::RunResult r;
  r.set_label("asp");
  r.set_lr(30);
  r.set_target(0.85);
  r.set_status(status);
  if (ttt) r.set_time_to_target_s(*ttt);
  return r;
}

}  // namespace

class TestDivergence : public QObject {
  Q_OBJECT

 private slots:
  void defaultsAndValidation() {
    ExperimentSpec spec = withDefaults(ExperimentSpec());
    QCOMPARE(spec.stop().divergence().loss_factor(), 10.0);
    QCOMPARE(spec.stop().divergence().window_s(), 2.0);
    QVERIFY(validateSpec(spec));
    for (double bad : {-1.0, 0.5, 1.0, kInf, kNaN}) {
      ExperimentSpec s = spec;
      s.mutable_stop()->mutable_divergence()->set_loss_factor(bad);
      const Status st = validateSpec(s);
      QVERIFY2(!st, std::to_string(bad).c_str());
      QVERIFY2(st.message().find("stop.divergence.loss_factor") != std::string::npos, st.message().c_str());
    }
    ExperimentSpec off = spec;
    off.mutable_stop()->mutable_divergence()->set_loss_factor(0);
    QVERIFY(validateSpec(off));
    ExperimentSpec window = spec;
    window.mutable_stop()->mutable_divergence()->set_window_s(-2);
    QVERIFY(!validateSpec(window));
  }

  void nonFiniteTrainingLossAtOnce() {
    DivergenceMonitor m(rule(10, 2));
    m.onTrainLoss(0.1, 0, 2.3);
    m.onTrainLoss(0.2, 4, 3.0);
    QVERIFY(!m.divergence());
    m.onTrainLoss(0.3, 7, kInf);
    QVERIFY(m.divergence());
    QCOMPARE(m.divergence()->cause, DivergenceCause::NonFiniteTrainLoss);
    QCOMPARE(m.divergence()->version, std::int64_t(7));
    QCOMPARE(m.divergence()->tS, 0.3);
    // The first divergence stays.
    m.onTestLoss(0.4, 8, kNaN);
    QCOMPARE(m.divergence()->cause, DivergenceCause::NonFiniteTrainLoss);
    QCOMPARE(m.divergence()->describe(), std::string("training loss not finite at version 7 (0.30 s)"));
    QCOMPARE(m.divergence()->describeWithLoss(), std::string("training loss not finite at version 7 (0.30 s): inf"));
  }

  void nonFiniteTestLoss() {
    DivergenceMonitor m(rule(0, 2));  // the factor rule off: non-finite losses still count
    m.onTestLoss(1.0, 12, kNaN);
    QVERIFY(m.divergence());
    QCOMPARE(m.divergence()->cause, DivergenceCause::NonFiniteTestLoss);
    QCOMPARE(m.divergence()->version, std::int64_t(12));
  }

  void lossAboveFactorForTheWindow() {
    DivergenceMonitor m(rule(10, 2));
    // The initial loss: the gradients computed on version 0 (mean 2.5).
    m.onTrainLoss(0.0, 0, 2.0);
    m.onTrainLoss(0.1, 0, 3.0);
    m.onTrainLoss(1.0, 5, 30.0);  // above 25: a streak starts
    m.onTrainLoss(2.0, 9, 40.0);
    QVERIFY(!m.divergence());
    m.onTrainLoss(2.5, 11, 20.0);  // back below: the streak ends
    m.onTrainLoss(3.0, 12, 26.0);  // a new streak
    m.onTrainLoss(4.9, 20, 1e6);
    QVERIFY(!m.divergence());
    m.onTrainLoss(5.0, 21, 1e7);
    QVERIFY(m.divergence());
    QCOMPARE(m.divergence()->cause, DivergenceCause::LossAboveFactor);
    QCOMPARE(m.divergence()->version, std::int64_t(12));  // dated from the streak's start
    QCOMPARE(m.divergence()->tS, 3.0);
    QCOMPARE(m.divergence()->initialLoss, 2.5);
  }

  void testLossStreakCountsToo() {
    DivergenceMonitor m(rule(4, 1));
    m.onTrainLoss(0.0, 0, 2.0);
    m.onTestLoss(0.5, 3, 9.0);
    m.onTestLoss(1.5, 6, 12.0);
    QVERIFY(m.divergence());
    QCOMPARE(m.divergence()->cause, DivergenceCause::LossAboveFactor);
    QCOMPARE(m.divergence()->tS, 0.5);
  }

  void noInitialLossNoFactorRule() {
    // A run whose first gradients are not on version 0 (none seen yet) has no reference.
    DivergenceMonitor m(rule(2, 0));
    m.onTrainLoss(1.0, 5, 1e9);
    QVERIFY(!m.divergence());
    m.onTrainLoss(1.1, 0, 2.0);
    m.onTrainLoss(1.2, 6, 5.0);
    QVERIFY(m.divergence());  // window 0: one loss above the factor is enough
  }

  void refusedLossesNeverSetTheInitialLoss() {
    DivergenceMonitor m(rule(10, 1));
    m.onRefusedTrainLoss(0.0, 0, 0.0);  // a made-up push at version 0
    m.onTrainLoss(0.1, 0, 2.0);
    m.onTrainLoss(0.5, 3, 15.0);  // below 10 x 2: a refused 0 did not lower the reference
    QVERIFY(!m.divergence());
    // The guard refuses the exploding gradients: their losses still end the run.
    m.onRefusedTrainLoss(1.0, 4, 2500.0);
    m.onRefusedTrainLoss(2.0, 4, 2600.0);
    QVERIFY(m.divergence());
    QCOMPARE(m.divergence()->cause, DivergenceCause::LossAboveFactor);
    QCOMPARE(m.divergence()->tS, 1.0);
    DivergenceMonitor nan(rule(10, 1));
    nan.onRefusedTrainLoss(0.3, 2, kNaN);
    QVERIFY(nan.divergence());
  }

  void causesRoundTrip() {
    for (auto c : {DivergenceCause::NonFiniteTrainLoss, DivergenceCause::NonFiniteTestLoss,
                   DivergenceCause::LossAboveFactor}) {
      QCOMPARE(divergenceCauseFromString(toString(c)), std::optional<DivergenceCause>(c));
    }
    QVERIFY(!divergenceCauseFromString("exploded"));
  }

  void tablesSayNotReachedDiverged() {
    const std::vector<v1::RunResult> allDiverged = {result("diverged", {}), result("diverged", {})};
    auto rows = bestByStrategy(allDiverged);
    QCOMPARE(rows.size(), std::size_t(1));
    QCOMPARE(rows[0].diverged, 2);
    const std::string table = suiteTableMarkdown(allDiverged);
    QVERIFY2(table.find("not reached (diverged)") != std::string::npos, table.c_str());
    const std::vector<v1::RunResult> some = {result("completed", 4.0), result("diverged", {}), result("completed", {})};
    const std::string mixed = suiteTableMarkdown(some);
    QVERIFY2(mixed.find("(1/3 reached, 1 diverged)") != std::string::npos, mixed.c_str());
  }
};

QTEST_GUILESS_MAIN(TestDivergence)
#include "tst_divergence.moc"
