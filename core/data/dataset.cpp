// SPDX-License-Identifier: MIT
#include "core/data/dataset.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <new>
#include <random>
#include <sstream>
#include <system_error>
#include <utility>

namespace dasp {
namespace {

constexpr std::uint32_t kIdxImagesMagic = 0x00000803;
constexpr std::uint32_t kIdxLabelsMagic = 0x00000801;
constexpr int kCifarSide = 32;
constexpr int kCifarChannels = 3;
constexpr std::int64_t kCifarPixels = kCifarChannels * kCifarSide * kCifarSide;  // 3072
constexpr std::int64_t kCifarRecord = 1 + kCifarPixels;                            // 3073
constexpr int kCifarClasses = 10;
constexpr std::size_t kChunkBytes = std::size_t{1} << 20;  // bytes per gzread call
// A header may claim any size; reserve at most this many floats up front (1 GiB) and let
// the buffer grow with what is really read beyond that.
constexpr std::int64_t kMaxReserveFloats = std::int64_t{1} << 28;

std::string hex32(std::uint32_t v) {
  static const char* digits = "0123456789abcdef";
  std::string s = "0x";
  for (int shift = 28; shift >= 0; shift -= 4) s += digits[(v >> shift) & 0xF];
  return s;
}

std::uint32_t bigEndian32(const unsigned char* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) |
         (std::uint32_t{p[2]} << 8) | std::uint32_t{p[3]};
}

// A gzip-or-raw input file (zlib reads uncompressed files transparently).
class GzInput {
 public:
  GzInput() = default;
  GzInput(const GzInput&) = delete;
  GzInput& operator=(const GzInput&) = delete;
  ~GzInput() {
    if (m_file != nullptr) gzclose(m_file);
  }

  Status open(const std::string& path) {
    m_path = path;
    errno = 0;
    m_file = gzopen(path.c_str(), "rb");
    if (m_file == nullptr) {
      const int err = errno;
      return Status::error(path + ": cannot open (" +
                           (err != 0 ? std::strerror(err) : "out of memory") + ")");
    }
    gzbuffer(m_file, 256 * 1024);
    return Status::ok();
  }

  // Reads up to `size` bytes; returns how many were read (less only at end of data or on
  // error). On a read or decompression error, `error` gets a description.
  std::size_t read(unsigned char* out, std::size_t size, std::string& error) {
    std::size_t done = 0;
    error.clear();
    while (done < size) {
      const std::size_t want = std::min<std::size_t>(size - done, kChunkBytes);
      errno = 0;
      const int got = gzread(m_file, out + done, static_cast<unsigned>(want));
      if (got < 0) {
        error = describeError();
        return done;
      }
      done += static_cast<std::size_t>(got);
      if (static_cast<std::size_t>(got) < want) {
        int code = Z_OK;
        gzerror(m_file, &code);
        if (code != Z_OK && code != Z_STREAM_END) error = describeError();
        return done;
      }
    }
    return done;
  }

  // Whether the last short read was a compressed stream that ended early.
  bool streamCutShort() const {
    int code = Z_OK;
    gzerror(m_file, &code);
    return code == Z_BUF_ERROR;
  }

 private:
  std::string describeError() const {
    int code = Z_OK;
    const char* text = gzerror(m_file, &code);
    if (code == Z_ERRNO) {
      const int err = errno;
      return std::string("read error (") + (err != 0 ? std::strerror(err) : "I/O error") + ")";
    }
    return std::string("gzip error: ") + (text != nullptr && *text != '\0' ? text : "unknown");
  }

