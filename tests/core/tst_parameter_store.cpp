// SPDX-License-Identifier: MIT
// The parameter store (core/params/parameter_store.h): a snapshot is an immutable version
// (an update, or a restore, while it is held writes another buffer and leaves it as it
// was), the arithmetic does not depend on whether a snapshot is held, an unheld store
// updates in place, buffers given back are reused rather than allocated anew, an update's
// mirror receives its new parameters, the revision changes with every write, and an update
// shared among threads gives the bits of one thread's. And the step a stateless server
// takes with a flushed backlog (core/params/backlog_rule.h), and the average a LOCAL
// server adopts (core/params/local_average.h).
#include "core/params/backlog_rule.h"
#include "core/params/local_average.h"
#include "core/params/parameter_store.h"

#include <QtTest>

#include <cmath>
#include <cstring>
#include <vector>

using dasp::ParameterStore;

class TestParameterStore : public QObject {
  Q_OBJECT

 private slots:
  void unheldStoreUpdatesInPlace();
  void snapshotIsImmutable();
  void heldOrNotGivesTheSameBits();
  void releasedBuffersAreReused();
  void restoreLeavesSnapshotsAlone();
  void mirrorGetsTheNewParameters();
  void revisionChangesWithEveryWrite();
  void threadsGiveTheSameBits();
  void backlogStepFollowsTheRule();
  void localAverageIsWeightedBySteps();
  void lateCopyMergesByTheSameRule();
};

namespace {

constexpr std::size_t kN = 10'003;  // not a multiple of the update's block

std::vector<float> ramp(float scale) {
  std::vector<float> v(kN);
  for (std::size_t i = 0; i < kN; ++i) v[i] = scale * static_cast<float>(i % 97) - 1.0f;
  return v;
}

// One update of one gradient, and one of three gradients (the blocked path).
void update(ParameterStore& store, const std::vector<float>& a, const std::vector<float>& b) {
  const float* one[] = {a.data()};
  const double w1[] = {1.0};
  store.apply(one, w1, 1, 0.1);
  const float* three[] = {a.data(), b.data(), a.data()};
  const double w3[] = {0.5, 0.25, 0.25};
  store.apply(three, w3, 3, 0.05);
}

bool sameBits(const float* x, const float* y) { return std::memcmp(x, y, kN * sizeof(float)) == 0; }

}  // namespace

void TestParameterStore::unheldStoreUpdatesInPlace() {
  ParameterStore store(ramp(0.01f), 0.9, 1e-4);
  const float* before = store.parameters();
  update(store, ramp(0.02f), ramp(-0.03f));
  QCOMPARE(store.parameters(), before);
  QCOMPARE(store.copiesOnWrite(), 0LL);
  QCOMPARE(store.version(), 2LL);
}

void TestParameterStore::snapshotIsImmutable() {
  const auto initial = ramp(0.01f);
  ParameterStore store(initial, 0.9, 1e-4);
  const ParameterStore::Snapshot held = store.snapshot();
  update(store, ramp(0.02f), ramp(-0.03f));
  QVERIFY(sameBits(held->data(), initial.data()));
  QVERIFY(!sameBits(store.parameters(), initial.data()));
  QVERIFY(store.parameters() != held->data());
  QCOMPARE(store.copiesOnWrite(), 1LL);  // the first update moved; the second found its buffer unheld
  QCOMPARE(store.version(), 2LL);
}

void TestParameterStore::heldOrNotGivesTheSameBits() {
  const auto a = ramp(0.02f), b = ramp(-0.03f);
  ParameterStore plain(ramp(0.01f), 0.9, 1e-4);
  ParameterStore shared(ramp(0.01f), 0.9, 1e-4);
  std::vector<ParameterStore::Snapshot> readers;
  for (int round = 0; round < 3; ++round) {
    readers.push_back(shared.snapshot());  // every version stays held: every update copies on write
    update(plain, a, b);
    update(shared, a, b);
    QVERIFY(sameBits(plain.parameters(), shared.parameters()));
    QVERIFY(std::memcmp(plain.momentumBuffer().data(), shared.momentumBuffer().data(), kN * sizeof(float)) == 0);
  }
  QCOMPARE(shared.copiesOnWrite(), 3LL);
}

void TestParameterStore::releasedBuffersAreReused() {
  ParameterStore store(ramp(0.01f), 0.9, 1e-4);
  const auto g = ramp(0.02f);
  const float* one[] = {g.data()};
  const double w[] = {1.0};
  auto first = store.snapshot();
  const float* firstBuffer = first->data();
  store.apply(one, w, 1, 0.1);  // moves to a new buffer
  first.reset();                 // the reader is done with the old one
  auto second = store.snapshot();
  store.apply(one, w, 1, 0.1);  // moves again: to the buffer the first reader gave back
  QCOMPARE(store.parameters(), firstBuffer);
  QCOMPARE(store.copiesOnWrite(), 2LL);
}

