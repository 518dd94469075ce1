// SPDX-License-Identifier: MIT
// The model zoo, the flat parameter/gradient views, save/load and devices.
#include "core/data/dataset.h"
#include "ml/model.h"

#include "tests/support/skips.h"

#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>

using dasp::ml::Model;
using dasp::ml::ModelOptions;

namespace {

dasp::Dataset imageData(int count, int side, int channels, std::uint64_t seed) {
  dasp::Dataset d;
  d.count = count;
  d.channels = channels;
  d.height = d.width = side;
  d.classes = 10;
  d.features.resize(static_cast<std::size_t>(count) * channels * side * side);
  d.labels.resize(static_cast<std::size_t>(count));
  std::uint64_t x = seed * 2654435761ULL + 1;
  for (auto& f : d.features) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    f = static_cast<float>((x >> 40) % 1000) / 1000.0f - 0.5f;
  }
  // A learnable signal: each class brightens its own band of rows.
  const std::size_t per = static_cast<std::size_t>(channels) * side * side;
  for (int i = 0; i < count; ++i) {
    const int label = i % 10;
    d.labels[static_cast<std::size_t>(i)] = label;
    for (int r = label * side / 10; r < (label + 1) * side / 10; ++r) {
      for (int c = 0; c < side; ++c) d.features[static_cast<std::size_t>(i) * per + static_cast<std::size_t>(r * side + c)] += 1.0f;
    }
  }
  return d;
}

std::unique_ptr<Model> make(const std::string& name, int side = 28, int channels = 1) {
  ModelOptions o;
  o.name = name;
  o.height = o.width = side;
  o.channels = channels;
  o.device = "cpu";
  auto m = Model::create(o);
  if (!m) qFatal("%s", m.message().c_str());
  return std::move(m).value();
}

// `n` floats, 64-byte aligned as LibTorch's buffers (and shared-memory slots) are.
struct AlignedFloats {
  explicit AlignedFloats(std::size_t n) : data(static_cast<float*>(std::aligned_alloc(64, (n * 4 + 63) / 64 * 64))) {}
  ~AlignedFloats() { std::free(data); }
  AlignedFloats(const AlignedFloats&) = delete;
  AlignedFloats& operator=(const AlignedFloats&) = delete;
  float* data;
};

}  // namespace

class TestModel : public QObject {
  Q_OBJECT

 private slots:
  void parameterCounts_data();
  void parameterCounts();
  void flatParametersRoundTrip();
  void gradientsMatchFiniteDifferences();
  void boundBuffersGiveTheSameBits_data();
  void boundBuffersGiveTheSameBits();
  void sgdStepLowersLoss();
  void evaluateCountsSamples();
  void unknownModelAndBadShape();
  void saveAndLoad();
  void loadRejectsOtherModelAndCorruption();
  void cudaDeviceOnCpuBuild();
  void gpuTrainsOnCuda();
};

void TestModel::parameterCounts_data() {
  QTest::addColumn<QString>("name");
  QTest::addColumn<qlonglong>("count");
  QTest::newRow("logreg") << "logreg" << 7850LL;       // 784·10 + 10
  QTest::newRow("mlp") << "mlp" << 101770LL;           // 784-128-10
  QTest::newRow("lenet") << "lenet" << 61706LL;        // LeNet-5 (6, 16, 120, 84)
  QTest::newRow("ttf-cnn") << "ttf-cnn" << 813258LL;   // the paper's ~0.81 M
}

void TestModel::parameterCounts() {
  QFETCH(QString, name);
  QFETCH(qlonglong, count);
  QCOMPARE(make(name.toStdString())->parameterCount(), count);
}

void TestModel::flatParametersRoundTrip() {
  auto m = make("resnet8", 32, 3);
  const auto n = static_cast<std::size_t>(m->parameterCount());
  QVERIFY(n > 10000 && n < 200000);
  std::vector<float> a(n), b(n);
  m->copyParametersTo(a.data());
  for (std::size_t i = 0; i < n; ++i) a[i] = static_cast<float>(i % 97) * 0.01f;
  m->copyParametersFrom(a.data());
  m->copyParametersTo(b.data());
  QVERIFY(a == b);
}

