// SPDX-License-Identifier: MIT
// `dasp train [SPEC.json] [flags]`: the single-node trainer, recorded into the run store.
#include "app/cli/cli.h"
#include "app/cli/signals.h"

#include "core/common/build_info.h"
#include "core/data/dataset_loader.h"
#include "ml/trainer.h"
#include "core/store/run_store.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>

namespace dasp::cli {
namespace {

struct TrainFlags {
  std::string specPath;  // empty: the spec is the defaults and the flags
  SpecFlags spec;
  std::string db = defaultStorePath();
  std::optional<std::string> save, load;
  bool noStore = false;
  bool json = false;
  bool quiet = false;
};

// Streams the trainer's progress into the run store and, on a terminal, to stderr.
class Recording final : public ml::TrainObserver {
 public:
  Recording(RunRecorder* recorder, bool progress, double epochs)
      : m_recorder(recorder), m_progress(progress), m_epochs(epochs) {}

  void onProgress(const ml::TrainPoint& p) override {
    if (m_recorder) {
      SampleRow row;
      row.runId = m_recorder->runId();
      row.node = "trainer";
      row.series = "train_loss";
      row.tS = p.tS;
      row.version = p.step;
      row.value = p.loss;
      m_recorder->record(row);
      row.series = "lr";
      row.value = p.lr;
      m_recorder->record(row);
    }
    m_lastLoss = p.loss;
    if (m_progress) {
      char acc[16] = "  -   ";
      if (m_lastAcc >= 0) std::snprintf(acc, sizeof acc, "%.4f", m_lastAcc);
      std::fprintf(stderr, "\r  epoch %5.2f/%g  step %7lld  loss %.4f  test acc %s  %6.1fs   ",
                   p.epoch, m_epochs, static_cast<long long>(p.step), p.loss, acc, p.tS);
      std::fflush(stderr);
    }
  }

  void onEvaluation(const ml::EvalPoint& p) override {
    m_lastAcc = p.eval.accuracy;
    if (!m_recorder) return;
    EvaluationRow row;
    row.runId = m_recorder->runId();
    row.tS = p.tS;
    row.version = p.step;
    row.updates = p.step;
    row.samples = p.samples;
    row.loss = p.eval.loss;
    row.accuracy = p.eval.accuracy;
    m_recorder->record(row);
  }

  void endLine() const {
    if (m_progress) std::fprintf(stderr, "\n");
  }

