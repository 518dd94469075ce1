// SPDX-License-Identifier: MIT
// The single-node trainer on synthetic data: it learns, is deterministic, and stops on
// every stop condition.
#include "core/data/dataset_loader.h"
#include "ml/trainer.h"

#include <QtTest>

#include <cmath>

using dasp::ml::SingleNodeTrainer;

namespace {

dasp::ExperimentSpec syntheticSpec(const std::string& model = "logreg") {
  dasp::ExperimentSpec spec;
  spec.mutable_model()->set_name(model);
  spec.mutable_dataset()->set_name("synthetic");
  spec.mutable_stop()->set_epochs(2);
  spec.mutable_evaluation()->set_every_steps(20);
  spec.set_device("cpu");
  return dasp::withDefaults(spec);
}

struct Collect : dasp::ml::TrainObserver {
  std::vector<dasp::ml::EvalPoint> evals;
  std::vector<dasp::ml::TrainPoint> points;
  void onProgress(const dasp::ml::TrainPoint& p) override { points.push_back(p); }
  void onEvaluation(const dasp::ml::EvalPoint& p) override { evals.push_back(p); }
};

}  // namespace

class TestTrainer : public QObject {
  Q_OBJECT

 private slots:
  void learnsSyntheticClusters_data();
  void learnsSyntheticClusters();
  void sameSeedSameResult();
  void stopsAtMaxUpdates();
  void stopsAtTarget();
  void cancelStops();
  void divergenceIsAnError();
  void learningRateDecay();
};

void TestTrainer::learnsSyntheticClusters_data() {
  QTest::addColumn<QString>("model");
  QTest::newRow("logreg") << "logreg";
  QTest::newRow("mlp") << "mlp";
}

void TestTrainer::learnsSyntheticClusters() {
  QFETCH(QString, model);
  auto spec = syntheticSpec(model.toStdString());
  auto data = dasp::loadDataset(spec.dataset(), spec.seed());
  QVERIFY(data.isOk());
  auto trainer = SingleNodeTrainer::create(spec, data.value());
  QVERIFY2(trainer.isOk(), trainer.message().c_str());
  Collect c;
  auto r = trainer.value()->run(&c);
  QVERIFY2(r.isOk(), r.message().c_str());
  QCOMPARE(r->stopReason, std::string("epochs"));
  QVERIFY2(r->final.accuracy > 0.9, qPrintable(QString::number(r->final.accuracy)));
  QVERIFY(c.evals.size() >= 5);
  QVERIFY(c.points.size() >= 2);
  QVERIFY(c.points.back().loss < c.points.front().loss);
  QCOMPARE(r->steps, 2 * (4096 / 64));
  QVERIFY(r->samplesPerS > 0);
}

void TestTrainer::sameSeedSameResult() {
  auto spec = syntheticSpec("mlp");
  auto data = dasp::loadDataset(spec.dataset(), spec.seed()).value();
  auto a = SingleNodeTrainer::create(spec, data).value()->run(nullptr).value();
  auto b = SingleNodeTrainer::create(spec, data).value()->run(nullptr).value();
  QCOMPARE(a.final.loss, b.final.loss);  // bitwise: one thread, same order, same init
  spec.set_seed(2);
  auto data2 = dasp::loadDataset(spec.dataset(), spec.seed()).value();
  auto c = SingleNodeTrainer::create(spec, data2).value()->run(nullptr).value();
  QVERIFY(c.final.loss != a.final.loss);
}

void TestTrainer::stopsAtMaxUpdates() {
  auto spec = syntheticSpec();
  spec.mutable_stop()->set_epochs(0);
  spec.mutable_stop()->set_max_updates(37);
  auto data = dasp::loadDataset(spec.dataset(), spec.seed()).value();
  auto r = SingleNodeTrainer::create(spec, data).value()->run(nullptr).value();
  QCOMPARE(r.steps, 37LL);
  QCOMPARE(r.stopReason, std::string("max_updates"));
}

void TestTrainer::stopsAtTarget() {
  auto spec = syntheticSpec();
  spec.mutable_stop()->set_epochs(50);
  spec.mutable_stop()->set_target_accuracy(0.85);
  auto data = dasp::loadDataset(spec.dataset(), spec.seed()).value();
  Collect c;
  auto r = SingleNodeTrainer::create(spec, data).value()->run(&c).value();
  QCOMPARE(r.stopReason, std::string("target"));
  QVERIFY(r.timeToTargetS.has_value());
  QVERIFY(r.epochs < 50);
  // The first evaluation at or above the target is the one that stopped the run.
  QVERIFY(c.evals.size() >= 2);
  QVERIFY(c.evals[c.evals.size() - 2].eval.accuracy >= 0.85);
}

void TestTrainer::cancelStops() {
  auto spec = syntheticSpec();
  auto data = dasp::loadDataset(spec.dataset(), spec.seed()).value();
  std::atomic<bool> cancel{true};
  auto r = SingleNodeTrainer::create(spec, data).value()->run(nullptr, &cancel).value();
  QCOMPARE(r.stopReason, std::string("cancelled"));
  QCOMPARE(r.steps, 0LL);
}

void TestTrainer::divergenceIsAnError() {
  auto spec = syntheticSpec("mlp");
  spec.mutable_optimizer()->set_lr(1e8);
  auto data = dasp::loadDataset(spec.dataset(), spec.seed()).value();
  auto r = SingleNodeTrainer::create(spec, data).value()->run(nullptr);
  QVERIFY(!r.isOk());
  QVERIFY2(r.message().find("diverged") != std::string::npos, r.message().c_str());
}

void TestTrainer::learningRateDecay() {
  dasp::v1::OptimizerSpec o;
  o.set_lr(0.1);
  QCOMPARE(dasp::ml::learningRateAt(o, 5000), 0.1);
  o.mutable_decay()->set_kind(dasp::v1::LrDecay::STEP);
  o.mutable_decay()->set_every_steps(100);
  o.mutable_decay()->set_gamma(0.5);
  QCOMPARE(dasp::ml::learningRateAt(o, 99), 0.1);
  QCOMPARE(dasp::ml::learningRateAt(o, 250), 0.025);
  o.mutable_decay()->set_kind(dasp::v1::LrDecay::EXPONENTIAL);
  QVERIFY(std::abs(dasp::ml::learningRateAt(o, 50) - 0.1 * std::sqrt(0.5)) < 1e-12);
}

QTEST_GUILESS_MAIN(TestTrainer)
#include "tst_trainer.moc"
