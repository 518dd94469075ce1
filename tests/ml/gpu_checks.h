// SPDX-License-Identifier: MIT
#pragma once
// The checks behind the `gpu` tests (ml.gpu): the CUDA path of Model and
// ShardGradientSource against the CPU, plus the checks of that transfer path and of the
// device errors that run on any machine. They use no Qt, so the same checks run as a Qt
// Test (tst_gpu.cpp, the default build) and as a plain program (gpu_main.cpp, the Qt-free
// build of a GPU host without Qt 6 Test, see tools/gpu-check.sh).
// Threading: every check runs on the calling thread.

#include <functional>
#include <string>
#include <vector>

namespace dasp::gputest {

struct Outcome {
  enum Kind { Pass, Skip, Fail };
  Kind kind = Pass;
  std::string message;  // why it was skipped (only ever: no CUDA device) or what failed
};

// Why the CUDA checks cannot run here, or "" when they can.
std::string cudaSkipReason();

// Everywhere: "cuda:0" on a build or machine without CUDA, or "cuda:N" beyond the devices
// present, fails with a message that says so, for a Model and for a worker (naming its
// cluster.workers[i].device field); "auto" always works.
Outcome deviceErrorsAreClear();
// Everywhere: the staging path (as used on CUDA) gives the direct CPU path's losses,
// gradients, parameters and evaluation exactly, on the CPU.
Outcome stagedPathMatchesDirect(const std::string& model);
// CUDA: a forward/backward on cuda:0 matches the CPU within TF32/cuDNN tolerance.
Outcome gradientsMatchCpu(const std::string& model);
// CUDA: a worker whose cluster.workers[0].device is cuda:0 computes there, as the CPU does.
Outcome shardSourceOnCuda();
// CUDA: two workers sharing cuda:0 (each its own stream), interleaved, each as on the CPU.
Outcome twoSourcesShareOneGpu();
// CUDA: the trainer on cuda:0 learns (loss falls, accuracy above chance).
Outcome trainerLearnsOnCuda();

struct Check {
  std::string name;
  std::function<Outcome()> run;
};
// Every check, with one entry per model for the per-model checks.
std::vector<Check> allChecks();

}  // namespace dasp::gputest