void TestModel::gradientsMatchFiniteDifferences() {
  // The flat gradient buffer must hold d(loss)/d(flat parameter) at the same offsets.
  auto data = imageData(16, 28, 1, 3);
  auto m = make("mlp");
  const auto n = static_cast<std::size_t>(m->parameterCount());
  dasp::ml::BatchRef batch{&data, nullptr, 0, 16};
  auto loss = m->forwardBackward(batch);
  QVERIFY(loss.isOk());
  std::vector<float> grad(n), params(n);
  m->copyGradientsTo(grad.data());
  m->copyParametersTo(params.data());
  const float eps = 1e-2f;
  for (std::size_t i : {std::size_t{5}, n / 3, n - 3, n - 1}) {
    auto p = params;
    p[i] += eps;
    m->copyParametersFrom(p.data());
    const double up = m->forwardBackward(batch).value();
    p[i] -= 2 * eps;
    m->copyParametersFrom(p.data());
    const double down = m->forwardBackward(batch).value();
    const double numeric = (up - down) / (2 * eps);
    QVERIFY2(std::abs(numeric - grad[i]) < 2e-3 + 0.05 * std::abs(numeric),
             qPrintable(QString("param %1: numeric %2 vs flat %3").arg(i).arg(numeric).arg(grad[i])));
  }
}

void TestModel::boundBuffersGiveTheSameBits_data() {
  // Models without dropout, whose passes repeat exactly (ttf-cnn draws a dropout mask).
  QTest::addColumn<QString>("name");
  QTest::addColumn<int>("side");
  QTest::addColumn<int>("channels");
  QTest::newRow("mlp") << "mlp" << 28 << 1;
  QTest::newRow("lenet") << "lenet" << 28 << 1;
  QTest::newRow("resnet8") << "resnet8" << 32 << 3;
}

void TestModel::boundBuffersGiveTheSameBits() {
  // A model bound to the caller's buffers (a worker's shared-memory slots) computes the
  // gradient the copies in and out give, bit for bit, and never writes its parameters.
  QFETCH(QString, name);
  QFETCH(int, side);
  QFETCH(int, channels);
  auto data = imageData(32, side, channels, 5);
  auto m = make(name.toStdString(), side, channels);
  const auto n = static_cast<std::size_t>(m->parameterCount());
  const dasp::ml::BatchRef batch{&data, nullptr, 0, 32};
  std::vector<float> params(n), copied(n), again(n);
  m->copyParametersTo(params.data());
  for (std::size_t i = 0; i < n; ++i) params[i] += 1e-3f * static_cast<float>(i % 7);  // not the model's own
  m->copyParametersFrom(params.data());
  const double copiedLoss = m->forwardBackward(batch).value();
  m->copyGradientsTo(copied.data());
  const std::vector<float> zeros(n, 0.0f);
  m->copyParametersFrom(zeros.data());  // the bound pass must read p, not the model's own buffer

  AlignedFloats p(n), g(n);
  std::memcpy(p.data, params.data(), n * 4);
  std::fill(g.data, g.data + n, std::numeric_limits<float>::quiet_NaN());  // every value must be written
  QVERIFY(m->bindBuffers(p.data, g.data));
  QVERIFY(m->bound());
  for (int pass = 0; pass < 2; ++pass) {  // the second pass shows nothing accumulates across passes
    QCOMPARE(m->forwardBackward(batch).value(), copiedLoss);
    QVERIFY2(std::memcmp(g.data, copied.data(), n * 4) == 0, "the bound gradient differs from the copied one");
    QVERIFY2(std::memcmp(p.data, params.data(), n * 4) == 0, "the model wrote its bound parameters");
  }
  // An unaligned buffer is refused, and the binding stays as it was.
  QVERIFY(!m->bindBuffers(p.data + 1, g.data));
  QVERIFY(!m->bindBuffers(p.data, g.data + 1));
  QVERIFY(m->bound());

  m->unbindBuffers();
  QVERIFY(!m->bound());
  m->copyParametersFrom(zeros.data());  // into the model's own buffer again, not into p
  QVERIFY(std::memcmp(p.data, params.data(), n * 4) == 0);
  m->copyParametersFrom(params.data());
  QCOMPARE(m->forwardBackward(batch).value(), copiedLoss);
  m->copyGradientsTo(again.data());
  QVERIFY(again == copied);
}