  gzFile m_file = nullptr;
  std::string m_path;
};

// Reads exactly `size` bytes or returns an error "<path>: truncated: expected N bytes of
// <what>, read M" (or the zlib/read error when that is the cause).
Status readExact(GzInput& in, const std::string& path, unsigned char* out, std::size_t size,
                 const std::string& what) {
  std::string error;
  const std::size_t got = in.read(out, size, error);
  if (got == size) return Status::ok();
  std::ostringstream msg;
  if (!error.empty() && !in.streamCutShort()) {
    msg << path << ": " << error << " while reading " << what << " (read " << got << " of "
        << size << " bytes)";
  } else {
    msg << path << ": truncated: expected " << size << " bytes of " << what << ", read "
        << got;
    if (!error.empty()) msg << " (" << error << ")";
  }
  return Status::error(msg.str());
}

struct IdxHeader {
  std::int64_t count = 0;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
};

Status readIdxImageHeader(GzInput& in, const std::string& path, IdxHeader& header) {
  unsigned char raw[16];
  if (Status s = readExact(in, path, raw, 4, "header"); !s) return s;
  const std::uint32_t magic = bigEndian32(raw);
  if (magic != kIdxImagesMagic) {
    return Status::error(path + ": not an IDX image file (magic " + hex32(magic) +
                         ", expected " + hex32(kIdxImagesMagic) + ")");
  }
  if (Status s = readExact(in, path, raw + 4, 12, "header"); !s) return s;
  header.count = bigEndian32(raw + 4);
  header.rows = bigEndian32(raw + 8);
  header.cols = bigEndian32(raw + 12);
  if (header.rows <= 0 || header.cols <= 0 || header.rows > 65536 || header.cols > 65536 ||
      header.rows * header.cols > (std::int64_t{1} << 26)) {
    return Status::error(path + ": implausible IDX image size " + std::to_string(header.rows) +
                         "x" + std::to_string(header.cols));
  }
  return Status::ok();
}

Status readIdxLabelHeader(GzInput& in, const std::string& path, std::int64_t& count) {
  unsigned char raw[8];
  if (Status s = readExact(in, path, raw, 4, "header"); !s) return s;
  const std::uint32_t magic = bigEndian32(raw);
  if (magic != kIdxLabelsMagic) {
    return Status::error(path + ": not an IDX label file (magic " + hex32(magic) +
                         ", expected " + hex32(kIdxLabelsMagic) + ")");
  }
  if (Status s = readExact(in, path, raw + 4, 4, "header"); !s) return s;
  count = bigEndian32(raw + 4);
  return Status::ok();
}

// Reads `total` pixel bytes in chunks into a reused buffer and appends them as floats/255.
Status readPixels(GzInput& in, const std::string& path, std::uint64_t total,
                  std::vector<unsigned char>& buffer, std::vector<float>& out) {
  std::uint64_t done = 0;
  std::string error;
  while (done < total) {
    const std::size_t want =
        static_cast<std::size_t>(std::min<std::uint64_t>(total - done, buffer.size()));
    const std::size_t got = in.read(buffer.data(), want, error);
    const std::size_t old = out.size();
    out.resize(old + got);
    float* dst = out.data() + old;
    for (std::size_t i = 0; i < got; ++i) dst[i] = static_cast<float>(buffer[i]) / 255.0f;
    done += got;
    if (got < want) {
      std::ostringstream msg;
      if (!error.empty() && !in.streamCutShort()) {
        msg << path << ": " << error << " after " << done << " of " << total
            << " bytes of pixel data";
      } else {
        msg << path << ": truncated: expected " << total << " bytes of pixel data, read "
            << done;
        if (!error.empty()) msg << " (" << error << ")";
      }
      return Status::error(msg.str());
    }
  }
  return Status::ok();
}

bool isDirectory(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_directory(path, ec);
}

bool isFile(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec);
}

std::string joinPath(const std::string& directory, const std::string& file) {
  if (directory.empty()) return file;
  if (directory.back() == '/') return directory + file;
  return directory + "/" + file;
}

// --- deterministic random numbers, independent of the standard library's distributions ---

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Uniform in [0, 1) with 53 random bits.
double uniform01(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * (1.0 / 9007199254740992.0);
}

// Uniform integer in [0, bound), unbiased (rejection sampling); bound > 0.
std::uint64_t uniformBelow(std::mt19937_64& rng, std::uint64_t bound) {
  const std::uint64_t limit = std::numeric_limits<std::uint64_t>::max() -
                              std::numeric_limits<std::uint64_t>::max() % bound;
  std::uint64_t x = rng();
  while (x >= limit) x = rng();
  return x % bound;
}

