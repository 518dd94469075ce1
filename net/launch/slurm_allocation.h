// SPDX-License-Identifier: MIT
#pragma once
// SlurmAllocation: the runner's own Slurm allocation, for `dasp run` with the SLURM
// launcher outside one (no SLURM_JOB_ID). salloc asks for one node per placed host
// (--nodelist) and, once granted, runs a holder command on this machine that prints the
// job id and then waits for its stdin to close. The runner keeps the other end of that
// stdin, so the allocation ends with the runner however it ends, a SIGKILL included: the
// holder exits at end of file, salloc releases the job, and Slurm ends its steps. salloc
// is the one child that must outlive a killed runner for that (SpawnOptions::outlivesParent).
// A refusal (no such partition, more nodes than exist) is salloc's exit with Slurm's
// reason on stderr, which the error quotes.
// Threading: the runner's thread.

#include "core/common/result.h"
#include "net/launch/process.h"
#include "core/spec/spec.h"

#include <memory>
#include <string>
#include <vector>

namespace dasp::net {

class SlurmAllocation {
 public:
  // Asks `salloc` for `hosts` (their names are the Slurm node names) with
  // launch.salloc_args, and waits up to launch.allocation_wait_s (default 300 s) for it.
  static Result<std::unique_ptr<SlurmAllocation>> request(const std::string& salloc, const v1::LaunchSpec& launch,
                                                          const std::vector<v1::HostSpec>& hosts,
                                                          const std::string& jobName);
  // Releases the allocation: closes the holder's stdin and waits for salloc (it cancels
  // the job's steps), then signals it if it hangs.
  ~SlurmAllocation();
  SlurmAllocation(const SlurmAllocation&) = delete;
  SlurmAllocation& operator=(const SlurmAllocation&) = delete;

  const std::string& jobId() const { return m_jobId; }

 private:
  SlurmAllocation() = default;
  std::unique_ptr<ChildProcess> m_salloc;
  int m_hold = -1;  // the holder's stdin: the allocation lasts while it is open
  std::string m_jobId;
};

// salloc's argv for `hosts`: the nodes, the job name, the arguments, then the holder.
std::vector<std::string> sallocCommand(const std::string& salloc, const v1::LaunchSpec& launch,
                                       const std::vector<v1::HostSpec>& hosts, const std::string& jobName);

}  // namespace dasp::net
