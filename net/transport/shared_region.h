// SPDX-License-Identifier: MIT
#pragma once
// SharedRegion: the memory one worker and the parameter server both map, so that the
// worker's gradient and the parameters it pulls need not travel in gRPC messages (the
// SHM transport: gRPC over the Unix socket carries only the control messages).
//
// The server creates the region (create()) when a worker on its host joins asking for it:
// a file in the run's private directory, created 0600 with O_EXCL, holding a header (a
// magic number, 16 random bytes — the nonce — and the parameter count) then two slots of
// parameterCount floats, the gradient's and the parameters'. The join reply names the file
// and the nonce; the worker maps it (attach()), checks that the header holds that nonce
// and count (so it shares memory with this server, not a stale or foreign file) and
// removes the file: from then on the memory lives only as long as the two mappings, so no
// exit path of either process leaves it behind. The server removes a file no worker
// attached when it shuts down; the runner removes the run's directory in any case.
// Each side keeps the file open with a lock on a byte of its own, which the kernel drops
// when that process ends however it ends: peerAlive() tells whether the other side still
// holds the region (a killed server, a killed worker), without any message.
//
// Protocol: a worker has one call in flight. It writes its gradient into the gradient slot
// before a push (PushRequest.gradient_in_shm); the server reads it there while it handles
// the push, and writes the parameters into the parameter slot when it answers the pull
// (PullReply.parameters_in_shm), which the worker reads before its next call. So each side
// only touches a slot while the other waits for it. The PushPull call itself may go
// through the doorbell block instead of gRPC (doorbell.h), with the same slots.
//
// Threading: the object is immutable after construction; callers keep to the protocol.

#include "core/common/result.h"
#include "net/transport/doorbell.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace dasp::net {

class SharedRegion {
 public:
  using Nonce = std::array<unsigned char, 16>;
  // Where the doorbell block starts in the file (after the header's page).
  static constexpr std::size_t kDoorbellOffset = 4096;

  // A new region for `parameterCount` floats in `directory` (which must exist), in the
  // file "shm-<name>" (a name no other region of the server has: e.g. "rank-3-join-2");
  // a fresh nonce.
  static Result<std::unique_ptr<SharedRegion>> create(const std::string& directory, const std::string& name,
                                                      std::int64_t parameterCount);
  // The worker's side: maps `path` if it is a regular file of this user, mode 0600, of
  // the size `parameterCount` needs, whose header holds `nonce`; then removes the file.
  static Result<std::unique_ptr<SharedRegion>> attach(const std::string& path, const std::string& nonce,
                                                      std::int64_t parameterCount);
  ~SharedRegion();
  SharedRegion(const SharedRegion&) = delete;
  SharedRegion& operator=(const SharedRegion&) = delete;

  const std::string& path() const { return m_path; }
  std::string nonce() const;  // the 16 bytes, as the join reply carries them
  std::int64_t parameterCount() const { return m_count; }
  float* gradient() const { return m_gradient; }
  float* parameters() const { return m_parameters; }
  DoorbellBlock* doorbell() const { return m_doorbell; }
  // The other side (the worker, for the server's region; the server, for the worker's)
  // still has the region: its process lives and has not let go of it.
  bool peerAlive() const;
  // The server: removes the file if it is still there (no worker attached). Idempotent.
  void unlinkFile();

 private:
  SharedRegion(std::string path, int fd, void* base, std::size_t bytes, std::int64_t count, bool linked);
  std::string m_path;
  int m_fd = -1;  // kept open: it holds this side's liveness lock
  void* m_base = nullptr;
  std::size_t m_bytes = 0;
  std::int64_t m_count = 0;
  float* m_gradient = nullptr;
  float* m_parameters = nullptr;
  DoorbellBlock* m_doorbell = nullptr;
  bool m_linked = false;  // the file still has its name (server side, before an attach)
  bool m_server = false;  // made by create()
};

}  // namespace dasp::net
