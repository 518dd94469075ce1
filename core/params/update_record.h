// SPDX-License-Identifier: MIT
#pragma once
// Update records: an audit trail of a run's parameters, off unless asked for
// (`dasp run --record DIR`). A server writes every state it comes to hold (its start, a
// restore, a replica's catch-up, its end) and every update it applies, exactly as applied
// (the combined gradient Σ w·g and the learning rate, so that ParameterStore::apply with
// weight 1 replays it bitwise); a worker writes every gradient whose push was acknowledged,
// with the version the reply vouched for, and every push whose fate it never learned (in
// flight when a server failed, or answered with stop). A stateless worker's backlog flush
// is not written by the worker: the server records the backlog as the one update it makes.
// With these, a test replays a run's history and compares it with what the servers hold.
//
// File: records back to back, each written with one writev() so that a process killed at
// any moment leaves whole records (a torn last record is dropped by the reader):
//   offset  size      field
//   0       4         uint32 magic "DUR1"
//   4       4         uint32 kind (UpdateRecordKind)
//   8       8         int64  version
//   16      8         double learning rate (updates), else 0
//   24      8         uint64 count of float32 values that follow
//   32      4·count   float32 values (little-endian, as in memory)
// Threading: a writer is not thread-safe (the server writes under its lock, a worker from
// its one thread); reading is a plain function.

#include "core/common/result.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace dasp {

enum class UpdateRecordKind : std::uint32_t {
  Initial = 1,   // server start: parameters, momentum (count 2n); version 0 or resumed
  State = 2,     // server: whole state taken over (replica catch-up, checkpoint restore,
                 // stateless adoption): parameters, momentum (2n) at `version`
  Update = 3,    // server: one applied update: the combined gradient (n), lr; `version` after it
  Final = 4,     // server at a clean shutdown: parameters, momentum (2n) at `version`
  Acked = 5,     // worker: a pushed gradient (n); `version` = the acknowledged version of the reply
  InFlight = 6,  // worker: a pushed gradient never acknowledged (a failed server, a stop) (n);
                 // `version` = its base version
};

struct UpdateRecord {
  UpdateRecordKind kind = UpdateRecordKind::Update;
  std::int64_t version = 0;
  double lr = 0;
  std::vector<float> values;
};

class UpdateRecordWriter {
 public:
  // Creates (or appends to) `path`.
  static Result<std::unique_ptr<UpdateRecordWriter>> open(const std::string& path);
  ~UpdateRecordWriter();
  UpdateRecordWriter(const UpdateRecordWriter&) = delete;
  UpdateRecordWriter& operator=(const UpdateRecordWriter&) = delete;

  // One record of `a` (na floats) followed by `b` (nb floats, may be null).
  Status write(UpdateRecordKind kind, std::int64_t version, double lr, const float* a, std::size_t na,
               const float* b = nullptr, std::size_t nb = 0);
  const std::string& path() const { return m_path; }

 private:
  UpdateRecordWriter(int fd, std::string path) : m_fd(fd), m_path(std::move(path)) {}
  int m_fd;
  std::string m_path;
};

// Every whole record of `path`, in order; `torn` (may be null) is set when the file ends
// inside a record (a process killed while writing it). A bad magic is an error.
Result<std::vector<UpdateRecord>> readUpdateRecords(const std::string& path, bool* torn = nullptr);

}  // namespace dasp
