// SPDX-License-Identifier: MIT
// `dasp bench sim [--workers 4096] [--seconds 5] [--strategy dasp] [--json]`
// Events per second of the virtual-cluster engine on a policy-only cluster (the softmax
// model on synthetic data, slowdowns 1, 1, 2, 4, 20 ms base iteration), in three cases
// measured in the same run:
//   baseline  the engine with a gradient source that costs nothing (zeros): the event
//             queue, the policy, the server model and the parameter updates alone;
//   gradients the same run with real softmax gradients;
//   recorded  the same with every row written to a temporary run store.
// Ratios are events/s of each case over the baseline's.
#include "app/cli/cli.h"

#include "ml/sim_compute.h"
#include "core/sim/sim_engine.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <tuple>
#include <iostream>

namespace dasp::cli {
namespace {

// The baseline's gradients: zeros of the model's size, at no cost.
class ZeroGradients final : public GradientSource {
 public:
  ZeroGradients(std::int64_t parameters, int batch) : m_parameters(parameters), m_batch(batch) {}
  std::int64_t parameterCount() const override { return m_parameters; }
  int batchSize() const override { return m_batch; }
  // DASP's ADAPTIVE rule sizes each node's batch; a zero gradient has any size.
  bool setBatchSize(int batch) override {
    m_batch = batch;
    return true;
  }
  Result<double> computeGradient(const float*, float* gradient) override {
    std::fill(gradient, gradient + m_parameters, 0.0f);
    return 0.0;
  }

 private:
  std::int64_t m_parameters;
  int m_batch;
};

struct Case {
  const char* name;
  RunSummary summary;
  double eventsPerS = 0;
};

}  // namespace

int benchSim(const BenchSimFlags& flags) {
  const int workers = flags.workers;
  const double seconds = flags.seconds;
  const std::string& strategy = flags.strategy;
  const bool json = flags.json;

  ExperimentSpec spec;
  spec.set_name("bench-sim");
  spec.set_engine("sim");
  spec.mutable_sim()->set_gradients(v1::SimSpec::POLICY_ONLY);
  spec.mutable_model()->set_name("logreg");
  spec.mutable_dataset()->set_name("synthetic");
  spec.mutable_dataset()->mutable_synthetic()->set_train_count(std::max<std::int64_t>(4096, 32LL * workers));
  spec.mutable_dataset()->mutable_synthetic()->set_separation(2.0);
  spec.mutable_optimizer()->set_lr(0.00002);
  spec.mutable_optimizer()->set_momentum(0);
  spec.set_batch_size(32);
  spec.mutable_cluster()->set_count(workers);
  for (double s : {1.0, 1.0, 2.0, 4.0}) spec.mutable_cluster()->add_slowdowns(s);
  spec.mutable_cluster()->set_base_iteration_ms(20);
  spec.mutable_strategy()->set_name(strategy);
  spec.mutable_stop()->set_max_seconds(seconds);
  spec.mutable_evaluation()->set_every_s(1);
  if (auto st = validateSpec(spec); !st) return fail("bench sim: " + st.message());
  spec = withDefaults(spec);

  // The same computation `dasp run` wires in for a policy-only spec.
  auto bundle = ml::makeSimCompute(spec);
  if (!bundle) return fail(bundle.message(), 1);
  const auto parameters = static_cast<std::int64_t>(bundle.value()->compute.initialParameters.size());

  auto run = [&](const char* name, bool zero, bool record) -> Result<Case> {
    if (!json) std::fprintf(stderr, "bench sim: %s, %d workers, %.1f virtual s ...\n", name, workers, seconds);
    SimCompute compute = bundle.value()->compute;
    if (zero) {
      const int batch = spec.batch_size();
      compute.makeSource = [parameters, batch](int, int) -> Result<std::unique_ptr<GradientSource>> {
        return std::unique_ptr<GradientSource>(std::make_unique<ZeroGradients>(parameters, batch));
      };
    }
    SimOptions options;
    std::string db;
    if (record) {
      char dir[] = "/tmp/dasp-bench-sim-XXXXXX";
      if (mkdtemp(dir) == nullptr) return Status::error("bench sim: cannot create a temporary directory");
      db = std::string(dir) + "/runs.sqlite";
      options.dbPath = db;
    }
    auto r = runSimulation(spec, compute, options);
    if (!db.empty()) {
      for (const char* suffix : {"", "-wal", "-shm"}) ::unlink((db + suffix).c_str());
      ::rmdir(db.substr(0, db.size() - std::string("/runs.sqlite").size()).c_str());
    }
    if (!r) return r.status();
    Case c{name, r.value(), 0};
    c.eventsPerS = c.summary.wallS > 0 ? static_cast<double>(c.summary.simEvents) / c.summary.wallS : 0;
    return c;
  };
  std::vector<Case> cases;
  for (auto [name, zero, record] : {std::tuple{"baseline", true, false}, std::tuple{"gradients", false, false},
                                   std::tuple{"recorded", false, true}}) {
    auto c = run(name, zero, record);
    if (!c) return fail(c.message(), 1);
    cases.push_back(c.value());
  }
  const double base = cases.front().eventsPerS;
  if (json) {
    std::cout << "{\"bench\":\"sim\",\"workers\":" << workers << ",\"strategy\":" << jsonString(strategy)
              << ",\"virtual_s\":" << jsonNumber(seconds) << ",\"cases\":[";
    for (std::size_t i = 0; i < cases.size(); ++i) {
      const auto& c = cases[i];
      std::cout << (i ? "," : "") << "{\"case\":" << jsonString(c.name) << ",\"events\":" << c.summary.simEvents
                << ",\"gradients\":" << c.summary.gradients << ",\"wall_s\":" << jsonNumber(c.summary.wallS)
                << ",\"events_per_s\":" << jsonNumber(c.eventsPerS)
                << ",\"virtual_per_wall\":" << jsonNumber(c.summary.wallS > 0 ? c.summary.seconds / c.summary.wallS : 0)
                << ",\"ratio\":" << jsonNumber(base > 0 ? c.eventsPerS / base : 0) << "}";
    }
    std::cout << "]}" << std::endl;
    return 0;
  }
  std::printf("%-10s %10s %11s %8s %12s %14s %7s\n", "case", "events", "gradients", "wall s", "events/s",
              "virtual/wall", "ratio");
  for (const auto& c : cases) {
    std::printf("%-10s %10lld %11lld %8.2f %12.0f %14.2f %7.3f\n", c.name, static_cast<long long>(c.summary.simEvents),
                static_cast<long long>(c.summary.gradients), c.summary.wallS, c.eventsPerS,
                c.summary.wallS > 0 ? c.summary.seconds / c.summary.wallS : 0, base > 0 ? c.eventsPerS / base : 0);
  }
  std::printf("\n%d workers, %s, %.1f virtual s; ratio = events/s over the baseline's (zero-cost gradients, no store)\n",
              workers, strategy.c_str(), seconds);
  return 0;
}

}  // namespace dasp::cli