// Standard normal by the Box-Muller transform (both values of a pair are used).
class Normal {
 public:
  explicit Normal(std::mt19937_64& rng) : m_rng(rng) {}
  double operator()() {
    if (m_hasSpare) {
      m_hasSpare = false;
      return m_spare;
    }
    const double u1 = 1.0 - uniform01(m_rng);  // (0, 1]
    const double u2 = uniform01(m_rng);
    const double radius = std::sqrt(-2.0 * std::log(u1));
    const double angle = 2.0 * 3.14159265358979323846 * u2;
    m_spare = radius * std::sin(angle);
    m_hasSpare = true;
    return radius * std::cos(angle);
  }

 private:
  std::mt19937_64& m_rng;
  double m_spare = 0.0;
  bool m_hasSpare = false;
};

// log of a Gamma(shape, 1) draw (Marsaglia & Tsang), in log space so that tiny shapes do
// not underflow to zero. shape > 0.
double logGamma(std::mt19937_64& rng, Normal& normal, double shape) {
  double boost = 0.0;  // Gamma(a) = Gamma(a + 1) * U^(1/a) for a < 1
  if (shape < 1.0) {
    boost = std::log(1.0 - uniform01(rng)) / shape;
    shape += 1.0;
  }
  const double d = shape - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x = 0.0;
    double v = 0.0;
    do {
      x = normal();
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    const double u = 1.0 - uniform01(rng);  // (0, 1]
    if (std::log(u) < 0.5 * x * x + d - d * v + d * std::log(v)) {
      return std::log(d * v) + boost;
    }
  }
}

template <typename T>
void fisherYates(std::vector<T>& items, std::mt19937_64& rng) {
  for (std::size_t i = items.size(); i > 1; --i) {
    const std::size_t j = static_cast<std::size_t>(uniformBelow(rng, i));
    std::swap(items[i - 1], items[j]);
  }
}

void fillSynthetic(Dataset& out, const std::vector<double>& centres, int classes,
                   int dimension, std::int64_t count, std::uint64_t seed) {
  out.count = count;
  out.channels = 1;
  out.height = 1;
  out.width = dimension;
  out.classes = classes;
  out.features.assign(static_cast<std::size_t>(count) * static_cast<std::size_t>(dimension),
                      0.0f);
  out.labels.assign(static_cast<std::size_t>(count), 0);
  std::mt19937_64 rng(seed);
  Normal normal(rng);
  for (std::int64_t i = 0; i < count; ++i) {
    const auto label =
        static_cast<std::int64_t>(uniformBelow(rng, static_cast<std::uint64_t>(classes)));
    out.labels[static_cast<std::size_t>(i)] = label;
    const double* centre = centres.data() + label * dimension;
    float* row = out.features.data() + i * dimension;
    for (int k = 0; k < dimension; ++k) row[k] = static_cast<float>(centre[k] + normal());
  }
}

}  // namespace