void TestParameterStore::restoreLeavesSnapshotsAlone() {
  const auto initial = ramp(0.01f);
  ParameterStore store(initial, 0.9, 1e-4);
  const auto held = store.snapshot();
  const auto other = ramp(0.5f);
  store.restore(other.data(), nullptr, 7);
  QVERIFY(sameBits(held->data(), initial.data()));
  QVERIFY(sameBits(store.parameters(), other.data()));
  QCOMPARE(store.version(), 7LL);
}

void TestParameterStore::mirrorGetsTheNewParameters() {
  // One gradient and three (both paths), each with a mirror: the mirror holds the new
  // parameters, and the arithmetic is that of a store updated without one.
  const auto a = ramp(0.02f), b = ramp(-0.03f);
  ParameterStore plain(ramp(0.01f), 0.9, 1e-4);
  ParameterStore mirrored(ramp(0.01f), 0.9, 1e-4);
  std::vector<float> mirror(kN, -7.0f);
  const float* one[] = {a.data()};
  const double w1[] = {1.0};
  const float* three[] = {a.data(), b.data(), a.data()};
  const double w3[] = {0.5, 0.25, 0.25};
  plain.apply(one, w1, 1, 0.1);
  mirrored.apply(one, w1, 1, 0.1, mirror.data());
  QVERIFY(sameBits(mirror.data(), mirrored.parameters()));
  QVERIFY(sameBits(plain.parameters(), mirrored.parameters()));
  std::fill(mirror.begin(), mirror.end(), -7.0f);
  const auto held = mirrored.snapshot();  // a copy on write: the mirror gets the new buffer's values
  plain.apply(three, w3, 3, 0.05);
  mirrored.apply(three, w3, 3, 0.05, mirror.data());
  QVERIFY(sameBits(mirror.data(), mirrored.parameters()));
  QVERIFY(sameBits(plain.parameters(), mirrored.parameters()));
  QVERIFY(std::memcmp(plain.momentumBuffer().data(), mirrored.momentumBuffer().data(), kN * sizeof(float)) == 0);
}

void TestParameterStore::revisionChangesWithEveryWrite() {
  ParameterStore store(ramp(0.01f), 0.9, 1e-4);
  const auto g = ramp(0.02f);
  const float* one[] = {g.data()};
  const double w[] = {1.0};
  const std::int64_t first = store.revision();
  store.apply(one, w, 1, 0.1);
  const std::int64_t afterApply = store.revision();
  QVERIFY(afterApply != first);
  const auto other = ramp(0.5f);
  store.restore(other.data(), nullptr, 0);  // back to version 0, with other parameters
  QCOMPARE(store.version(), 0LL);
  QVERIFY(store.revision() != first && store.revision() != afterApply);
  const std::int64_t restored = store.revision();
  store.setVersion(3);  // the parameters do not change, nor does the revision
  QCOMPARE(store.revision(), restored);
}

void TestParameterStore::threadsGiveTheSameBits() {
  // Large enough to be shared (and not a multiple of the block): one gradient and three,
  // with a mirror and a held snapshot (the copy on write), on 1, 2 and 3 threads.
  const std::size_t n = ParameterStore::kParallelFloats + 12'345;
  auto wave = [n](float scale) {
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>(i % 89) - 0.5f;
    return v;
  };
  const auto a = wave(0.011f), b = wave(-0.007f);
  std::vector<std::vector<float>> params, momentum, mirrors;
  for (int threads : {1, 2, 3}) {
    ParameterStore store(wave(0.003f), 0.9, 1e-4);
    store.setApplyThreads(threads);
    QCOMPARE(store.applyThreads(), threads);
    std::vector<float> mirror(n, 0.0f);
    const float* one[] = {a.data()};
    const double w1[] = {1.0};
    store.apply(one, w1, 1, 0.1, mirror.data());
    const auto held = store.snapshot();
    const float* three[] = {a.data(), b.data(), a.data()};
    const double w3[] = {0.5, 0.25, 0.25};
    store.apply(three, w3, 3, 0.05, mirror.data());
    QCOMPARE(store.copiesOnWrite(), 1LL);
    QVERIFY(std::memcmp(mirror.data(), store.parameters(), n * sizeof(float)) == 0);
    params.emplace_back(store.parameters(), store.parameters() + n);
    momentum.push_back(store.momentumBuffer());
    mirrors.push_back(std::move(mirror));
  }
  for (std::size_t t = 1; t < params.size(); ++t) {
    QVERIFY(std::memcmp(params[0].data(), params[t].data(), n * sizeof(float)) == 0);
    QVERIFY(std::memcmp(momentum[0].data(), momentum[t].data(), n * sizeof(float)) == 0);
    QVERIFY(std::memcmp(mirrors[0].data(), mirrors[t].data(), n * sizeof(float)) == 0);
  }
  QVERIFY(params[0][n - 1] != wave(0.003f)[n - 1]);  // the last, partial block was updated
}

