// SPDX-License-Identifier: MIT
#include "core/params/update_record.h"

#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

namespace dasp {
namespace {

constexpr std::uint32_t kMagic = 0x31525544;  // "DUR1" little-endian
constexpr std::size_t kHeaderBytes = 32;

struct Header {
  std::uint32_t magic;
  std::uint32_t kind;
  std::int64_t version;
  double lr;
  std::uint64_t count;
};
static_assert(sizeof(Header) == kHeaderBytes, "the record header is 32 bytes");

}  // namespace

Result<std::unique_ptr<UpdateRecordWriter>> UpdateRecordWriter::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return Status::error("cannot open the update record " + path + ": " + std::strerror(errno));
  return std::unique_ptr<UpdateRecordWriter>(new UpdateRecordWriter(fd, path));
}

UpdateRecordWriter::~UpdateRecordWriter() { ::close(m_fd); }

Status UpdateRecordWriter::write(UpdateRecordKind kind, std::int64_t version, double lr, const float* a,
                                 std::size_t na, const float* b, std::size_t nb) {
  Header h{kMagic, static_cast<std::uint32_t>(kind), version, lr, static_cast<std::uint64_t>(na + nb)};
  iovec parts[3] = {{&h, sizeof h}, {const_cast<float*>(a), na * sizeof(float)}, {const_cast<float*>(b), nb * sizeof(float)}};
  const int count = b != nullptr && nb > 0 ? 3 : 2;
  std::size_t total = 0;
  for (int i = 0; i < count; ++i) total += parts[i].iov_len;
  const ssize_t written = ::writev(m_fd, parts, count);
  if (written < 0) return Status::error("writing the update record " + m_path + ": " + std::strerror(errno));
  if (static_cast<std::size_t>(written) != total) {
    return Status::error("writing the update record " + m_path + ": wrote " + std::to_string(written) + " of " +
                         std::to_string(total) + " bytes");
  }
  return Status::ok();
}

Result<std::vector<UpdateRecord>> readUpdateRecords(const std::string& path, bool* torn) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::error("cannot read the update record " + path);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (torn) *torn = false;
  std::vector<UpdateRecord> out;
  std::size_t at = 0;
  while (at < bytes.size()) {
    if (bytes.size() - at < kHeaderBytes) {
      if (torn) *torn = true;
      break;
    }
    Header h;
    std::memcpy(&h, bytes.data() + at, sizeof h);
    if (h.magic != kMagic) {
      return Status::error(path + ": no update record at byte " + std::to_string(at) + " (bad magic)");
    }
    const std::uint64_t payload = h.count * sizeof(float);
    if (bytes.size() - at - kHeaderBytes < payload) {
      if (torn) *torn = true;
      break;
    }
    UpdateRecord r;
    r.kind = static_cast<UpdateRecordKind>(h.kind);
    r.version = h.version;
    r.lr = h.lr;
    r.values.resize(static_cast<std::size_t>(h.count));
    std::memcpy(r.values.data(), bytes.data() + at + kHeaderBytes, static_cast<std::size_t>(payload));
    out.push_back(std::move(r));
    at += kHeaderBytes + static_cast<std::size_t>(payload);
  }
  return out;
}

}  // namespace dasp