 private:
  RunRecorder* m_recorder;
  bool m_progress;
  double m_epochs;
  double m_lastLoss = 0;
  double m_lastAcc = -1;
};

int trainCommand(const TrainFlags& flags) {
  auto spec = specFromFlags(flags.spec, flags.specPath);
  if (!spec) return fail(spec.message());
  const bool json = flags.json;
  const bool quiet = flags.quiet;

  // Open the store before the long work: a store we cannot write would lose the results.
  std::unique_ptr<RunStore> store;
  std::unique_ptr<RunRecorder> recorder;
  const bool useStore = !flags.noStore;
  const std::string& dbPath = flags.db;
  if (useStore) {
    auto opened = RunStore::open(dbPath);
    if (!opened) return fail(opened.message());
    store = std::move(opened).value();
  }

  auto data = loadDataset(spec->dataset(), spec->seed());
  if (!data) return fail(data.message());

  auto trainer = ml::SingleNodeTrainer::create(spec.value(), data.value());
  if (!trainer) return fail(trainer.message());
  if (flags.load) {
    if (auto st = trainer.value()->model().load(*flags.load); !st) return fail(st.message());
  }

  std::int64_t runId = 0;
  if (store) {
    NewRun run;
    run.kind = "train";
    run.name = spec->name().empty() ? "train" : spec->name();
    run.specJson = specToJson(spec.value(), false);
    run.model = spec->model().name();
    run.dataset = spec->dataset().name();
    run.seed = static_cast<std::int64_t>(spec->seed());
    run.codeVersion = codeVersion();
    auto created = store->createRun(run);
    if (!created) return fail(created.message(), 1);
    runId = created.value();
    auto rec = RunRecorder::open(dbPath, runId);
    if (!rec) return fail(rec.message(), 1);
    recorder = std::move(rec).value();
    NodeRow node;
    node.runId = runId;
    node.node = "trainer";
    node.role = "trainer";
    node.host = hostName();
    node.pid = getpid();
    recorder->record(node);
  }

  if (!quiet && !json) {
    std::cerr << "dasp train: " << spec->model().name() << " (" << trainer.value()->model().parameterCount()
              << " parameters, " << trainer.value()->model().deviceName() << ") on " << spec->dataset().name()
              << " (" << data->train.count << " train / " << data->test.count << " test), batch "
              << spec->batch_size() << ", lr " << spec->optimizer().lr() << ", seed " << spec->seed()
              << (runId ? ", run " + std::to_string(runId) : std::string()) << "\n";
  }

  installStopSignals();
  Recording observer(recorder.get(), !quiet && isatty(STDERR_FILENO), spec->stop().epochs());
  auto result = trainer.value()->run(&observer, stopRequested());
  observer.endLine();

  if (!result) {
    if (recorder) (void)recorder->finish(RunStatus::Failed, result.message());
    return fail(result.message(), 1);
  }
  const auto& r = result.value();
  if (flags.save) {
    if (auto st = trainer.value()->model().save(*flags.save); !st) {
      if (recorder) (void)recorder->finish(RunStatus::Failed, st.message());
      return fail(st.message(), 1);
    }
  }
  const bool cancelled = r.stopReason == "cancelled";
  if (recorder) {
    std::vector<SummaryRow> summary{
        {"final_accuracy", r.final.accuracy, ""}, {"final_loss", r.final.loss, ""},
        {"seconds", r.seconds, ""},               {"train_seconds", r.trainSeconds, ""},
        {"steps", static_cast<double>(r.steps), ""}, {"samples", static_cast<double>(r.samples), ""},
        {"samples_per_s", r.samplesPerS, ""},     {"epochs", r.epochs, ""},
        {"stop_reason", std::nullopt, r.stopReason}};
    if (r.timeToTargetS) summary.push_back({"time_to_target_s", *r.timeToTargetS, ""});
    recorder->setSummary(summary);
    if (auto st = recorder->finish(cancelled ? RunStatus::Stopped : RunStatus::Completed); !st) {
      return fail(st.message(), 1);
    }
  }

  if (!json) {
    std::printf("run %lld  %s on %s: test accuracy %.4f, loss %.4f after %.2f epochs (%lld steps) "
                "in %.1f s, %.0f samples/s%s\n",
                static_cast<long long>(runId), spec->model().name().c_str(),
                spec->dataset().name().c_str(), r.final.accuracy, r.final.loss, r.epochs,
                static_cast<long long>(r.steps), r.seconds, r.samplesPerS,
                cancelled ? " (stopped)" : "");
  } else {
    std::cout << "{\"run_id\":" << runId << ",\"model\":" << jsonString(spec->model().name())
              << ",\"dataset\":" << jsonString(spec->dataset().name())
              << ",\"device\":" << jsonString(trainer.value()->model().deviceName()) << ",\"seed\":" << spec->seed()
              << ",\"final_accuracy\":" << jsonNumber(r.final.accuracy)
              << ",\"final_loss\":" << jsonNumber(r.final.loss) << ",\"seconds\":" << jsonNumber(r.seconds)
              << ",\"train_seconds\":" << jsonNumber(r.trainSeconds) << ",\"steps\":" << r.steps
              << ",\"samples\":" << r.samples << ",\"samples_per_s\":" << jsonNumber(r.samplesPerS)
              << ",\"epochs\":" << jsonNumber(r.epochs) << ",\"time_to_target_s\":"
              << (r.timeToTargetS ? jsonNumber(*r.timeToTargetS) : "null")
              << ",\"stop_reason\":" << jsonString(r.stopReason) << "}" << std::endl;
  }
  return cancelled ? 130 : 0;
}

}  // namespace

void addTrainCommand(CLI::App& dasp, int& exitCode) {
  auto flags = std::make_shared<TrainFlags>();
  auto* train = dasp.add_subcommand("train", "train one model on one process (the single-node baseline)");
  train->add_option("spec", flags->specPath, "the experiment spec (JSON); without one, the defaults");
  addSpecFlags(*train, flags->spec);
  train->add_option("--db", flags->db, "the run store (SQLite)")->capture_default_str();
  train->add_option("--save", flags->save, "write the trained parameters to this file");
  train->add_option("--load", flags->load, "start from the parameters in this file");
  train->add_flag("--no-store", flags->noStore, "record nothing in the run store");
  train->add_flag("--json", flags->json, "one JSON object at the end");
  train->add_flag("--quiet", flags->quiet, "no progress on stderr");
  train->callback([flags, &exitCode] { exitCode = trainCommand(*flags); });
}

}  // namespace dasp::cli