// SUM: the sum at the run's rate; MEAN: weight 1/n; SCALED_LR: the rate scaled only above
// the threshold (the paper's "lr 1e-3 if more than 50 pending"); CLIPPED_SUM: weight
// min(1, K/n).
void TestParameterStore::backlogStepFollowsTheRule() {
  dasp::v1::RecoverySpec rec;
  rec.set_backlog_lr_scale(0.1);
  rec.set_backlog_lr_threshold(50);
  rec.set_backlog_rule(dasp::v1::RecoverySpec::SUM);
  auto step = dasp::backlogStep(rec, 80, 0.01);
  QCOMPARE(step.weight, 1.0);
  QCOMPARE(step.lr, 0.01);
  rec.set_backlog_rule(dasp::v1::RecoverySpec::MEAN);
  step = dasp::backlogStep(rec, 80, 0.01);
  QCOMPARE(step.weight, 1.0 / 80);
  QCOMPARE(step.lr, 0.01);
  rec.set_backlog_rule(dasp::v1::RecoverySpec::SCALED_LR);
  step = dasp::backlogStep(rec, 50, 0.01);
  QCOMPARE(step.weight, 1.0);
  QCOMPARE(step.lr, 0.01);  // at the threshold: not scaled
  step = dasp::backlogStep(rec, 51, 0.01);
  QCOMPARE(step.lr, 0.01 * 0.1);
  QCOMPARE(QString::fromStdString(step.rule), QStringLiteral("scaled lr"));
  // CLIPPED_SUM: the sum up to K gradients, beyond that K gradients' worth of it.
  rec.set_backlog_rule(dasp::v1::RecoverySpec::CLIPPED_SUM);
  rec.set_backlog_clip_gradients(10);
  step = dasp::backlogStep(rec, 10, 0.01);
  QCOMPARE(step.weight, 1.0);
  QCOMPARE(step.lr, 0.01);
  step = dasp::backlogStep(rec, 80, 0.01);
  QCOMPARE(step.weight, 10.0 / 80);
  QCOMPARE(step.lr, 0.01);
  QVERIFY(QString::fromStdString(step.rule).startsWith(QStringLiteral("clipped sum")));
}

void TestParameterStore::localAverageIsWeightedBySteps() {
  // Three copies of 3 parameters with 1, 2 and 5 local steps, and one with none (it holds
  // a version the server had: it weighs nothing).
  const std::vector<float> a{1.0f, -2.0f, 0.5f}, b{2.0f, 0.0f, 0.25f}, c{-1.0f, 4.0f, 1.0f}, idle{100, 100, 100};
  dasp::LocalModelAverage avg;
  avg.reset(3);
  QVERIFY(avg.add(a.data(), 1));
  QVERIFY(avg.add(b.data(), 2));
  QVERIFY(!avg.add(idle.data(), 0));
  QVERIFY(avg.add(c.data(), 5));
  QCOMPARE(avg.steps(), std::int64_t{8});
  QCOMPARE(avg.copies(), 3);
  std::vector<float> out(3);
  avg.average(out.data());
  for (std::size_t i = 0; i < 3; ++i) {
    // The same sums in the same order, in double: the same bits.
    const double expected = (0.0 + 1.0 * a[i] + 2.0 * b[i] + 5.0 * c[i]) / 8.0;
    const float e = static_cast<float>(expected);
    QCOMPARE(std::memcmp(&out[i], &e, sizeof e), 0);
  }
  QCOMPARE(out, (std::vector<float>{0.0f, 2.25f, 0.75f}));  // (1 + 4 - 5) / 8, (-2 + 20) / 8, (0.5 + 0.5 + 5) / 8
  // The spread: the steps-weighted RMS distance of the copies from the average.
  double sq = 0;
  const std::vector<const std::vector<float>*> copies{&a, &b, &c};
  const double w[] = {1, 2, 5};
  for (std::size_t k = 0; k < 3; ++k) {
    for (std::size_t i = 0; i < 3; ++i) sq += w[k] * std::pow((*copies[k])[i] - static_cast<double>(out[i]), 2);
  }
  QVERIFY(std::abs(avg.spread() - std::sqrt(sq / 8.0)) < 1e-5);
  // One copy: no spread; none: nothing to average.
  avg.reset(3);
  QVERIFY(avg.add(c.data(), 3));
  QCOMPARE(avg.spread(), 0.0);
  avg.average(out.data());
  QCOMPARE(out, c);
}

void TestParameterStore::lateCopyMergesByTheSameRule() {
  // A copy of 4 steps returning after an adoption of 8 merged steps: (8·current + 4·copy) / 12.
  std::vector<float> current{3.0f, -1.5f};
  const std::vector<float> copy{0.0f, 1.5f};
  QCOMPARE(dasp::mergeLocalCopy(current.data(), 8, copy.data(), 4, 2), std::int64_t{12});
  QCOMPARE(current[0], 2.0f);
  QCOMPARE(current[1], -0.5f);
  // A copy without steps changes nothing.
  QCOMPARE(dasp::mergeLocalCopy(current.data(), 12, copy.data(), 0, 2), std::int64_t{12});
  QCOMPARE(current[0], 2.0f);
}

QTEST_GUILESS_MAIN(TestParameterStore)
#include "tst_parameter_store.moc"
