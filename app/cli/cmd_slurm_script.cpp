// SPDX-License-Identifier: MIT
// `dasp slurm-script SPEC.json [--nodes N] [--gpus-per-node G] [--db PATH] [--dasp PATH]
// [-o FILE]`: the sbatch script that runs the spec on a Slurm cluster (net/launch/slurm_script.h).
#include "app/cli/cli.h"
#include "net/launch/slurm_script.h"

#include <sys/stat.h>

#include <fstream>
#include <iostream>
#include <memory>

namespace dasp::cli {

void addSlurmScriptCommand(CLI::App& dasp, int& exitCode) {
  struct Flags {
    std::string specPath;
    SpecFlags spec;
    net::SlurmScriptOptions script;
    std::string out;
  };
  auto flags = std::make_shared<Flags>();
  auto* command = dasp.add_subcommand("slurm-script", "write the sbatch script that runs a spec on a Slurm cluster");
  command->footer(
      "Submit the script with `sbatch` from the directory the run store should go to. The spec runs with the\n"
      "SLURM launcher: a spec without launch.hosts runs on the nodes Slurm gives the job (the first: the\n"
      "servers and the evaluator; the others: the workers); a spec with hosts asks for those nodes.");
  command->add_option("spec", flags->specPath, "the experiment spec (JSON)")->required();
  addSpecFlags(*command, flags->spec);
  command->add_option("--nodes", flags->script.nodes, "nodes for a spec without launch.hosts (default 2)")
      ->check(integerIn(1, 100000));
  command->add_option("--gpus-per-node", flags->script.gpusPerNode,
                      "GPUs per node, --gres=gpu:N (default: the most any host declares in launch.hosts[].gpus)")
      ->check(integerIn(0, 1024));
  command->add_option("--db", flags->script.db,
                      "the run store the job's runs go to (default: dasp-NAME-JOBID.db where the job was submitted)");
  flags->script.dasp = selfPath();
  command->add_option("--dasp", flags->script.dasp, "the dasp binary on the cluster's nodes")->capture_default_str();
  command->add_option("-o,--output", flags->out, "write the script to this file (default: standard output)");
  command->callback([flags, &exitCode] {
    auto spec = specFromFlags(flags->spec, flags->specPath);
    if (!spec) {
      exitCode = fail(spec.message());
      return;
    }
    flags->script.source = flags->specPath;
    auto script = net::slurmBatchScript(spec.value(), flags->script);
    if (!script) {
      exitCode = fail(flags->specPath + ": " + script.message());
      return;
    }
    if (flags->out.empty()) {
      std::cout << script.value();
      exitCode = 0;
      return;
    }
    std::ofstream file(flags->out, std::ios::trunc);
    file << script.value();
    file.close();
    if (!file) {
      exitCode = fail("cannot write " + flags->out, 1);
      return;
    }
    (void)::chmod(flags->out.c_str(), 0755);
    std::cerr << "dasp: wrote " << flags->out << "; submit it with: sbatch " << flags->out << "\n";
    exitCode = 0;
  });
}

}  // namespace dasp::cli
