// SPDX-License-Identifier: MIT
// CheckpointDirectory over POSIX file calls and zlib's crc32. See core/params/checkpoint.h for the
// file format and the durability steps.

#include "core/params/checkpoint.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <limits>
#include <utility>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

namespace dasp {

static_assert(sizeof(float) == 4 && std::numeric_limits<float>::is_iec559,
              "checkpoints store IEEE-754 binary32 floats");
static_assert(sizeof(double) == 8 && std::numeric_limits<double>::is_iec559,
              "checkpoints store an IEEE-754 binary64 run time");
#if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__)
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the checkpoint format is little-endian as in memory");
#endif

namespace {

constexpr char kMagic[8] = {'D', 'A', 'S', 'P', 'C', 'K', 'P', '1'};
constexpr std::uint32_t kFormatVersion = 1;
// magic, format, version, run time, name length.
constexpr std::size_t kPrefixBytes = 8 + 4 + 8 + 8 + 4;
constexpr std::size_t kCountBytes = 8;
constexpr std::size_t kCrcBytes = 4;
constexpr const char* kFilePrefix = "ckpt-";
constexpr const char* kFileSuffix = ".dasp";
constexpr const char* kTempPrefix = ".ckpt-";
constexpr const char* kTempSuffix = ".tmp";

std::string errnoText(int err) { return std::strerror(err); }

bool endsWith(const std::string& s, const char* suffix) {
  const std::size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

bool startsWith(const std::string& s, const char* prefix) {
  const std::size_t n = std::strlen(prefix);
  return s.size() >= n && s.compare(0, n, prefix) == 0;
}

// "ckpt-000000000300.dasp" → 300; -1 for any other name.
std::int64_t versionFromName(const std::string& name) {
  if (!startsWith(name, kFilePrefix) || !endsWith(name, kFileSuffix)) return -1;
  const std::size_t begin = std::strlen(kFilePrefix);
  const std::size_t end = name.size() - std::strlen(kFileSuffix);
  if (end <= begin || end - begin > 18) return -1;  // 18 digits cannot overflow int64
  std::int64_t value = 0;
  for (std::size_t i = begin; i < end; ++i) {
    if (name[i] < '0' || name[i] > '9') return -1;
    value = value * 10 + (name[i] - '0');
  }
  return value;
}

// crc32() takes a 32-bit length; feed it in chunks.
uLong crcUpdate(uLong crc, const void* data, std::size_t bytes) {
  const auto* p = static_cast<const Bytef*>(data);
  constexpr std::size_t kChunk = std::size_t(1) << 30;
  while (bytes > 0) {
    const std::size_t n = std::min(bytes, kChunk);
    crc = crc32(crc, p, static_cast<uInt>(n));
    p += n;
    bytes -= n;
  }
  return crc;
}

// Writes all `bytes` (looping on partial writes and EINTR), folding them into `crc` when
// given; adds what was written to `*written`. Returns 0 or the errno.
int writeAll(int fd, const void* data, std::size_t bytes, uLong* crc, std::uint64_t* written) {
  if (crc) *crc = crcUpdate(*crc, data, bytes);
  const auto* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::write(fd, p, bytes);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return EIO;  // a regular file never accepts nothing without an error
    p += n;
    bytes -= static_cast<std::size_t>(n);
    *written += static_cast<std::uint64_t>(n);
  }
  return 0;
}

// Reads exactly `bytes`; returns 0, the errno, or -1 at an unexpected end of file.
int readAll(int fd, void* data, std::size_t bytes) {
  auto* p = static_cast<char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::read(fd, p, bytes);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return -1;
    p += n;
    bytes -= static_cast<std::size_t>(n);
  }
  return 0;
}

int closeFd(int fd) {
  // Linux releases the descriptor even when close() fails with EINTR: never retry.
  return ::close(fd) == 0 ? 0 : errno;
}

// Fsyncs a directory so a rename or an unlink in it survives a crash. Filesystems that
// cannot sync a directory (EINVAL) have nothing more to do.
int syncDirectory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return errno;
  int err = 0;
  while (::fsync(fd) != 0) {
    if (errno == EINTR) continue;
    if (errno != EINVAL) err = errno;
    break;
  }
  closeFd(fd);
  return err;
}

// Names in `dir` (empty when it cannot be read); `err` gets the errno of opendir.
std::vector<std::string> listNames(const std::string& dir, int* err = nullptr) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  if (!d) {
    if (err) *err = errno;
    return names;
  }
  if (err) *err = 0;
  while (const dirent* entry = ::readdir(d)) names.emplace_back(entry->d_name);
  ::closedir(d);
  return names;
}

