// SPDX-License-Identifier: MIT
#include "net/launch/slurm_script.h"
#include "net/launch/launcher.h"
#include "net/launch/slurm_allocation.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <vector>

namespace dasp::net {
namespace {

// The most processes any one node runs, placed as the run will place them: on the spec's
// hosts, or (without hosts) on `nodes` nodes of the job as placeOnSlurmAllocation does.
Result<int> tasksPerNode(ExperimentSpec spec, int nodes) {
  if (spec.launch().hosts_size() == 0) {
    std::vector<SlurmNode> jobNodes;
    for (int i = 0; i < nodes; ++i) jobNodes.push_back({"node" + std::to_string(i), ""});
    placeOnNodes(*spec.mutable_launch(), jobNodes, 0);
  }
  std::vector<std::string> workers;
  for (const auto& w : expandWorkers(spec)) workers.push_back(w.name());
  auto placement = placeNodes(spec, serverNodeNames(spec), workers, "dasp");
  if (!placement) return placement.status();
  std::map<std::size_t, int> count;
  int most = 0;
  for (const auto& [node, host] : placement->nodeHost) most = std::max(most, ++count[host]);
  return most;
}

// `text` as one word of a file or job name: what is not a letter, digit, '.', '-' or '_'
// becomes '_' (the spec's name may hold anything).
std::string fileWord(const std::string& text) {
  std::string out = text;
  for (char& c : out) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') c = '_';
  }
  return out;
}

}  // namespace

Result<std::string> slurmBatchScript(const ExperimentSpec& given, const SlurmScriptOptions& options) {
  ExperimentSpec spec = given;
  spec.mutable_launch()->set_launcher(v1::LaunchSpec::SLURM);
  const auto& launch = spec.launch();
  if (options.nodes < 0) return Status::error("--nodes: must be >= 1 (got " + std::to_string(options.nodes) + ")");
  if (options.nodes > 0 && launch.hosts_size() > 0) {
    return Status::error("--nodes: the spec names its hosts (launch.hosts): the job asks for those " +
                         std::to_string(launch.hosts_size()));
  }
  const int nodes = launch.hosts_size() > 0 ? launch.hosts_size() : options.nodes > 0 ? options.nodes : 2;
  auto tasks = tasksPerNode(spec, nodes);
  if (!tasks) return tasks.status();
  if (options.gpusPerNode < 0) {
    return Status::error("--gpus-per-node: must be >= 0 (got " + std::to_string(options.gpusPerNode) + ")");
  }
  int gpus = options.gpusPerNode;
  if (gpus == 0) {
    for (const auto& h : launch.hosts()) gpus = std::max(gpus, h.gpus());
  }
  const std::string name = "dasp-" + fileWord(spec.name().empty() ? std::string("run") : spec.name());

  std::string s = "#!/bin/bash\n";
  s += "# The sbatch script of experiment '" + oneLine(spec.name()) + "', written by `dasp slurm-script` from " +
       (options.source.empty() ? std::string("a spec") : oneLine(options.source)) + ".\n";
  s += "# Submit it with `sbatch` from the directory the run store should go to.\n";
  s += "# The first node runs the parameter server and the evaluator, the others the workers;\n";
  s += "# each is a step of this job. The run's token is made by `dasp run` when the job starts\n";
  s += "# and reaches each node on its stdin: it is in no file of this job.\n";
  s += "#SBATCH --job-name=" + name + "\n";
  s += "#SBATCH --nodes=" + std::to_string(nodes) + "\n";
  s += "#SBATCH --ntasks-per-node=" + std::to_string(tasks.value()) + "\n";
  if (launch.hosts_size() > 0) {
    std::string list;
    for (const auto& h : launch.hosts()) list += (list.empty() ? "" : ",") + h.name();
    s += "#SBATCH --nodelist=" + list + "\n";
  }
  if (gpus > 0) s += "#SBATCH --gres=gpu:" + std::to_string(gpus) + "\n";
  s += "#SBATCH --output=" + name + "-%j.out\n";
  // At the time limit the runner gets TERM two minutes early: it stops the run, and the
  // store is copied back before Slurm's KILL.
  s += "#SBATCH --signal=B:TERM@120\n";
  for (int i = 0; i < launch.salloc_args_size(); ++i) {
    const std::string& arg = launch.salloc_args(i);
    if (arg.empty() || arg.front() != '-' || arg.find('\n') != std::string::npos) {
      return Status::error("launch.salloc_args[" + std::to_string(i) + "]: '" + arg +
                           "' is not an option of the form --name=value (each becomes an #SBATCH line)");
    }
    s += "#SBATCH " + arg + "\n";
  }
  s += "set -u\n";
  s += "work=$(mktemp -d \"${TMPDIR:-/tmp}/" + name + "-$SLURM_JOB_ID.XXXXXX\") || exit 1\n";
  s += "db=" + (options.db.empty() ? "\"$SLURM_SUBMIT_DIR/" + name + "-$SLURM_JOB_ID.db\"" : shellQuote(options.db)) +
       "\n";
  s += "dasp=" + shellQuote(options.dasp) + "\n";
  std::string json = specToJson(spec);
  if (json.empty() || json.back() != '\n') json += '\n';
  s += "cat > \"$work/spec.json\" <<'DASP_SPEC_END'\n" + json + "DASP_SPEC_END\n";
  s += "# The store is written on this node's disk; the runs already in $db are kept.\n";
  s += "if [ -f \"$db\" ]; then cp -- \"$db\" \"$work/runs.db\" || exit 1; fi\n";
  s += "\"$dasp\" run \"$work/spec.json\" --db \"$work/runs.db\" --json & pid=$!\n";
  s += "# scancel of the job (and its time limit) reach the runner, which stops the run cleanly.\n";
  s += "trap 'kill -TERM $pid 2>/dev/null' TERM INT\n";
  s += "wait $pid; status=$?\n";
  s += "while kill -0 $pid 2>/dev/null; do wait $pid; status=$?; done\n";
  s += "# Opening the store folds in its write-ahead log (a killed runner leaves one).\n";
  s += "\"$dasp\" runs --db \"$work/runs.db\" >/dev/null 2>&1\n";
  s += "if cp -- \"$work/runs.db\" \"$db.$SLURM_JOB_ID.part\" && mv -f -- \"$db.$SLURM_JOB_ID.part\" \"$db\"; then\n";
  s += "  echo \"dasp: the run store is $db\" >&2\n";
  s += "  rm -rf -- \"$work\"\n";
  s += "else\n";
  s += "  echo \"dasp: could not copy the run store to $db; it stays at $(hostname):$work/runs.db\" >&2\n";
  s += "  status=1\n";
  s += "fi\n";
  s += "exit $status\n";
  return s;
}

}  // namespace dasp::net