Result<Dataset> readIdx(const std::string& imagesPath, const std::string& labelsPath,
                        std::int64_t limit) {
  GzInput images;
  if (Status s = images.open(imagesPath); !s) return s;
  IdxHeader header;
  if (Status s = readIdxImageHeader(images, imagesPath, header); !s) return s;

  GzInput labelsIn;
  if (Status s = labelsIn.open(labelsPath); !s) return s;
  std::int64_t labelCount = 0;
  if (Status s = readIdxLabelHeader(labelsIn, labelsPath, labelCount); !s) return s;

  if (labelCount != header.count) {
    return Status::error(imagesPath + ": " + std::to_string(header.count) + " images but " +
                         labelsPath + " has " + std::to_string(labelCount) + " labels");
  }

  const std::int64_t keep = limit > 0 ? std::min(limit, header.count) : header.count;
  Dataset data;
  data.name = imagesPath;
  data.count = keep;
  data.channels = 1;
  data.height = static_cast<int>(header.rows);
  data.width = static_cast<int>(header.cols);

  try {
    const std::uint64_t pixelBytes =
        static_cast<std::uint64_t>(keep) * static_cast<std::uint64_t>(header.rows * header.cols);
    data.features.reserve(static_cast<std::size_t>(
        std::min<std::uint64_t>(pixelBytes, static_cast<std::uint64_t>(kMaxReserveFloats))));
    std::vector<unsigned char> buffer(
        static_cast<std::size_t>(std::min<std::uint64_t>(std::max<std::uint64_t>(pixelBytes, 1),
                                                         kChunkBytes)));
    if (Status s = readPixels(images, imagesPath, pixelBytes, buffer, data.features); !s) {
      return s;
    }

    std::vector<unsigned char> rawLabels(static_cast<std::size_t>(keep));
    if (Status s = readExact(labelsIn, labelsPath, rawLabels.data(), rawLabels.size(),
                             "label data");
        !s) {
      return s;
    }
    data.labels.resize(rawLabels.size());
    int maxLabel = -1;
    for (std::size_t i = 0; i < rawLabels.size(); ++i) {
      data.labels[i] = rawLabels[i];
      maxLabel = std::max<int>(maxLabel, rawLabels[i]);
    }
    // MNIST-style sets have 10 classes; a set with larger labels (EMNIST letters, ...)
    // gets max label + 1.
    data.classes = std::max(10, maxLabel + 1);
  } catch (const std::bad_alloc&) {
    return Status::error(imagesPath + ": out of memory reading " + std::to_string(keep) +
                         " images of " + std::to_string(header.rows) + "x" +
                         std::to_string(header.cols));
  } catch (const std::length_error&) {
    return Status::error(imagesPath + ": too many images (" + std::to_string(keep) + ")");
  }
  return data;
}

Result<TrainTest> loadIdxDirectory(const std::string& directory, const std::string& name,
                                   std::int64_t trainLimit, std::int64_t testLimit) {
  const bool fashion = name.find("fashion") != std::string::npos;
  const std::string advice =
      fashion ? "install the Debian package dataset-fashion-mnist or set dataset.path to a "
                "directory with the IDX files"
              : "set dataset.path to a directory with the IDX files";
  if (!isDirectory(directory)) {
    return Status::error(name + ": no data in " + directory +
                         " (directory does not exist; missing train-images-idx3-ubyte[.gz]); " +
                         advice);
  }
  const char* bases[4] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                          "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"};
  std::string paths[4];
  for (int i = 0; i < 4; ++i) {
    const std::string base = joinPath(directory, bases[i]);
    if (isFile(base + ".gz")) {
      paths[i] = base + ".gz";
    } else if (isFile(base)) {
      paths[i] = base;
    } else {
      return Status::error(name + ": no data in " + directory + " (missing " + bases[i] +
                           "[.gz]); " + advice);
    }
  }
  Result<Dataset> train = readIdx(paths[0], paths[1], trainLimit);
  if (!train) return train.status().withContext(name);
  Result<Dataset> test = readIdx(paths[2], paths[3], testLimit);
  if (!test) return test.status().withContext(name);

  TrainTest out;
  out.train = std::move(train).value();
  out.test = std::move(test).value();
  const int classes = std::max(out.train.classes, out.test.classes);
  out.train.classes = classes;
  out.test.classes = classes;
  out.train.name = name;
  out.test.name = name;
  return out;
}

