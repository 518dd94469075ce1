// SPDX-License-Identifier: MIT
// Tests for core/dataset: IDX (raw and gzip) and CIFAR-10 readers with their error
// messages, the synthetic generator, normalisation and sharding by rank.

#include "core/data/dataset.h"

#include <QFile>
#include <QString>
#include <QTemporaryDir>
#include <QtTest>

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

using namespace dasp;

namespace {

void putBigEndian32(std::vector<unsigned char>& out, std::uint32_t v) {
  out.push_back(static_cast<unsigned char>(v >> 24));
  out.push_back(static_cast<unsigned char>(v >> 16));
  out.push_back(static_cast<unsigned char>(v >> 8));
  out.push_back(static_cast<unsigned char>(v));
}

std::vector<unsigned char> idxImages(std::uint32_t count, std::uint32_t rows,
                                     std::uint32_t cols, std::uint32_t magic = 0x00000803) {
  std::vector<unsigned char> out;
  putBigEndian32(out, magic);
  putBigEndian32(out, count);
  putBigEndian32(out, rows);
  putBigEndian32(out, cols);
  for (std::uint32_t i = 0; i < count * rows * cols; ++i) {
    out.push_back(static_cast<unsigned char>((i * 37 + 11) % 256));
  }
  return out;
}

std::vector<unsigned char> idxLabels(const std::vector<unsigned char>& labels) {
  std::vector<unsigned char> out;
  putBigEndian32(out, 0x00000801);
  putBigEndian32(out, static_cast<std::uint32_t>(labels.size()));
  out.insert(out.end(), labels.begin(), labels.end());
  return out;
}

bool writeRaw(const QString& path, const std::vector<unsigned char>& bytes) {
  QFile file(path);
  if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate)) return false;
  const auto size = static_cast<qint64>(bytes.size());
  return file.write(reinterpret_cast<const char*>(bytes.data()), size) == size;
}

bool writeGzip(const QString& path, const std::vector<unsigned char>& bytes) {
  gzFile file = gzopen(path.toStdString().c_str(), "wb");
  if (file == nullptr) return false;
  const int written =
      bytes.empty() ? 0 : gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size()));
  const int closed = gzclose(file);
  return written == static_cast<int>(bytes.size()) && closed == Z_OK;
}

std::string str(const QTemporaryDir& dir, const char* name) {
  return dir.filePath(QString::fromLatin1(name)).toStdString();
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// One CIFAR-10 record: label, then 3072 pixels derived from (label, index).
void appendCifarRecord(std::vector<unsigned char>& out, unsigned char label, int index) {
  out.push_back(label);
  for (int k = 0; k < 3072; ++k) {
    out.push_back(static_cast<unsigned char>((k + index * 7 + label) % 256));
  }
}

// Largest fraction of any single class within a shard.
double maxClassFraction(const Dataset& data, const std::vector<std::int64_t>& shard) {
  if (shard.empty()) return 0.0;
  std::vector<int> counts(static_cast<std::size_t>(data.classes), 0);
  for (std::int64_t i : shard) ++counts[static_cast<std::size_t>(data.labels[i])];
  return static_cast<double>(*std::max_element(counts.begin(), counts.end())) /
         static_cast<double>(shard.size());
}

}  // namespace

class TestDataset : public QObject {
  Q_OBJECT

 private:
  const std::vector<unsigned char> m_labels{0, 9, 3};

  void checkSmallPair(const Dataset& d) {
    QCOMPARE(d.count, std::int64_t{3});
    QCOMPARE(d.channels, 1);
    QCOMPARE(d.height, 2);
    QCOMPARE(d.width, 4);
    QCOMPARE(d.sampleSize(), std::int64_t{8});
    QCOMPARE(d.classes, 10);
    QCOMPARE(d.features.size(), std::size_t{24});
    QCOMPARE(d.labels, (std::vector<std::int64_t>{0, 9, 3}));
    for (std::size_t i = 0; i < d.features.size(); ++i) {
      const float expected = static_cast<float>((i * 37 + 11) % 256) / 255.0f;
      QCOMPARE(d.features[i], expected);
    }
    QCOMPARE(d.features[0], 11.0f / 255.0f);
  }

