// SPDX-License-Identifier: MIT
// Tests of the plain-C++ softmax regression (core/sim/softmax_model.h): the gradient against
// central finite differences and against a naive double-precision reference on the batches
// ml::ShardGradientSource's shuffle gives, bitwise determinism, convergence of plain SGD on
// the synthetic clusters, the error messages, and that no call allocates. The time per
// computeGradient is printed (qInfo), not asserted.

#include "core/sim/softmax_model.h"

#include <QtTest>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

// Counts every allocation in this process, so a test can check that the hot calls make
// none. Replacing the global operator new/delete is allowed in a program; these forward to
// malloc/free.
namespace {
std::atomic<long> g_allocations{0};
}  // namespace

void* operator new(std::size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size) { return ::operator new(size); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

using namespace dasp;

namespace {

ExperimentSpec makeSpec(int batch, std::uint64_t seed,
                        v1::DatasetSpec::Partition partition = v1::DatasetSpec::IID, double alpha = 0.5) {
  ExperimentSpec spec;
  spec.set_batch_size(batch);
  spec.set_seed(seed);
  spec.mutable_dataset()->set_partition(partition);
  spec.mutable_dataset()->set_dirichlet_alpha(alpha);
  return spec;
}

TrainTest synthetic(int classes, int dimension, std::int64_t train, std::int64_t test, double separation,
                    std::uint64_t seed) {
  SyntheticOptions o;
  o.classes = classes;
  o.dimension = dimension;
  o.trainCount = train;
  o.testCount = test;
  o.separation = separation;
  return makeSynthetic(o, seed);
}

std::vector<float> randomParams(std::int64_t count, double scale, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<float> p(static_cast<std::size_t>(count));
  for (float& v : p) {
    v = static_cast<float>((static_cast<double>(rng() >> 11) * 0x1.0p-53 * 2.0 - 1.0) * scale);
  }
  return p;
}

// The batch order ml::ShardGradientSource uses, rebuilt independently: the shard in a seeded
// per-epoch Fisher-Yates shuffle, a new epoch when fewer than a batch remain.
class ExpectedOrder {
 public:
  ExpectedOrder(std::vector<std::int64_t> shard, std::uint64_t specSeed, int rank, std::size_t batch)
      : m_order(std::move(shard)), m_seed(specSeed * 1000003ULL + static_cast<std::uint64_t>(rank)),
        m_batch(std::min(batch, m_order.size())) {
    shuffle();
  }
  const std::int64_t* next() {
    if (m_cursor + m_batch > m_order.size()) {
      ++m_epoch;
      shuffle();
    }
    const std::int64_t* out = m_order.data() + m_cursor;
    m_cursor += m_batch;
    return out;
  }
  std::size_t batch() const { return m_batch; }

 private:
  void shuffle() {
    std::mt19937_64 rng(m_seed * 0x9E3779B97F4A7C15ULL + m_epoch);
    for (std::size_t i = m_order.size(); i > 1; --i) std::swap(m_order[i - 1], m_order[rng() % i]);
    m_cursor = 0;
  }
  std::vector<std::int64_t> m_order;
  std::uint64_t m_seed;
  std::size_t m_batch;
  std::uint64_t m_epoch = 0;
  std::size_t m_cursor = 0;
};

// Mean cross-entropy and its gradient, written the obvious way in double.
double referenceGradient(const Dataset& d, const float* params, const std::int64_t* indices, std::size_t n,
                         std::vector<double>& grad) {
  const auto F = static_cast<std::size_t>(d.sampleSize());
  const auto C = static_cast<std::size_t>(d.classes);
  grad.assign(C * F + C, 0.0);
  std::vector<double> z(C);
  double loss = 0;
  for (std::size_t k = 0; k < n; ++k) {
    const auto s = static_cast<std::size_t>(indices[k]);
    const float* x = d.features.data() + s * F;
    const auto y = static_cast<std::size_t>(d.labels[s]);
    double top = -1e300;
    for (std::size_t c = 0; c < C; ++c) {
      double v = params[C * F + c];
      for (std::size_t f = 0; f < F; ++f) v += static_cast<double>(params[c * F + f]) * x[f];
      z[c] = v;
      top = std::max(top, v);
    }
    double sum = 0;
    for (std::size_t c = 0; c < C; ++c) sum += std::exp(z[c] - top);
    loss += std::log(sum) - (z[y] - top);
    for (std::size_t c = 0; c < C; ++c) {
      const double dz = (std::exp(z[c] - top) / sum - (c == y ? 1.0 : 0.0)) / static_cast<double>(n);
      grad[C * F + c] += dz;
      for (std::size_t f = 0; f < F; ++f) grad[c * F + f] += dz * x[f];
    }
  }
  return loss / static_cast<double>(n);
}

}  // namespace

class TestSoftmaxModel : public QObject {
  Q_OBJECT

 private slots:
  void initialParameters() {
    const auto data = synthetic(10, 32, 64, 16, 3.0, 1);
    QCOMPARE(softmaxParameterCount(data.train), std::int64_t{10 * 32 + 10});
    const auto a = softmaxInitialParameters(data.train, 42);
    const auto b = softmaxInitialParameters(data.train, 42);
    const auto c = softmaxInitialParameters(data.train, 43);
    QCOMPARE(a.size(), std::size_t{330});
    QVERIFY(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
    QVERIFY(a != c);
    double sq = 0;
    for (std::size_t k = 0; k < 320; ++k) sq += static_cast<double>(a[k]) * a[k];
    const double stddev = std::sqrt(sq / 320.0);
    QVERIFY2(stddev > 0.007 && stddev < 0.013, qPrintable(QString::number(stddev)));
    for (std::size_t k = 320; k < 330; ++k) QCOMPARE(a[k], 0.0f);
  }

  // The analytic gradient against central differences of the evaluator's loss on the same
  // samples (batch = the whole training set, one worker).
  void gradientMatchesFiniteDifferences() {
    const auto data = synthetic(3, 5, 40, 8, 2.0, 5);
    auto source = SoftmaxGradientSource::create(makeSpec(40, 3), data.train, 0, 1);
    QVERIFY2(source, qPrintable(QString::fromStdString(source.message())));
    auto evaluator = SoftmaxEvaluator::create(data.train, 0);
    QVERIFY2(evaluator, qPrintable(QString::fromStdString(evaluator.message())));
    const auto count = (*source)->parameterCount();
    QCOMPARE(count, std::int64_t{3 * 5 + 3});
    QCOMPARE((*evaluator)->parameterCount(), count);

    auto params = randomParams(count, 0.5, 11);
    std::vector<float> grad(static_cast<std::size_t>(count));
    const auto loss = (*source)->computeGradient(params.data(), grad.data());
    QVERIFY(loss);
    QVERIFY(std::abs(loss.value() - (*evaluator)->evaluate(params.data()).loss) < 1e-5);

    for (std::size_t k = 0; k < params.size(); ++k) {
      const float saved = params[k];
      params[k] = saved + 3e-3f;
      const float up = params[k];
      const double lossUp = (*evaluator)->evaluate(params.data()).loss;
      params[k] = saved - 3e-3f;
      const float down = params[k];
      const double lossDown = (*evaluator)->evaluate(params.data()).loss;
      params[k] = saved;
      const double numeric = (lossUp - lossDown) / (static_cast<double>(up) - down);
      const double tolerance = 1e-3 + 1e-2 * std::abs(numeric);
      QVERIFY2(std::abs(numeric - grad[k]) < tolerance,
               qPrintable(QStringLiteral("parameter %1: analytic %2, numeric %3")
                              .arg(k)
                              .arg(static_cast<double>(grad[k]))
                              .arg(numeric)));
    }
  }

  // Batch after batch, across several epochs (1365 samples, batch 48: the tail of each epoch
  // is dropped), the gradient and loss are those of the batch the reference shuffle names.
  void followsShardShuffle() {
    const auto data = synthetic(4, 7, 4096, 8, 3.0, 9);
    const auto spec = makeSpec(48, 21);
    auto source = SoftmaxGradientSource::create(spec, data.train, 1, 3);
    QVERIFY2(source, qPrintable(QString::fromStdString(source.message())));
    const auto shard = shardIndices(data.train, 1, 3, ShardMode::Iid, 0.5, 21);
    QCOMPARE((*source)->shardSize(), static_cast<std::int64_t>(shard.size()));
    QCOMPARE((*source)->batchSize(), 48);
    ExpectedOrder expected(shard, 21, 1, 48);

    const auto params = randomParams((*source)->parameterCount(), 0.3, 4);
    std::vector<float> grad(params.size());
    std::vector<double> reference;
    const int steps = 3 * static_cast<int>(shard.size() / 48) + 5;
    for (int step = 0; step < steps; ++step) {
      const auto loss = (*source)->computeGradient(params.data(), grad.data());
      QVERIFY(loss);
      const double refLoss = referenceGradient(data.train, params.data(), expected.next(), expected.batch(), reference);
      QVERIFY2(std::abs(loss.value() - refLoss) < 1e-5,
               qPrintable(QStringLiteral("step %1: loss %2, reference %3").arg(step).arg(loss.value()).arg(refLoss)));
      for (std::size_t k = 0; k < grad.size(); ++k) {
        QVERIFY2(std::abs(grad[k] - reference[k]) < 1e-5,
                 qPrintable(QStringLiteral("step %1, parameter %2: %3 vs reference %4")
                                .arg(step)
                                .arg(k)
                                .arg(static_cast<double>(grad[k]))
                                .arg(reference[k])));
      }
    }

    // A shard smaller than the batch: every call uses the whole shard, reshuffled.
    auto small = SoftmaxGradientSource::create(makeSpec(5000, 21), data.train, 0, 3);
    QVERIFY(small);
    QVERIFY((*small)->computeGradient(params.data(), grad.data()));
    QVERIFY((*small)->computeGradient(params.data(), grad.data()));
  }

  void deterministic() {
    const auto data = synthetic(10, 32, 2048, 8, 3.0, 2);
    const auto spec = makeSpec(50, 8);
    auto a = SoftmaxGradientSource::create(spec, data.train, 2, 4);
    auto b = SoftmaxGradientSource::create(spec, data.train, 2, 4);
    auto other = SoftmaxGradientSource::create(spec, data.train, 3, 4);
    QVERIFY(a && b && other);
    auto paramsA = softmaxInitialParameters(data.train, 8);
    auto paramsB = paramsA;
    std::vector<float> gradA(paramsA.size()), gradB(paramsA.size()), gradOther(paramsA.size());
    // Enough steps to pass several reshuffles (512-sample shard, batch 50).
    for (int step = 0; step < 40; ++step) {
      const auto lossA = (*a)->computeGradient(paramsA.data(), gradA.data());
      const auto lossB = (*b)->computeGradient(paramsB.data(), gradB.data());
      QVERIFY(lossA && lossB);
      QVERIFY(std::memcmp(&lossA.value(), &lossB.value(), sizeof(double)) == 0);
      QVERIFY2(std::memcmp(gradA.data(), gradB.data(), gradA.size() * sizeof(float)) == 0,
               qPrintable(QStringLiteral("step %1").arg(step)));
      if (step == 0) {
        QVERIFY((*other)->computeGradient(paramsA.data(), gradOther.data()));
        QVERIFY2(gradOther != gradA, "rank 3 drew the same batch as rank 2");
      }
      for (std::size_t k = 0; k < paramsA.size(); ++k) {
        paramsA[k] -= 0.1f * gradA[k];
        paramsB[k] -= 0.1f * gradB[k];
      }
    }

    // Label-skewed shards too: each rank gets a working source.
    for (int rank = 0; rank < 4; ++rank) {
      auto skewed = SoftmaxGradientSource::create(makeSpec(32, 8, v1::DatasetSpec::DIRICHLET, 1.0), data.train,
                                                  rank, 4);
      QVERIFY2(skewed, qPrintable(QString::fromStdString(skewed.message())));
      QVERIFY((*skewed)->computeGradient(paramsA.data(), gradA.data()));
    }
  }

  void sgdReachesHighAccuracy() {
    const auto data = synthetic(10, 32, 4096, 1024, 3.0, 17);
    auto source = SoftmaxGradientSource::create(makeSpec(64, 17), data.train, 0, 1);
    auto evaluator = SoftmaxEvaluator::create(data.test, 0);
    QVERIFY(source && evaluator);
    auto params = softmaxInitialParameters(data.train, 17);
    std::vector<float> grad(params.size());
    const auto before = (*evaluator)->evaluate(params.data());
    double lastLoss = 0;
    for (int step = 0; step < 300; ++step) {
      const auto loss = (*source)->computeGradient(params.data(), grad.data());
      QVERIFY(loss && std::isfinite(loss.value()));
      lastLoss = loss.value();
      for (std::size_t k = 0; k < params.size(); ++k) params[k] -= 0.5f * grad[k];
    }
    const auto after = (*evaluator)->evaluate(params.data());
    qInfo("SGD 300 steps: test loss %.4f -> %.4f, accuracy %.4f -> %.4f (last batch loss %.4f)", before.loss,
          after.loss, before.accuracy, after.accuracy, lastLoss);
    QCOMPARE(after.samples, std::int64_t{1024});
    QVERIFY2(after.accuracy > 0.9, qPrintable(QString::number(after.accuracy)));
    QVERIFY(after.loss < before.loss);
    // The start is not secretly solved: the dataset and the initial weights share the seed,
    // and the weights must not echo the class centres drawn from it.
    QVERIFY2(before.accuracy < 0.5, qPrintable(QString::number(before.accuracy)));

    // A limit evaluates only the first samples.
    auto limited = SoftmaxEvaluator::create(data.test, 100);
    QVERIFY(limited);
    QCOMPARE((*limited)->evaluate(params.data()).samples, std::int64_t{100});
  }

  void errors() {
    const auto data = synthetic(3, 4, 64, 8, 3.0, 1);

    auto zeroBatch = SoftmaxGradientSource::create(makeSpec(0, 1), data.train, 0, 1);
    QVERIFY(!zeroBatch);
    QVERIFY2(zeroBatch.message().find("batch_size") != std::string::npos, zeroBatch.message().c_str());

    auto negativeBatch = SoftmaxGradientSource::create(makeSpec(-3, 1), data.train, 0, 1);
    QVERIFY(!negativeBatch);
    QVERIFY(negativeBatch.message().find("batch_size") != std::string::npos);

    const auto tiny = synthetic(3, 4, 4, 8, 3.0, 1);
    auto empty = SoftmaxGradientSource::create(makeSpec(8, 1), tiny.train, 0, 8);
    QVERIFY(!empty);
    QVERIFY2(empty.message().find("empty shard") != std::string::npos, empty.message().c_str());

    auto badRank = SoftmaxGradientSource::create(makeSpec(8, 1), data.train, 4, 4);
    QVERIFY(!badRank);
    QVERIFY2(badRank.message().find("rank 4") != std::string::npos, badRank.message().c_str());

    auto badLabels = data;
    badLabels.train.labels[5] = 7;
    badLabels.test.labels[2] = -1;
    auto badSource = SoftmaxGradientSource::create(makeSpec(8, 1), badLabels.train, 0, 1);
    QVERIFY(!badSource);
    QVERIFY2(badSource.message().find("sample 5 has label 7") != std::string::npos, badSource.message().c_str());
    auto badEvaluator = SoftmaxEvaluator::create(badLabels.test, 0);
    QVERIFY(!badEvaluator);
    QVERIFY2(badEvaluator.message().find("label -1") != std::string::npos, badEvaluator.message().c_str());
    QVERIFY(SoftmaxEvaluator::create(badLabels.test, 2));  // the bad label lies past the limit

    Dataset none = data.test;
    none.count = 0;
    auto emptyTest = SoftmaxEvaluator::create(none, 0);
    QVERIFY(!emptyTest);
    QVERIFY2(emptyTest.message().find("empty") != std::string::npos, emptyTest.message().c_str());

    Dataset shortFeatures = data.train;
    shortFeatures.features.resize(10);
    auto shortSource = SoftmaxGradientSource::create(makeSpec(8, 1), shortFeatures, 0, 1);
    QVERIFY(!shortSource);
    QVERIFY2(shortSource.message().find("feature values") != std::string::npos, shortSource.message().c_str());
  }

  // After construction neither computeGradient nor evaluate allocates (page faults and
  // allocator locks would dominate a simulated worker's step).
  void noAllocationPerCall() {
    const auto data = synthetic(10, 32, 2048, 1000, 3.0, 3);
    auto source = SoftmaxGradientSource::create(makeSpec(64, 3), data.train, 0, 2);
    auto evaluator = SoftmaxEvaluator::create(data.test, 0);
    QVERIFY(source && evaluator);
    const auto params = softmaxInitialParameters(data.train, 3);
    std::vector<float> grad(params.size());
    double sink = 0;
    const long before = g_allocations.load();
    for (int step = 0; step < 100; ++step) {  // 1024-sample shard: several reshuffles
      const auto loss = (*source)->computeGradient(params.data(), grad.data());
      sink += loss.value();
    }
    sink += (*evaluator)->evaluate(params.data()).loss;
    const long after = g_allocations.load();
    QVERIFY(std::isfinite(sink));
    QCOMPARE(after - before, 0L);
  }

  // The cost the simulator pays per simulated worker step (printed, not asserted).
  void timing() {
    const auto data = synthetic(10, 32, 4096, 8, 3.0, 4);
    auto source = SoftmaxGradientSource::create(makeSpec(64, 4), data.train, 0, 1);
    QVERIFY(source);
    const auto params = softmaxInitialParameters(data.train, 4);
    std::vector<float> grad(params.size());
    double sink = 0;
    for (int k = 0; k < 200; ++k) sink += (*source)->computeGradient(params.data(), grad.data()).value();
    constexpr int kCalls = 5000;
    const auto start = std::chrono::steady_clock::now();
    for (int k = 0; k < kCalls; ++k) sink += (*source)->computeGradient(params.data(), grad.data()).value();
    const std::chrono::duration<double, std::micro> elapsed = std::chrono::steady_clock::now() - start;
    QVERIFY(std::isfinite(sink));
    qInfo("computeGradient, 32 features x 10 classes x batch 64: %.2f us per call", elapsed.count() / kCalls);
  }
};

QTEST_GUILESS_MAIN(TestSoftmaxModel)
#include "tst_softmax_model.moc"