namespace {

// Appends the records of one CIFAR-10 binary batch file, up to `want` more (<= 0: all).
Status readCifarFile(const std::string& path, std::int64_t want, Dataset& out) {
  std::error_code ec;
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (!ec && size % static_cast<std::uintmax_t>(kCifarRecord) != 0) {
    return Status::error(path + ": truncated: " + std::to_string(size) +
                         " bytes is not a whole number of " + std::to_string(kCifarRecord) +
                         "-byte records");
  }
  if (!ec && size == 0) return Status::error(path + ": empty file (no CIFAR-10 records)");

  GzInput in;
  if (Status s = in.open(path); !s) return s;
  std::vector<unsigned char> record(static_cast<std::size_t>(kCifarRecord) * 64);
  std::int64_t index = 0;
  std::string error;
  for (;;) {
    if (want > 0 && index >= want) break;
    std::size_t records = record.size() / static_cast<std::size_t>(kCifarRecord);
    if (want > 0) records = std::min<std::size_t>(records, static_cast<std::size_t>(want - index));
    const std::size_t bytes = records * static_cast<std::size_t>(kCifarRecord);
    const std::size_t got = in.read(record.data(), bytes, error);
    if (!error.empty() && !in.streamCutShort()) {
      return Status::error(path + ": " + error + " after record " + std::to_string(index));
    }
    const std::size_t whole = got / static_cast<std::size_t>(kCifarRecord);
    if (got % static_cast<std::size_t>(kCifarRecord) != 0) {
      return Status::error(path + ": truncated: record " + std::to_string(index + whole) +
                           " has " + std::to_string(got % static_cast<std::size_t>(kCifarRecord)) +
                           " of " + std::to_string(kCifarRecord) + " bytes");
    }
    for (std::size_t r = 0; r < whole; ++r) {
      const unsigned char* rec = record.data() + r * static_cast<std::size_t>(kCifarRecord);
      if (rec[0] >= kCifarClasses) {
        return Status::error(path + ": record " + std::to_string(index) + " has label " +
                             std::to_string(rec[0]) + " (expected 0..9)");
      }
      out.labels.push_back(rec[0]);
      const std::size_t old = out.features.size();
      out.features.resize(old + static_cast<std::size_t>(kCifarPixels));
      float* dst = out.features.data() + old;
      for (std::int64_t k = 0; k < kCifarPixels; ++k) {
        dst[k] = static_cast<float>(rec[1 + k]) / 255.0f;
      }
      ++index;
    }
    if (got < bytes) break;  // end of file
  }
  if (index == 0) return Status::error(path + ": no CIFAR-10 records");
  out.count += index;
  return Status::ok();
}

}  // namespace

Result<TrainTest> loadCifar10(const std::string& directory, std::int64_t trainLimit,
                              std::int64_t testLimit) {
  const std::string expected =
      "expected the CIFAR-10 binary version (data_batch_1.bin .. data_batch_5.bin and "
      "test_batch.bin, from cifar-10-binary.tar.gz); set dataset.path to the directory "
      "that holds them";
  if (!isDirectory(directory)) {
    return Status::error("cifar-10: no data in " + directory + " (directory does not exist); " +
                         expected);
  }
  // The archive unpacks into cifar-10-batches-bin/; accept its parent directory too.
  std::string dir = directory;
  if (!isFile(joinPath(dir, "data_batch_1.bin")) &&
      isFile(joinPath(joinPath(dir, "cifar-10-batches-bin"), "data_batch_1.bin"))) {
    dir = joinPath(dir, "cifar-10-batches-bin");
  }
  std::vector<std::string> trainFiles;
  for (int i = 1; i <= 5; ++i) trainFiles.push_back("data_batch_" + std::to_string(i) + ".bin");
  std::vector<std::string> all = trainFiles;
  all.push_back("test_batch.bin");
  for (const std::string& file : all) {
    if (!isFile(joinPath(dir, file))) {
      return Status::error("cifar-10: no data in " + dir + " (missing " + file + "); " +
                           expected);
    }
  }

  TrainTest out;
  for (Dataset* d : {&out.train, &out.test}) {
    d->name = "cifar-10";
    d->channels = kCifarChannels;
    d->height = kCifarSide;
    d->width = kCifarSide;
    d->classes = kCifarClasses;
  }
  try {
    for (const std::string& file : trainFiles) {
      if (trainLimit > 0 && out.train.count >= trainLimit) break;
      const std::int64_t want = trainLimit > 0 ? trainLimit - out.train.count : 0;
      if (Status s = readCifarFile(joinPath(dir, file), want, out.train); !s) return s;
    }
    if (Status s = readCifarFile(joinPath(dir, "test_batch.bin"), testLimit, out.test); !s) {
      return s;
    }
  } catch (const std::bad_alloc&) {
    return Status::error("cifar-10: out of memory reading " + dir);
  }
  return out;
}