void TestModel::sgdStepLowersLoss() {
  auto data = imageData(64, 28, 1, 4);
  auto m = make("lenet");
  dasp::ml::BatchRef batch{&data, nullptr, 0, 64};
  const double before = m->forwardBackward(batch).value();
  for (int i = 0; i < 30; ++i) {
    (void)m->forwardBackward(batch);
    m->sgdStep(0.05, 0.9, 0.0);
  }
  const double after = m->forwardBackward(batch).value();
  QVERIFY2(after < before * 0.5, qPrintable(QString("%1 -> %2").arg(before).arg(after)));
}

void TestModel::evaluateCountsSamples() {
  auto data = imageData(250, 28, 1, 5);
  auto m = make("logreg");
  auto e = m->evaluate(data, 100, 32);
  QCOMPARE(e.samples, 100LL);
  QVERIFY(e.accuracy >= 0 && e.accuracy <= 1);
  QVERIFY(e.loss > 0 && std::isfinite(e.loss));
  QCOMPARE(m->evaluate(data).samples, 250LL);
}

void TestModel::unknownModelAndBadShape() {
  ModelOptions o;
  o.device = "cpu";
  o.name = "transformer";
  auto m = Model::create(o);
  QVERIFY(!m.isOk());
  QVERIFY2(m.message().find("transformer") != std::string::npos, m.message().c_str());
  o.name = "lenet";
  o.height = 1;
  o.width = 32;
  m = Model::create(o);
  QVERIFY(!m.isOk());
  QVERIFY2(m.message().find("image input") != std::string::npos, m.message().c_str());
}

void TestModel::saveAndLoad() {
  QTemporaryDir dir;
  const auto path = dir.filePath("m.bin").toStdString();
  auto a = make("mlp");
  QVERIFY(a->save(path).isOk());
  ModelOptions o;
  o.name = "mlp";
  o.device = "cpu";
  o.seed = 99;  // different initialisation
  auto b = std::move(Model::create(o)).value();
  QVERIFY(b->load(path).isOk());
  std::vector<float> pa(static_cast<std::size_t>(a->parameterCount())), pb(pa.size());
  a->copyParametersTo(pa.data());
  b->copyParametersTo(pb.data());
  QVERIFY(pa == pb);
}

void TestModel::loadRejectsOtherModelAndCorruption() {
  QTemporaryDir dir;
  const auto path = dir.filePath("m.bin").toStdString();
  QVERIFY(make("mlp")->save(path).isOk());
  auto other = make("logreg");
  auto st = other->load(path);
  QVERIFY(!st.isOk());
  QVERIFY2(st.message().find("mlp") != std::string::npos && st.message().find("logreg") != std::string::npos,
           st.message().c_str());
  {  // flip a byte in the middle of the parameters
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(1000);
    f.put('\x7f');
  }
  st = make("mlp")->load(path);
  QVERIFY(!st.isOk());
  QVERIFY2(st.message().find("checksum") != std::string::npos, st.message().c_str());
}

void TestModel::cudaDeviceOnCpuBuild() {
  if (dasp::ml::torchInfo().cudaAvailable) DASP_SKIP_NEEDS_NO_GPU("CUDA is available: the CPU-only message does not apply");
  ModelOptions o;
  o.device = "cuda:0";
  auto m = Model::create(o);
  QVERIFY(!m.isOk());
  QVERIFY2(m.message().find("no CUDA") != std::string::npos, m.message().c_str());
  o.device = "auto";
  QVERIFY(Model::create(o).isOk());  // auto falls back to the CPU
}

void TestModel::gpuTrainsOnCuda() {
  if (!dasp::ml::torchInfo().cudaAvailable) {
    DASP_SKIP_NEEDS_GPU("no CUDA device: this LibTorch build is CPU-only or no GPU is visible");
  }
  auto data = imageData(64, 28, 1, 6);
  ModelOptions o;
  o.name = "lenet";
  o.device = "cuda:0";
  auto m = std::move(Model::create(o)).value();
  QCOMPARE(m->deviceName(), std::string("cuda:0"));
  dasp::ml::BatchRef batch{&data, nullptr, 0, 64};
  const double before = m->forwardBackward(batch).value();
  for (int i = 0; i < 20; ++i) {
    (void)m->forwardBackward(batch);
    m->sgdStep(0.05, 0.9, 0.0);
  }
  QVERIFY(m->forwardBackward(batch).value() < before);
}

QTEST_GUILESS_MAIN(TestModel)
#include "tst_model.moc"
