// SPDX-License-Identifier: MIT
#include "net/transport/shared_region.h"

#include "net/transport/doorbell.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>

namespace dasp::net {
namespace {

constexpr std::uint64_t kMagic = 0x3130'6d68'7370'7364ull;  // "dspshm01"
// The header fills the first page, the doorbell block the pages after it; each slot
// starts on a page (and so a cache line).
constexpr std::size_t kPage = 4096;
constexpr std::size_t kDoorbellBytes = (sizeof(DoorbellBlock) + kPage - 1) / kPage * kPage;
// Liveness: each side holds an open-file-description lock on one byte of the file for as
// long as it has the region; the kernel drops it when that process ends, however it ends.
constexpr off_t kServerByte = 0;
constexpr off_t kWorkerByte = 1;

struct Header {
  std::uint64_t magic;
  unsigned char nonce[16];
  std::int64_t count;
};
static_assert(sizeof(Header) <= kPage && SharedRegion::kDoorbellOffset == kPage);

std::size_t slotBytes(std::int64_t count) {
  const std::size_t bytes = static_cast<std::size_t>(count) * sizeof(float);
  return (bytes + kPage - 1) / kPage * kPage;
}

std::size_t regionBytes(std::int64_t count) { return kPage + kDoorbellBytes + 2 * slotBytes(count); }

// A write lock on the one byte `byte`.
struct flock byteLock(off_t byte) {
  struct flock lock {};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;
  lock.l_start = byte;
  lock.l_len = 1;
  return lock;
}

// An exclusive OFD lock on `byte` of `fd` (never waits): false when another holds it.
bool lockByte(int fd, off_t byte) {
  struct flock lock = byteLock(byte);
  return ::fcntl(fd, F_OFD_SETLK, &lock) == 0;
}

// Somebody (another open file description) holds a lock on `byte`.
bool byteLocked(int fd, off_t byte) {
  struct flock lock = byteLock(byte);
  if (::fcntl(fd, F_OFD_GETLK, &lock) != 0) return true;  // cannot tell: assume alive
  return lock.l_type != F_UNLCK;
}

std::string errnoText(const std::string& what, const std::string& path) {
  return what + " " + path + ": " + std::strerror(errno);
}

// Maps `bytes` of `fd` shared, its pages made present at once: a page first touched
// during a push would cost a fault each (~11 µs), every one of them on the first iteration.
void* mapShared(int fd, std::size_t bytes) {
  void* base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  return base == MAP_FAILED ? nullptr : base;
}

}  // namespace

SharedRegion::SharedRegion(std::string path, int fd, void* base, std::size_t bytes, std::int64_t count, bool linked)
    : m_path(std::move(path)), m_fd(fd), m_base(base), m_bytes(bytes), m_count(count), m_linked(linked), m_server(linked) {
  auto* bytesBase = static_cast<unsigned char*>(base);
  m_doorbell = reinterpret_cast<DoorbellBlock*>(bytesBase + kPage);
  m_gradient = reinterpret_cast<float*>(bytesBase + kPage + kDoorbellBytes);
  m_parameters = reinterpret_cast<float*>(bytesBase + kPage + kDoorbellBytes + slotBytes(count));
}

SharedRegion::~SharedRegion() {
  unlinkFile();
  if (m_base != nullptr) ::munmap(m_base, m_bytes);
  if (m_fd >= 0) ::close(m_fd);  // drops this side's liveness lock
}

bool SharedRegion::peerAlive() const { return byteLocked(m_fd, m_server ? kWorkerByte : kServerByte); }

void SharedRegion::unlinkFile() {
  if (!m_linked) return;
  m_linked = false;
  ::unlink(m_path.c_str());  // ENOENT: the worker removed it (or the runner the directory)
}

std::string SharedRegion::nonce() const {
  const auto* header = static_cast<const Header*>(m_base);
  return std::string(reinterpret_cast<const char*>(header->nonce), sizeof header->nonce);
}

Result<std::unique_ptr<SharedRegion>> SharedRegion::create(const std::string& directory, const std::string& name,
                                                           std::int64_t parameterCount) {
  if (parameterCount <= 0) return Status::error("shared memory: no parameters to share");
  Header header{};
  header.magic = kMagic;
  header.count = parameterCount;
  if (::getrandom(header.nonce, sizeof header.nonce, 0) != static_cast<ssize_t>(sizeof header.nonce)) {
    return Status::error(std::string("shared memory: no random bytes for the nonce: ") + std::strerror(errno));
  }
  const std::string path = directory + "/shm-" + name;
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return Status::error(errnoText("shared memory: cannot create", path));
  const std::size_t bytes = regionBytes(parameterCount);
  void* base = nullptr;
  std::string failure;
  if (::fchmod(fd, 0600) != 0) {
    failure = errnoText("shared memory: cannot set mode 0600 on", path);
  } else if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    failure = errnoText("shared memory: cannot size", path);
  } else if (!lockByte(fd, kServerByte)) {
    failure = errnoText("shared memory: cannot lock", path);
  } else if ((base = mapShared(fd, bytes)) == nullptr) {
    failure = errnoText("shared memory: cannot map", path);
  }
  if (!failure.empty()) {
    ::close(fd);
    ::unlink(path.c_str());
    return Status::error(failure);
  }
  std::memcpy(base, &header, sizeof header);
  new (static_cast<unsigned char*>(base) + kPage) DoorbellBlock();  // the file's zeros, as the type
  return std::unique_ptr<SharedRegion>(new SharedRegion(path, fd, base, bytes, parameterCount, true));
}

Result<std::unique_ptr<SharedRegion>> SharedRegion::attach(const std::string& path, const std::string& nonce,
                                                           std::int64_t parameterCount) {
  if (nonce.size() != sizeof(Header::nonce)) return Status::error("shared memory: the join reply's nonce is malformed");
  const int fd = ::open(path.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return Status::error(errnoText("shared memory: cannot open", path));
  struct stat st {};
  const std::size_t bytes = regionBytes(parameterCount);
  std::string failure;
  void* base = nullptr;
  if (::fstat(fd, &st) != 0) {
    failure = errnoText("shared memory: cannot stat", path);
  } else if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 0777) != 0600) {
    failure = "shared memory: " + path + " is not a regular file of this user with mode 0600";
  } else if (static_cast<std::size_t>(st.st_size) != bytes) {
    failure = "shared memory: " + path + " has " + std::to_string(st.st_size) + " bytes, " +
              std::to_string(parameterCount) + " parameters need " + std::to_string(bytes);
  } else if (!lockByte(fd, kWorkerByte)) {
    failure = "shared memory: " + path + " is already attached by another worker";
  } else if ((base = mapShared(fd, bytes)) == nullptr) {
    failure = errnoText("shared memory: cannot map", path);
  }
  if (failure.empty()) {
    const auto* header = static_cast<const Header*>(base);
    if (header->magic != kMagic || header->count != parameterCount ||
        std::memcmp(header->nonce, nonce.data(), sizeof header->nonce) != 0) {
      failure = "shared memory: " + path + " is not the region the server offered (its header differs)";
      ::munmap(base, bytes);
    }
  }
  if (!failure.empty()) {
    ::close(fd);
    return Status::error(failure);
  }
  ::unlink(path.c_str());  // both sides have it mapped: nothing is left behind on any exit
  return std::unique_ptr<SharedRegion>(new SharedRegion(path, fd, base, bytes, parameterCount, false));
}

}  // namespace dasp::net