TrainTest makeSynthetic(const SyntheticOptions& options, std::uint64_t seed) {
  const int classes = std::max(1, options.classes);
  const int dimension = std::max(1, options.dimension);
  // Centres ~ N(0, 2 sep^2 / dim) per coordinate, so two centres lie about 2 * separation
  // apart: with unit noise and the default separation 3, about 1 in 700 samples falls
  // nearer a wrong pair-wise centre, so a linear model can reach ~97-99 % but has to learn.
  std::vector<double> centres(static_cast<std::size_t>(classes) *
                              static_cast<std::size_t>(dimension));
  {
    std::mt19937_64 rng(seed);
    Normal normal(rng);
    const double scale = options.separation * std::sqrt(2.0 / dimension);
    for (double& c : centres) c = normal() * scale;
  }
  TrainTest out;
  // Independent streams, so the test set does not depend on trainCount.
  fillSynthetic(out.train, centres, classes, dimension, std::max<std::int64_t>(0, options.trainCount),
                splitmix64(seed ^ 0x747261696eULL));  // "train"
  fillSynthetic(out.test, centres, classes, dimension, std::max<std::int64_t>(0, options.testCount),
                splitmix64(seed ^ 0x74657374ULL));  // "test"
  out.train.name = "synthetic";
  out.test.name = "synthetic";
  return out;
}

void normalize(Dataset& data, const std::vector<float>& mean, const std::vector<float>& stddev) {
  const std::int64_t plane = static_cast<std::int64_t>(data.height) * data.width;
  const int channels = data.channels;
  if (plane <= 0 || channels <= 0) return;
  std::vector<float> m(static_cast<std::size_t>(channels), 0.0f);
  std::vector<float> inv(static_cast<std::size_t>(channels), 1.0f);
  for (int c = 0; c < channels; ++c) {
    if (!mean.empty()) m[c] = mean[std::min<std::size_t>(c, mean.size() - 1)];
    if (!stddev.empty()) {
      const float s = stddev[std::min<std::size_t>(c, stddev.size() - 1)];
      inv[c] = s != 0.0f ? 1.0f / s : 1.0f;
    }
  }
  const std::int64_t sample = plane * channels;
  const std::int64_t samples =
      static_cast<std::int64_t>(data.features.size()) / std::max<std::int64_t>(1, sample);
  for (std::int64_t i = 0; i < samples; ++i) {
    float* x = data.features.data() + i * sample;
    for (int c = 0; c < channels; ++c) {
      const float mc = m[c];
      const float ic = inv[c];
      float* p = x + static_cast<std::int64_t>(c) * plane;
      for (std::int64_t k = 0; k < plane; ++k) p[k] = (p[k] - mc) * ic;
    }
  }
}

