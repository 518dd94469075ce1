// SPDX-License-Identifier: MIT
// The `gpu` tests (label gpu): the CUDA path of the model and the workers against the CPU.
// Without a GPU the CUDA checks skip with the reason; the device-error and staging-path
// checks run everywhere. The checks themselves are Qt-free (gpu_checks.h).
#include "tests/ml/gpu_checks.h"
#include "tests/support/skips.h"

#include <QtTest>

using dasp::gputest::Outcome;

// Turns an Outcome into QSKIP / QVERIFY2 (a check skips only where there is no CUDA device).
#define DASP_EXPECT(expr)                                                          \
  do {                                                                             \
    const Outcome outcome_ = (expr);                                               \
    if (outcome_.kind == Outcome::Skip) DASP_SKIP_NEEDS_GPU_BECAUSE(outcome_.message); \
    QVERIFY2(outcome_.kind == Outcome::Pass, outcome_.message.c_str());            \
  } while (false)

class TestGpu : public QObject {
  Q_OBJECT

 private slots:
  void deviceErrorsAreClear() { DASP_EXPECT(dasp::gputest::deviceErrorsAreClear()); }
  void stagedPathMatchesDirect_data() { models(); }
  void stagedPathMatchesDirect() {
    QFETCH(QString, model);
    DASP_EXPECT(dasp::gputest::stagedPathMatchesDirect(model.toStdString()));
  }
  void gradientsMatchCpu_data() { models(); }
  void gradientsMatchCpu() {
    QFETCH(QString, model);
    DASP_EXPECT(dasp::gputest::gradientsMatchCpu(model.toStdString()));
  }
  void shardSourceOnCuda() { DASP_EXPECT(dasp::gputest::shardSourceOnCuda()); }
  void twoSourcesShareOneGpu() { DASP_EXPECT(dasp::gputest::twoSourcesShareOneGpu()); }
  void trainerLearnsOnCuda() { DASP_EXPECT(dasp::gputest::trainerLearnsOnCuda()); }

 private:
  static void models() {
    QTest::addColumn<QString>("model");
    for (const char* m : {"mlp", "lenet", "resnet8"}) QTest::newRow(m) << QString::fromLatin1(m);
  }
};

QTEST_GUILESS_MAIN(TestGpu)
#include "tst_gpu.moc"