std::string joinPath(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  if (dir.back() == '/') return dir + name;
  return dir + "/" + name;
}

template <typename T>
T readField(const unsigned char* p) {
  T value;
  std::memcpy(&value, p, sizeof(T));
  return value;
}

template <typename T>
unsigned char* putField(unsigned char* p, T value) {
  std::memcpy(p, &value, sizeof(T));
  return p + sizeof(T);
}

}  // namespace

CheckpointDirectory::CheckpointDirectory(std::string dir, int keep)
    : m_dir(std::move(dir)), m_keep(std::max(1, keep)) {}

std::string CheckpointDirectory::pathFor(std::int64_t version) const {
  char name[48];
  std::snprintf(name, sizeof name, "%s%012" PRId64 "%s", kFilePrefix, version, kFileSuffix);
  return joinPath(m_dir, name);
}

Status CheckpointDirectory::prepare() {
  if (m_dir.empty()) return Status::error("checkpoint directory: the path is empty");
  // mkdir -p: every prefix ending before a '/', then the whole path.
  for (std::size_t pos = 1; pos <= m_dir.size(); ++pos) {
    if (pos < m_dir.size() && m_dir[pos] != '/') continue;
    const std::string prefix = m_dir.substr(0, pos);
    if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) {
      return Status::error("checkpoint directory " + m_dir + ": cannot create " + prefix + ": " +
                           errnoText(errno));
    }
  }
  struct stat st {};
  if (::stat(m_dir.c_str(), &st) != 0) {
    return Status::error("checkpoint directory " + m_dir + ": " + errnoText(errno));
  }
  if (!S_ISDIR(st.st_mode)) {
    return Status::error("checkpoint directory " + m_dir + ": exists and is not a directory");
  }
  // Temp files of a writer that died half-way hold disk space and nothing else.
  for (const std::string& name : listNames(m_dir)) {
    if (startsWith(name, kTempPrefix) && endsWith(name, kTempSuffix)) {
      ::unlink(joinPath(m_dir, name).c_str());
    }
  }
  return Status::ok();
}