namespace {

// The shards of every rank (onlyRank < 0) or of one rank (the others stay empty): the draws
// are the same either way, so shardIndices() and allShards() agree.
std::vector<std::vector<std::int64_t>> shardsOf(const Dataset& data, int worldSize, ShardMode mode, double alpha,
                                               std::uint64_t seed, int onlyRank) {
  std::vector<std::vector<std::int64_t>> shards(static_cast<std::size_t>(std::max(worldSize, 0)));
  const std::int64_t count =
      std::min<std::int64_t>(data.count, static_cast<std::int64_t>(data.labels.size()));
  if (worldSize <= 0 || count <= 0) return shards;

  std::mt19937_64 rng(seed);
  if (mode == ShardMode::Iid) {
    std::vector<std::int64_t> perm(static_cast<std::size_t>(count));
    for (std::int64_t i = 0; i < count; ++i) perm[static_cast<std::size_t>(i)] = i;
    fisherYates(perm, rng);
    const std::int64_t per = count / worldSize;
    for (int r = 0; r < worldSize; ++r) {
      if (onlyRank >= 0 && r != onlyRank) continue;
      auto& mine = shards[static_cast<std::size_t>(r)];
      mine.assign(perm.begin() + r * per, perm.begin() + (r + 1) * per);
      std::sort(mine.begin(), mine.end());
    }
    return shards;
  }

  if (!(alpha > 0.0) || !std::isfinite(alpha)) return shards;
  int classes = std::max(data.classes, 1);
  for (std::int64_t i = 0; i < count; ++i) {
    const std::int64_t label = data.labels[static_cast<std::size_t>(i)];
    if (label >= classes && label < INT_MAX) classes = static_cast<int>(label + 1);
  }
  std::vector<std::vector<std::int64_t>> byClass(static_cast<std::size_t>(classes));
  for (std::int64_t i = 0; i < count; ++i) {
    const std::int64_t label = data.labels[static_cast<std::size_t>(i)];
    const std::size_t c = label < 0 || label >= classes ? 0 : static_cast<std::size_t>(label);
    byClass[c].push_back(i);
  }

  Normal normal(rng);
  std::vector<double> logs(static_cast<std::size_t>(worldSize));
  std::vector<double> weights(static_cast<std::size_t>(worldSize));
  for (std::vector<std::int64_t>& members : byClass) {
    // Proportions ~ Dir(alpha): normalised Gamma(alpha) draws, computed from their logs.
    double top = -std::numeric_limits<double>::infinity();
    for (double& l : logs) {
      l = logGamma(rng, normal, alpha);
      top = std::max(top, l);
    }
    double total = 0.0;
    for (std::size_t w = 0; w < weights.size(); ++w) {
      weights[w] = std::exp(logs[w] - top);
      total += weights[w];
    }
    fisherYates(members, rng);
    const auto n = static_cast<std::int64_t>(members.size());
    double cumulative = 0.0;
    std::int64_t begin = 0;
    for (int w = 0; w < worldSize; ++w) {
      cumulative += weights[static_cast<std::size_t>(w)];
      std::int64_t end = w + 1 == worldSize
                             ? n
                             : static_cast<std::int64_t>(std::floor(cumulative / total *
                                                                    static_cast<double>(n)));
      end = std::clamp<std::int64_t>(end, begin, n);
      if (onlyRank < 0 || w == onlyRank) {
        auto& mine = shards[static_cast<std::size_t>(w)];
        mine.insert(mine.end(), members.begin() + begin, members.begin() + end);
      }
      begin = end;
    }
  }
  for (auto& mine : shards) std::sort(mine.begin(), mine.end());
  return shards;
}

}  // namespace

std::vector<std::vector<std::int64_t>> allShards(const Dataset& data, int worldSize, ShardMode mode, double alpha,
                                                std::uint64_t seed) {
  return shardsOf(data, worldSize, mode, alpha, seed, -1);
}

std::vector<std::int64_t> shardIndices(const Dataset& data, int rank, int worldSize,
                                       ShardMode mode, double alpha, std::uint64_t seed) {
  if (worldSize <= 0 || rank < 0 || rank >= worldSize) return {};
  return std::move(shardsOf(data, worldSize, mode, alpha, seed, rank)[static_cast<std::size_t>(rank)]);
}

ShardBatchOrder::ShardBatchOrder(std::vector<std::int64_t> shard, std::uint64_t seed)
    : m_order(std::move(shard)), m_seed(seed) {
  reshuffle();
}

void ShardBatchOrder::reshuffle() {
  std::mt19937_64 rng(m_seed * 0x9E3779B97F4A7C15ULL + m_epoch);
  for (std::size_t i = m_order.size(); i > 1; --i) {
    const auto j = static_cast<std::size_t>(rng() % i);
    std::swap(m_order[i - 1], m_order[j]);
  }
  m_cursor = 0;
}

const std::int64_t* ShardBatchOrder::next(std::size_t batch) {
  if (m_cursor + batch > m_order.size()) {
    ++m_epoch;
    reshuffle();
  }
  const std::int64_t* indices = m_order.data() + m_cursor;
  m_cursor += batch;
  return indices;
}

}  // namespace dasp
