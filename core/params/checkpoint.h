// SPDX-License-Identifier: MIT
#pragma once
// Durable parameter-server checkpoints: the flat parameters, the momentum buffer and the
// version, written so that a crash, a power cut or a full disk never leaves the run without
// a readable checkpoint.
//
// File "<dir>/ckpt-<version, zero-padded to 12 digits>.dasp", all fields little-endian and
// unaligned, exactly as in memory (the format is only read back on the same kind of host):
//   offset       size     field
//   0            8        magic "DASPCKP1"
//   8            4        uint32 format version (1)
//   12           8        int64  parameter-server version (updates applied)
//   20           8        double run time in seconds when it was taken
//   28           4        uint32 model name length L
//   32           L        model name bytes (no terminator)
//   32+L         8        int64  count (number of parameters)
//   40+L         4·count  float32 parameters
//   40+L+4·count 4·count  float32 momentum
//   40+L+8·count 4        uint32 CRC-32 (zlib crc32) over every preceding byte
// so a file is exactly 44 + L + 8·count bytes.
//
// Writing: "<dir>/.ckpt-<version>.tmp" is written (header from a small buffer, then the two
// arrays straight from the caller's memory, the CRC computed as it goes), fsync'ed, closed,
// renamed over the final name, then the directory is fsync'ed. A failure at any step removes
// the temp file and leaves the earlier checkpoints as they were.

#include "core/common/result.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dasp {

// One checkpoint as read back.
struct CheckpointData {
  std::int64_t version = 0;     // parameter-server version (updates applied)
  double runTimeS = 0;          // run time when it was taken
  std::string model;            // model name, checked on restore
  std::vector<float> parameters;
  std::vector<float> momentum;  // same size as parameters
  std::string path;             // file it came from
};

// CheckpointDirectory: the checkpoint files of one run in one directory — writes new
// checkpoints durably, keeps the newest `keep` of them, and finds the newest one that reads
// back intact when the server restarts (skipping torn or corrupt files with a reason).
// Threading: not thread-safe, and holds no state besides its settings; the server calls
// write() from one background writer thread and loadLatest() before it starts serving,
// never both at once. Nothing throws or aborts: failures come back as Status/Result.
class CheckpointDirectory {
 public:
  // `keep`: how many checkpoint files to keep (values below 1 count as 1).
  CheckpointDirectory(std::string dir, int keep);

  const std::string& dir() const { return m_dir; }
  int keep() const { return m_keep; }

  // Creates the directory (and missing parents) if needed, and removes temp files left by
  // an earlier process that died while writing (".ckpt-*.tmp").
  Status prepare();

  // Writes checkpoint `version` durably (see the file comment); `parameters` and `momentum`
  // each hold `count` floats. On success, files beyond `keep` are deleted, oldest versions
  // first; the file just written is always kept. On failure the Status names the file and
  // the errno text, e.g. "checkpoint <path>: write failed: No space left on device (wrote
  // 65536 of 6505123 bytes); the previous checkpoint (version 300) is kept". Allocates
  // nothing proportional to `count`.
  Status write(std::int64_t version, double runTimeS, const std::string& model,
               const float* parameters, const float* momentum, std::int64_t count);

  // The newest checkpoint that reads back intact. Every file skipped on the way (torn:
  // shorter than its header says; bad magic; CRC mismatch; model differing from
  // `expectModel` when that is not empty; count differing from `expectCount` when that is
  // >= 0) is described in `skipped`, one line each naming the file and the problem. An
  // error ("no valid checkpoint in <dir> (...)") when no file is valid, the directory is
  // empty or missing.
  Result<CheckpointData> loadLatest(std::vector<std::string>* skipped = nullptr,
                                    const std::string& expectModel = {},
                                    std::int64_t expectCount = -1) const;

  // Versions of the checkpoint files present (valid or not), ascending.
  std::vector<std::int64_t> versions() const;

  // "<dir>/ckpt-<version zero-padded to 12 digits>.dasp".
  std::string pathFor(std::int64_t version) const;

  // Reads and checks one checkpoint file (magic, size, CRC, then the expectations). The
  // error message names the file and the problem.
  static Result<CheckpointData> readFile(const std::string& path,
                                         const std::string& expectModel = {},
                                         std::int64_t expectCount = -1);

 private:
  std::string m_dir;
  int m_keep;
};

}  // namespace dasp
