// SPDX-License-Identifier: MIT
#pragma once
// SlurmAllocation: the runner's own Slurm allocation, for `dasp run` with the SLURM
// launcher outside one (no SLURM_JOB_ID). salloc asks for one node per placed host
// (--nodelist) and, once granted, runs a holder command on this machine that prints the
// job id and then waits for its stdin to close. The runner keeps the other end of that
// stdin, so the allocation ends with the runner however it ends, a SIGKILL included: the
// holder exits at end of file, salloc releases the job, and Slurm ends its steps; salloc
// itself gets SIGTERM when the runner dies (SpawnOptions::termWithParent), so a job still
// queued then is withdrawn.
// A refusal (no such partition, more nodes than exist) is salloc's exit with Slurm's
// reason on stderr, which the error quotes.
// placeOnSlurmAllocation: a SLURM spec that names no hosts runs on the nodes Slurm gives
// it (those of the allocation it is in, or of the one it asks for).
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
  // Asks `salloc` (from $PATH) for `hosts` (their names are the Slurm node names) with
  // launch.salloc_args, and waits up to launch.allocation_wait_s (default 300 s) for it.
  // No hosts: whichever nodes Slurm gives (2, unless salloc_args ask for a number).
  static Result<std::unique_ptr<SlurmAllocation>> request(const v1::LaunchSpec& launch,
                                                          const std::vector<v1::HostSpec>& hosts,
                                                          const std::string& jobName);
  // Releases the allocation: closes the holder's stdin and waits for salloc (it cancels
  // the job's steps), then signals it if it hangs.
  ~SlurmAllocation();
  SlurmAllocation(const SlurmAllocation&) = delete;
  SlurmAllocation& operator=(const SlurmAllocation&) = delete;

  const std::string& jobId() const { return m_jobId; }
  // The allocation's nodes as Slurm writes them (SLURM_JOB_NODELIST, e.g. "gpu[01-03]").
  const std::string& nodeList() const { return m_nodeList; }
  // SLURM_GPUS_ON_NODE of the job: the GPUs it got per node (0 if it asked for none).
  int gpusOnNode() const { return m_gpusOnNode; }

 private:
  SlurmAllocation() = default;
  std::unique_ptr<ChildProcess> m_salloc;
  int m_hold = -1;  // the holder's stdin: the allocation lasts while it is open
  std::string m_jobId;
  std::string m_nodeList;
  int m_gpusOnNode = 0;
};

// salloc's argv for `hosts`: the nodes, the job name, the arguments, then the holder.
std::vector<std::string> sallocCommand(const std::string& salloc, const v1::LaunchSpec& launch,
                                       const std::vector<v1::HostSpec>& hosts, const std::string& jobName);

// A node of an allocation as Slurm knows it (`scontrol show node`).
struct SlurmNode {
  std::string name;
  std::string address;  // NodeAddr: where Slurm itself reaches the node
};
// The nodes of a Slurm node list ("gpu[01-03],cpu7"), in order (Slurm's own expansion,
// `scontrol show hostnames`), each with its address; every call within `timeoutS`.
Result<std::vector<SlurmNode>> slurmNodes(const std::string& nodeList, double timeoutS = 20);

// A SLURM spec without launch.hosts gets the nodes of its allocation as hosts: the first
// takes the servers and the evaluator, the others the workers (one node: all of them),
// each at its NodeAddr. Inside an allocation (SLURM_JOB_ID) these are SLURM_JOB_NODELIST;
// outside one, the allocation is requested here (SlurmAllocation::request, named
// `jobName`) and `own` holds it for the launcher. Each host's gpus: the job's
// SLURM_GPUS_ON_NODE (0 when it asked for none). A spec with hosts is left as is.
Status placeOnSlurmAllocation(ExperimentSpec& spec, const std::string& jobName,
                              std::unique_ptr<SlurmAllocation>& own);
// The hosts and placement of a job on `nodes` (placeOnSlurmAllocation's rule), each host
// with `gpus`; the sbatch script sizes its job by the same rule (slurm_script.h).
void placeOnNodes(v1::LaunchSpec& launch, const std::vector<SlurmNode>& nodes, int gpus);

}  // namespace dasp::net
