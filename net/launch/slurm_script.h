// SPDX-License-Identifier: MIT
#pragma once
// The sbatch script of an experiment (`dasp slurm-script`): a researcher's spec, run on a
// Slurm cluster as one batch job. The script asks for the nodes and the tasks the spec's
// placement needs (and GPUs: --gres=gpu:N), carries the spec itself (so the job does not
// depend on the file it came from), and runs `dasp run` in the batch step with the SLURM
// launcher: every node a step of the job. The run's token is made by that `dasp run` and
// reaches each node on its stdin, so it is in no file of the job. The store is written on
// the first node's local disk (SQLite on a network file system is not safe) and copied to
// the submitting directory when the run ends, also when it fails or the job is cancelled.
// Threading: any (pure).

#include "core/common/result.h"
#include "core/spec/spec.h"

#include <string>

namespace dasp::net {

struct SlurmScriptOptions {
  // Where the spec came from (a comment in the script).
  std::string source;
  // Nodes for a spec without launch.hosts (0: 2, one for the servers and the evaluator and
  // one for the workers). A spec with hosts asks for exactly those nodes.
  int nodes = 0;
  // GPUs per node (--gres=gpu:N; 0: the most any host declares in hosts[].gpus).
  int gpusPerNode = 0;
  // The store where the runs land, on the submitting host's file system; existing runs are
  // kept. Empty: dasp-NAME-JOBID.db in the directory the job was submitted from.
  std::string db;
  // The `dasp` binary on the cluster's nodes.
  std::string dasp = "dasp";
};

// The script's text, or what in the spec or the options it cannot honour (the field).
Result<std::string> slurmBatchScript(const ExperimentSpec& spec, const SlurmScriptOptions& options);

}  // namespace dasp::net