 private slots:
  void readsRawIdxPair() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    QVERIFY(writeRaw(dir.filePath("img"), idxImages(3, 2, 4)));
    QVERIFY(writeRaw(dir.filePath("lbl"), idxLabels(m_labels)));
    Result<Dataset> d = readIdx(str(dir, "img"), str(dir, "lbl"));
    QVERIFY2(d.isOk(), d.message().c_str());
    checkSmallPair(d.value());

    Result<Dataset> limited = readIdx(str(dir, "img"), str(dir, "lbl"), 2);
    QVERIFY2(limited.isOk(), limited.message().c_str());
    QCOMPARE(limited->count, std::int64_t{2});
    QCOMPARE(limited->features.size(), std::size_t{16});
    QCOMPARE(limited->labels, (std::vector<std::int64_t>{0, 9}));
  }

  void readsGzipIdxPair() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    QVERIFY(writeGzip(dir.filePath("img.gz"), idxImages(3, 2, 4)));
    QVERIFY(writeGzip(dir.filePath("lbl.gz"), idxLabels(m_labels)));
    Result<Dataset> d = readIdx(str(dir, "img.gz"), str(dir, "lbl.gz"));
    QVERIFY2(d.isOk(), d.message().c_str());
    checkSmallPair(d.value());
  }

  void loadsDirectoryMixingRawAndGzip() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    QVERIFY(writeGzip(dir.filePath("train-images-idx3-ubyte.gz"), idxImages(3, 2, 4)));
    QVERIFY(writeRaw(dir.filePath("train-labels-idx1-ubyte"), idxLabels(m_labels)));
    QVERIFY(writeRaw(dir.filePath("t10k-images-idx3-ubyte"), idxImages(2, 2, 4)));
    QVERIFY(writeGzip(dir.filePath("t10k-labels-idx1-ubyte.gz"), idxLabels({5, 1})));
    Result<TrainTest> tt = loadIdxDirectory(dir.path().toStdString(), "mnist", 0, 1);
    QVERIFY2(tt.isOk(), tt.message().c_str());
    QCOMPARE(tt->train.count, std::int64_t{3});
    QCOMPARE(tt->test.count, std::int64_t{1});
    QCOMPARE(tt->test.labels, (std::vector<std::int64_t>{5}));
    QCOMPARE(tt->train.classes, 10);
    QCOMPARE(tt->test.classes, 10);
    QCOMPARE(tt->train.name, std::string("mnist"));
  }

  void wrongMagicNamesFile() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    QVERIFY(writeRaw(dir.filePath("img"), idxImages(3, 2, 4, 0x00000801)));
    QVERIFY(writeRaw(dir.filePath("lbl"), idxLabels(m_labels)));
    Result<Dataset> d = readIdx(str(dir, "img"), str(dir, "lbl"));
    QVERIFY(!d.isOk());
    QVERIFY2(contains(d.message(), str(dir, "img") + ": not an IDX image file"),
             d.message().c_str());
    QVERIFY2(contains(d.message(), "0x00000801"), d.message().c_str());
    QVERIFY2(contains(d.message(), "0x00000803"), d.message().c_str());

    // Swapped arguments: the label file is named as the bad image file.
    Result<Dataset> swapped = readIdx(str(dir, "lbl"), str(dir, "img"));
    QVERIFY(!swapped.isOk());
    QVERIFY2(contains(swapped.message(), str(dir, "lbl")), swapped.message().c_str());
  }

  void missingFileNamesFile() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    Result<Dataset> d = readIdx(str(dir, "nope"), str(dir, "nope-labels"));
    QVERIFY(!d.isOk());
    QVERIFY2(contains(d.message(), str(dir, "nope") + ": cannot open ("), d.message().c_str());
    QVERIFY2(contains(d.message(), "No such file or directory"), d.message().c_str());
  }

  void truncatedImageFileSaysTruncated() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    std::vector<unsigned char> images = idxImages(3, 2, 4);
    images.resize(images.size() - 5);
    QVERIFY(writeRaw(dir.filePath("img"), images));
    QVERIFY(writeRaw(dir.filePath("lbl"), idxLabels(m_labels)));
    Result<Dataset> d = readIdx(str(dir, "img"), str(dir, "lbl"));
    QVERIFY(!d.isOk());
    QVERIFY2(contains(d.message(), str(dir, "img") + ": truncated: expected 24 bytes of pixel "
                                                     "data, read 19"),
             d.message().c_str());

    // A gzip stream cut short is reported as truncated too, with zlib's reason.
    std::vector<unsigned char> big = idxImages(200, 28, 28);
    QVERIFY(writeGzip(dir.filePath("big.gz"), big));
    QFile gz(dir.filePath("big.gz"));
    QVERIFY(gz.open(QIODevice::ReadOnly));
    QByteArray compressed = gz.readAll();
    gz.close();
    compressed.truncate(compressed.size() / 2);
    QVERIFY(writeRaw(dir.filePath("cut.gz"),
                     std::vector<unsigned char>(compressed.begin(), compressed.end())));
    QVERIFY(writeRaw(dir.filePath("lbl200"), idxLabels(std::vector<unsigned char>(200, 1))));
    Result<Dataset> cut = readIdx(str(dir, "cut.gz"), str(dir, "lbl200"));
    QVERIFY(!cut.isOk());
    QVERIFY2(contains(cut.message(), str(dir, "cut.gz") + ": truncated"), cut.message().c_str());
    QVERIFY2(contains(cut.message(), "gzip"), cut.message().c_str());

    // A corrupted gzip stream reports zlib's error text.
    compressed = QByteArray();
    QVERIFY(gz.open(QIODevice::ReadOnly));
    compressed = gz.readAll();
    gz.close();
    for (int i = 40; i < 80; ++i) compressed[i] = static_cast<char>(compressed[i] ^ 0x5a);
    QVERIFY(writeRaw(dir.filePath("bad.gz"),
                     std::vector<unsigned char>(compressed.begin(), compressed.end())));
    Result<Dataset> bad = readIdx(str(dir, "bad.gz"), str(dir, "lbl200"));
    QVERIFY(!bad.isOk());
    QVERIFY2(contains(bad.message(), str(dir, "bad.gz") + ": "), bad.message().c_str());
  }

  void countMismatchNamesBothFiles() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    QVERIFY(writeRaw(dir.filePath("img"), idxImages(3, 2, 4)));
    QVERIFY(writeRaw(dir.filePath("lbl"), idxLabels({1, 2})));
    Result<Dataset> d = readIdx(str(dir, "img"), str(dir, "lbl"));
    QVERIFY(!d.isOk());
    const std::string expected =
        str(dir, "img") + ": 3 images but " + str(dir, "lbl") + " has 2 labels";
    QCOMPARE(d.message(), expected);
  }

  void missingDirectoryMentionsPackage() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string missing = str(dir, "no-such-dir");
    Result<TrainTest> tt = loadIdxDirectory(missing, "fashion-mnist");
    QVERIFY(!tt.isOk());
    QVERIFY2(contains(tt.message(), "fashion-mnist: no data in " + missing), tt.message().c_str());
    QVERIFY2(contains(tt.message(), "dataset-fashion-mnist"), tt.message().c_str());
    QVERIFY2(contains(tt.message(), "dataset.path"), tt.message().c_str());

    // An existing directory missing one file names that file.
    QVERIFY(writeRaw(dir.filePath("train-images-idx3-ubyte"), idxImages(3, 2, 4)));
    QVERIFY(writeRaw(dir.filePath("train-labels-idx1-ubyte"), idxLabels(m_labels)));
    QVERIFY(writeRaw(dir.filePath("t10k-images-idx3-ubyte"), idxImages(3, 2, 4)));
    Result<TrainTest> partial = loadIdxDirectory(dir.path().toStdString(), "fashion-mnist");
    QVERIFY(!partial.isOk());
    QVERIFY2(contains(partial.message(), "missing t10k-labels-idx1-ubyte[.gz]"),
             partial.message().c_str());

    // MNIST has no Debian package to suggest.
    Result<TrainTest> mnist = loadIdxDirectory(missing, "mnist");
    QVERIFY(!mnist.isOk());
    QVERIFY2(contains(mnist.message(), "mnist: no data in " + missing), mnist.message().c_str());
    QVERIFY2(!contains(mnist.message(), "dataset-fashion-mnist"), mnist.message().c_str());
    QVERIFY2(contains(mnist.message(), "dataset.path"), mnist.message().c_str());
  }

  void cifarReadsAndRejectsTruncated() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const char* files[6] = {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
                            "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"};
    for (int f = 0; f < 6; ++f) {
      std::vector<unsigned char> bytes;
      appendCifarRecord(bytes, static_cast<unsigned char>(f), 2 * f);
      appendCifarRecord(bytes, static_cast<unsigned char>(9 - f), 2 * f + 1);
      QVERIFY(writeRaw(dir.filePath(QString::fromLatin1(files[f])), bytes));
    }
    Result<TrainTest> tt = loadCifar10(dir.path().toStdString());
    QVERIFY2(tt.isOk(), tt.message().c_str());
    QCOMPARE(tt->train.count, std::int64_t{10});
    QCOMPARE(tt->test.count, std::int64_t{2});
    for (const Dataset* d : {&tt->train, &tt->test}) {
      QCOMPARE(d->channels, 3);
      QCOMPARE(d->height, 32);
      QCOMPARE(d->width, 32);
      QCOMPARE(d->classes, 10);
      QCOMPARE(d->features.size(), static_cast<std::size_t>(d->count * 3072));
      QCOMPARE(d->labels.size(), static_cast<std::size_t>(d->count));
    }
    QCOMPARE(tt->train.labels,
             (std::vector<std::int64_t>{0, 9, 1, 8, 2, 7, 3, 6, 4, 5}));
    QCOMPARE(tt->test.labels, (std::vector<std::int64_t>{5, 4}));
    // Sample 3 is record 1 of data_batch_2 (label 8, index 3): pixel k = (k + 21 + 8) % 256.
    const float* sample3 = tt->train.features.data() + 3 * 3072;
    QCOMPARE(sample3[0], 29.0f / 255.0f);
    QCOMPARE(sample3[1024], static_cast<float>((1024 + 29) % 256) / 255.0f);  // first G pixel
    QCOMPARE(sample3[3071], static_cast<float>((3071 + 29) % 256) / 255.0f);
    for (float v : tt->train.features) QVERIFY(v >= 0.0f && v <= 1.0f);

    Result<TrainTest> limited = loadCifar10(dir.path().toStdString(), 3, 1);
    QVERIFY2(limited.isOk(), limited.message().c_str());
    QCOMPARE(limited->train.count, std::int64_t{3});
    QCOMPARE(limited->train.labels, (std::vector<std::int64_t>{0, 9, 1}));
    QCOMPARE(limited->test.count, std::int64_t{1});

    // One byte short of two records: truncated, naming the file.
    std::vector<unsigned char> shortFile;
    appendCifarRecord(shortFile, 1, 0);
    appendCifarRecord(shortFile, 2, 1);
    shortFile.pop_back();
    QVERIFY(writeRaw(dir.filePath("data_batch_3.bin"), shortFile));
    Result<TrainTest> truncated = loadCifar10(dir.path().toStdString());
    QVERIFY(!truncated.isOk());
    QVERIFY2(contains(truncated.message(), str(dir, "data_batch_3.bin") + ": truncated"),
             truncated.message().c_str());

    // A label outside 0..9 is rejected.
    std::vector<unsigned char> badLabel;
    appendCifarRecord(badLabel, 10, 0);
    QVERIFY(writeRaw(dir.filePath("data_batch_3.bin"), badLabel));
    Result<TrainTest> labelled = loadCifar10(dir.path().toStdString());
    QVERIFY(!labelled.isOk());
    QVERIFY2(contains(labelled.message(), str(dir, "data_batch_3.bin")),
             labelled.message().c_str());
    QVERIFY2(contains(labelled.message(), "label 10"), labelled.message().c_str());

    // Missing files: says which and that the binary version is expected.
    QVERIFY(QFile::remove(dir.filePath("test_batch.bin")));
    Result<TrainTest> missing = loadCifar10(dir.path().toStdString());
    QVERIFY(!missing.isOk());
    QVERIFY2(contains(missing.message(), "missing test_batch.bin"), missing.message().c_str());
    QVERIFY2(contains(missing.message(), "binary version"), missing.message().c_str());
    Result<TrainTest> noDir = loadCifar10(str(dir, "absent"));
    QVERIFY(!noDir.isOk());
    QVERIFY2(contains(noDir.message(), str(dir, "absent")), noDir.message().c_str());
    QVERIFY2(contains(noDir.message(), "binary version"), noDir.message().c_str());
  }

  void syntheticIsDeterministicPerSeed() {
    SyntheticOptions options;
    options.trainCount = 500;
    options.testCount = 200;
    const TrainTest a = makeSynthetic(options, 7);
    const TrainTest b = makeSynthetic(options, 7);
    const TrainTest c = makeSynthetic(options, 8);
    QCOMPARE(a.train.count, std::int64_t{500});
    QCOMPARE(a.test.count, std::int64_t{200});
    QCOMPARE(a.train.channels, 1);
    QCOMPARE(a.train.height, 1);
    QCOMPARE(a.train.width, options.dimension);
    QCOMPARE(a.train.classes, options.classes);
    QCOMPARE(a.train.features.size(), static_cast<std::size_t>(500 * options.dimension));
    QCOMPARE(a.test.features.size(), static_cast<std::size_t>(200 * options.dimension));
    QVERIFY(a.train.features == b.train.features);
    QVERIFY(a.train.labels == b.train.labels);
    QVERIFY(a.test.features == b.test.features);
    QVERIFY(a.test.labels == b.test.labels);
    QVERIFY(a.train.features != c.train.features);
    QVERIFY(a.train.labels != c.train.labels);
    QVERIFY(a.train.features != a.test.features);

    std::vector<int> perClass(static_cast<std::size_t>(options.classes), 0);
    for (std::int64_t label : a.train.labels) {
      QVERIFY(label >= 0 && label < options.classes);
      ++perClass[static_cast<std::size_t>(label)];
    }
    for (int n : perClass) QVERIFY(n > 20);  // roughly balanced: expect 50 each

    // Linearly separable enough: nearest class mean (estimated on train) beats 90 % on
    // test, yet the classes overlap a little.
    const int dim = options.dimension;
    std::vector<double> means(static_cast<std::size_t>(options.classes * dim), 0.0);
    for (std::int64_t i = 0; i < a.train.count; ++i) {
      const auto label = static_cast<std::size_t>(a.train.labels[i]);
      for (int k = 0; k < dim; ++k) means[label * dim + k] += a.train.features[i * dim + k];
    }
    for (int cl = 0; cl < options.classes; ++cl) {
      for (int k = 0; k < dim; ++k) means[cl * dim + k] /= perClass[cl];
    }
    int correct = 0;
    for (std::int64_t i = 0; i < a.test.count; ++i) {
      int best = -1;
      double bestDistance = 0.0;
      for (int cl = 0; cl < options.classes; ++cl) {
        double distance = 0.0;
        for (int k = 0; k < dim; ++k) {
          const double diff = a.test.features[i * dim + k] - means[cl * dim + k];
          distance += diff * diff;
        }
        if (best < 0 || distance < bestDistance) {
          best = cl;
          bestDistance = distance;
        }
      }
      correct += best == a.test.labels[i] ? 1 : 0;
    }
    const double accuracy = static_cast<double>(correct) / static_cast<double>(a.test.count);
    QVERIFY2(accuracy > 0.9, qPrintable(QString::number(accuracy)));
  }

  void normalizePerChannel() {
    Dataset d;
    d.count = 2;
    d.channels = 2;
    d.height = 1;
    d.width = 2;
    d.features = {1, 2, 10, 20, 3, 4, 30, 40};
    d.labels = {0, 1};
    Dataset e = d;
    normalize(d, {1.0f, 10.0f}, {2.0f, 10.0f});
    QCOMPARE(d.features, (std::vector<float>{0.0f, 0.5f, 0.0f, 1.0f, 1.0f, 1.5f, 2.0f, 3.0f}));
    normalize(e, {1.0f}, {2.0f});  // one entry applies to every channel
    QCOMPARE(e.features, (std::vector<float>{0.0f, 0.5f, 4.5f, 9.5f, 1.0f, 1.5f, 14.5f, 19.5f}));
  }

  void iidShardsDisjointEqualDeterministic() {
    SyntheticOptions options;
    options.trainCount = 1003;
    options.testCount = 1;
    const Dataset data = makeSynthetic(options, 3).train;
    const int world = 4;
    std::set<std::int64_t> seen;
    for (int rank = 0; rank < world; ++rank) {
      const std::vector<std::int64_t> shard =
          shardIndices(data, rank, world, ShardMode::Iid, 0.0, 99);
      QCOMPARE(shard.size(), std::size_t{1003 / world});
      QVERIFY(shard == shardIndices(data, rank, world, ShardMode::Iid, 0.0, 99));
      QVERIFY(shard != shardIndices(data, rank, world, ShardMode::Iid, 0.0, 100));
      for (std::int64_t i : shard) {
        QVERIFY(i >= 0 && i < data.count);
        QVERIFY2(seen.insert(i).second, "index in two shards");
      }
    }
    QCOMPARE(seen.size(), std::size_t{1003 - 1003 % world});
    // A single worker gets everything.
    QCOMPARE(shardIndices(data, 0, 1, ShardMode::Iid, 0.0, 1).size(), std::size_t{1003});
    // Invalid arguments give an empty shard.
    QVERIFY(shardIndices(data, 4, 4, ShardMode::Iid, 0.0, 1).empty());
    QVERIFY(shardIndices(data, -1, 4, ShardMode::Iid, 0.0, 1).empty());
    QVERIFY(shardIndices(data, 0, 0, ShardMode::Iid, 0.0, 1).empty());
  }

  void dirichletShardsCoverAndSkew() {
    SyntheticOptions options;
    options.trainCount = 5000;
    options.testCount = 1;
    const Dataset data = makeSynthetic(options, 5).train;
    const int world = 8;
    double skewSmall = 0.0;
    double skewLarge = 0.0;
    for (double alpha : {0.1, 100.0}) {
      std::vector<int> owner(static_cast<std::size_t>(data.count), -1);
      double skew = 0.0;
      for (int rank = 0; rank < world; ++rank) {
        const std::vector<std::int64_t> shard =
            shardIndices(data, rank, world, ShardMode::Dirichlet, alpha, 11);
        QVERIFY(std::is_sorted(shard.begin(), shard.end()));
        QVERIFY(shard == shardIndices(data, rank, world, ShardMode::Dirichlet, alpha, 11));
        for (std::int64_t i : shard) {
          QVERIFY(i >= 0 && i < data.count);
          QVERIFY2(owner[static_cast<std::size_t>(i)] < 0, "index in two shards");
          owner[static_cast<std::size_t>(i)] = rank;
        }
        skew += maxClassFraction(data, shard) / world;
      }
      for (int o : owner) QVERIFY2(o >= 0, "index in no shard");
      (alpha < 1.0 ? skewSmall : skewLarge) = skew;
    }
    QVERIFY2(skewSmall > skewLarge + 0.2,
             qPrintable(QString("alpha 0.1: %1, alpha 100: %2").arg(skewSmall).arg(skewLarge)));
    QVERIFY2(skewLarge < 0.25, qPrintable(QString::number(skewLarge)));  // ~0.1 + noise
    QVERIFY(shardIndices(data, 0, world, ShardMode::Dirichlet, 0.0, 1).empty());
    QVERIFY(shardIndices(data, 0, world, ShardMode::Dirichlet, -1.0, 1).empty());
  }

  void readsRealFashionMnistTestSet() {
    const std::string directory = "/usr/share/datasets/fashion-mnist";
    if (!QFile::exists(QString::fromStdString(directory + "/train-labels-idx1-ubyte.gz"))) {
      // The empty second argument keeps -Wpedantic quiet about Qt's variadic QSKIP in C++17.
      QSKIP("Fashion-MNIST not installed (Debian package dataset-fashion-mnist)", );
    }
    Result<TrainTest> tt = loadIdxDirectory(directory, "fashion-mnist", 100, 2000);
    QVERIFY2(tt.isOk(), tt.message().c_str());
    QCOMPARE(tt->train.count, std::int64_t{100});
    QCOMPARE(tt->test.count, std::int64_t{2000});
    QCOMPARE(tt->test.height, 28);
    QCOMPARE(tt->test.width, 28);
    QCOMPARE(tt->test.classes, 10);
    QCOMPARE(tt->test.features.size(), std::size_t{2000 * 784});
    std::set<std::int64_t> classes(tt->test.labels.begin(), tt->test.labels.end());
    QCOMPARE(classes.size(), std::size_t{10});
    float maxPixel = 0.0f;
    for (float v : tt->test.features) maxPixel = std::max(maxPixel, v);
    QVERIFY(maxPixel > 0.9f && maxPixel <= 1.0f);
  }
};

QTEST_GUILESS_MAIN(TestDataset)
#include "tst_dataset.moc"