std::vector<std::int64_t> CheckpointDirectory::versions() const {
  std::vector<std::int64_t> out;
  for (const std::string& name : listNames(m_dir)) {
    const std::int64_t v = versionFromName(name);
    if (v >= 0) out.push_back(v);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Status CheckpointDirectory::write(std::int64_t version, double runTimeS, const std::string& model,
                                  const float* parameters, const float* momentum,
                                  std::int64_t count) {
  const std::string finalPath = pathFor(version);
  if (version < 0) {
    return Status::error("checkpoint " + finalPath + ": version " + std::to_string(version) +
                         " is negative");
  }
  if (count < 0 || (count > 0 && (!parameters || !momentum))) {
    return Status::error("checkpoint " + finalPath + ": bad buffers (count " +
                         std::to_string(count) + ")");
  }
  if (model.size() > std::numeric_limits<std::uint32_t>::max()) {
    return Status::error("checkpoint " + finalPath + ": model name too long");
  }
  const std::string tempPath = joinPath(m_dir, kTempPrefix + std::to_string(version) + kTempSuffix);

  // The sentence that ends every failure: what the caller still has on disk.
  auto previousNote = [this]() {
    const std::vector<std::int64_t> present = versions();
    if (present.empty()) return std::string("; no previous checkpoint exists");
    return "; the previous checkpoint (version " + std::to_string(present.back()) + ") is kept";
  };
  auto fail = [&](const std::string& what) {
    ::unlink(tempPath.c_str());
    return Status::error("checkpoint " + tempPath + ": " + what + previousNote());
  };

  const int fd = ::open(tempPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int err = errno;
    return Status::error("checkpoint " + tempPath + ": cannot create: " + errnoText(err) +
                         previousNote());
  }

  const std::size_t arrayBytes = static_cast<std::size_t>(count) * sizeof(float);
  const std::uint64_t totalBytes = kPrefixBytes + model.size() + kCountBytes + 2 * arrayBytes +
                                   kCrcBytes;
  std::uint64_t written = 0;
  uLong crc = crc32(0L, Z_NULL, 0);
  unsigned char prefix[kPrefixBytes];
  unsigned char* p = prefix;
  std::memcpy(p, kMagic, sizeof kMagic);
  p += sizeof kMagic;
  p = putField<std::uint32_t>(p, kFormatVersion);
  p = putField<std::int64_t>(p, version);
  p = putField<double>(p, runTimeS);
  putField<std::uint32_t>(p, static_cast<std::uint32_t>(model.size()));
  unsigned char countField[kCountBytes];
  putField<std::int64_t>(countField, count);

  int err = writeAll(fd, prefix, sizeof prefix, &crc, &written);
  if (err == 0) err = writeAll(fd, model.data(), model.size(), &crc, &written);
  if (err == 0) err = writeAll(fd, countField, sizeof countField, &crc, &written);
  if (err == 0) err = writeAll(fd, parameters, arrayBytes, &crc, &written);
  if (err == 0) err = writeAll(fd, momentum, arrayBytes, &crc, &written);
  if (err == 0) {
    unsigned char crcField[kCrcBytes];
    putField<std::uint32_t>(crcField, static_cast<std::uint32_t>(crc));
    err = writeAll(fd, crcField, sizeof crcField, nullptr, &written);
  }
  if (err != 0) {
    closeFd(fd);
    return fail("write failed: " + errnoText(err) + " (wrote " + std::to_string(written) +
                " of " + std::to_string(totalBytes) + " bytes)");
  }
  while (::fsync(fd) != 0) {
    if (errno == EINTR) continue;
    err = errno;
    closeFd(fd);
    return fail("fsync failed: " + errnoText(err));
  }
  if ((err = closeFd(fd)) != 0) return fail("close failed: " + errnoText(err));
  if (::rename(tempPath.c_str(), finalPath.c_str()) != 0) {
    err = errno;
    return fail("rename to " + finalPath + " failed: " + errnoText(err));
  }
  if ((err = syncDirectory(m_dir)) != 0) {
    // The new file is complete and in place; only its directory entry may not survive a
    // power cut. Nothing is pruned, so the older checkpoints stay as well.
    return Status::error("checkpoint " + finalPath + ": written, but syncing directory " + m_dir +
                         " failed: " + errnoText(err) + "; older checkpoints are kept");
  }

  // Keep the file just written plus the newest keep-1 others.
  std::vector<std::int64_t> others = versions();
  others.erase(std::remove(others.begin(), others.end(), version), others.end());
  const std::size_t keepOthers = static_cast<std::size_t>(m_keep - 1);
  if (others.size() > keepOthers) {
    const std::size_t drop = others.size() - keepOthers;
    for (std::size_t i = 0; i < drop; ++i) ::unlink(pathFor(others[i]).c_str());
    syncDirectory(m_dir);  // best effort: a pruned file that comes back is harmless
  }
  return Status::ok();
}

Result<CheckpointData> CheckpointDirectory::readFile(const std::string& path,
                                                     const std::string& expectModel,
                                                     std::int64_t expectCount) {
  auto bad = [&](const std::string& what) { return Status::error(path + ": " + what); };
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return bad("cannot open: " + errnoText(errno));
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};

  struct stat st {};
  if (::fstat(fd, &st) != 0) return bad("cannot stat: " + errnoText(errno));
  if (!S_ISREG(st.st_mode)) return bad("not a regular file");
  const std::uint64_t size = static_cast<std::uint64_t>(st.st_size);
  auto torn = [&](std::uint64_t expected) {
    return bad("truncated (torn write): " + std::to_string(size) + " bytes, the header says " +
               std::to_string(expected));
  };
  auto readError = [&](int err) {
    return bad(err < 0 ? std::string("file shrank while being read")
                       : "read failed: " + errnoText(err));
  };

  unsigned char prefix[kPrefixBytes];
  if (size < sizeof kMagic) {
    return bad("truncated (torn write): " + std::to_string(size) + " bytes, shorter than the magic");
  }
  const std::size_t prefixRead = static_cast<std::size_t>(std::min<std::uint64_t>(size, kPrefixBytes));
  if (int err = readAll(fd, prefix, prefixRead)) return readError(err);
  if (std::memcmp(prefix, kMagic, sizeof kMagic) != 0) {
    return bad("bad magic (not a DASPCKP1 checkpoint)");
  }
  if (size < kPrefixBytes) {
    return bad("truncated (torn write): " + std::to_string(size) + " bytes, shorter than the header");
  }
  uLong crc = crcUpdate(crc32(0L, Z_NULL, 0), prefix, sizeof prefix);
  const auto format = readField<std::uint32_t>(prefix + 8);
  if (format != kFormatVersion) {
    return bad("unsupported format version " + std::to_string(format));
  }
  CheckpointData data;
  data.path = path;
  data.version = readField<std::int64_t>(prefix + 12);
  data.runTimeS = readField<double>(prefix + 20);
  const std::uint64_t nameLength = readField<std::uint32_t>(prefix + 28);
  const std::uint64_t minimum = kPrefixBytes + nameLength + kCountBytes + kCrcBytes;
  if (size < minimum) return torn(minimum);
  data.model.resize(static_cast<std::size_t>(nameLength));
  if (int err = readAll(fd, data.model.data(), data.model.size())) return readError(err);
  crc = crcUpdate(crc, data.model.data(), data.model.size());
  unsigned char countField[kCountBytes];
  if (int err = readAll(fd, countField, sizeof countField)) return readError(err);
  crc = crcUpdate(crc, countField, sizeof countField);
  const auto count = readField<std::int64_t>(countField);
  if (count < 0) return bad("bad parameter count " + std::to_string(count));
  // The count is checked against the size before anything that large is allocated.
  if (static_cast<std::uint64_t>(count) > (size - minimum) / (2 * sizeof(float))) {
    const std::uint64_t c = static_cast<std::uint64_t>(count);
    const std::uint64_t expected =
        c > (std::numeric_limits<std::uint64_t>::max() - minimum) / 8 ? std::numeric_limits<std::uint64_t>::max()
                                                                      : minimum + 8 * c;
    return torn(expected);
  }
  const std::uint64_t expected = minimum + 2 * sizeof(float) * static_cast<std::uint64_t>(count);
  if (size != expected) {
    return bad("size " + std::to_string(size) + " bytes, the header says " +
               std::to_string(expected) + " (trailing data)");
  }

  const std::size_t n = static_cast<std::size_t>(count);
  data.parameters.resize(n);
  data.momentum.resize(n);
  if (int err = readAll(fd, data.parameters.data(), n * sizeof(float))) return readError(err);
  crc = crcUpdate(crc, data.parameters.data(), n * sizeof(float));
  if (int err = readAll(fd, data.momentum.data(), n * sizeof(float))) return readError(err);
  crc = crcUpdate(crc, data.momentum.data(), n * sizeof(float));
  unsigned char crcField[kCrcBytes];
  if (int err = readAll(fd, crcField, sizeof crcField)) return readError(err);
  const auto stored = readField<std::uint32_t>(crcField);
  if (stored != static_cast<std::uint32_t>(crc)) {
    char text[80];
    std::snprintf(text, sizeof text, "CRC mismatch (stored %08x, computed %08x): corrupt",
                  static_cast<unsigned>(stored), static_cast<unsigned>(crc));
    return bad(text);
  }

  if (!expectModel.empty() && data.model != expectModel) {
    return bad("model mismatch: the checkpoint is of model '" + data.model + "', expected '" +
               expectModel + "'");
  }
  if (expectCount >= 0 && count != expectCount) {
    return bad("count mismatch: the checkpoint holds " + std::to_string(count) +
               " parameters, expected " + std::to_string(expectCount));
  }
  return data;
}

Result<CheckpointData> CheckpointDirectory::loadLatest(std::vector<std::string>* skipped,
                                                       const std::string& expectModel,
                                                       std::int64_t expectCount) const {
  int listErr = 0;
  listNames(m_dir, &listErr);
  if (listErr != 0) {
    return Status::error("no valid checkpoint in " + m_dir + " (cannot read the directory: " +
                         errnoText(listErr) + ")");
  }
  const std::vector<std::int64_t> present = versions();
  std::vector<std::string> problems;
  for (auto it = present.rbegin(); it != present.rend(); ++it) {
    auto data = readFile(pathFor(*it), expectModel, expectCount);
    if (data.isOk()) {
      if (skipped) skipped->insert(skipped->end(), problems.begin(), problems.end());
      return data;
    }
    problems.push_back(data.message());
  }
  if (skipped) skipped->insert(skipped->end(), problems.begin(), problems.end());
  if (present.empty()) {
    return Status::error("no valid checkpoint in " + m_dir + " (no checkpoint files)");
  }
  std::string reasons;
  for (const std::string& line : problems) reasons += (reasons.empty() ? "" : "; ") + line;
  return Status::error("no valid checkpoint in " + m_dir + " (" + std::to_string(present.size()) +
                       " file" + (present.size() == 1 ? "" : "s") + " skipped: " + reasons + ")");
}

}  // namespace dasp
