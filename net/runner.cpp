// SPDX-License-Identifier: MIT
#include "net/runner.h"

#include "core/build_info.h"
#include "core/run_store.h"
#include "net/event_recording.h"
#include "net/process.h"
#include "net/ps_client.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <thread>

namespace dasp::net {
namespace {

using Clock = std::chrono::steady_clock;

// Lines a node prints for the runner (everything else is its log).
const std::regex kListening(R"(^dasp-server listening ([^ ]+) parameters=(\d+) train_count=(\d+))");
const std::regex kNodeStats(R"(^dasp-node-stats bytes_sent=(\d+) bytes_received=(\d+))");

struct NodeOutput {
  std::mutex mu;
  std::condition_variable cv;
  std::string listenAddress;
  std::int64_t parameters = 0;
  std::int64_t trainCount = 0;
  std::map<std::string, std::pair<std::int64_t, std::int64_t>> bytes;  // node -> sent, received
  std::string serverStderrTail;
};

std::string tempRunDir() {
  const char* tmp = getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/dasp-run-XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) return {};
  return buf.data();
}

}  // namespace

Result<RunSummary> runExperiment(const ExperimentSpec& spec, const RunnerOptions& options) {
  auto say = [&](const std::string& text) {
    if (options.log) options.log(text);
  };
  const auto workers = expandWorkers(spec);
  const int n = static_cast<int>(workers.size());
  std::vector<std::string> names;
  for (const auto& w : workers) names.push_back(w.name());

  // The store first: a run we cannot record is not started.
  auto store = RunStore::open(options.dbPath);
  if (!store) return store.status();
  NewRun run;
  run.kind = "distributed";
  run.name = spec.name().empty() ? "run" : spec.name();
  run.specJson = specToJson(spec, false);
  run.model = spec.model().name();
  run.dataset = spec.dataset().name();
  run.strategy = spec.strategy().name();
  run.recovery = v1::RecoverySpec::Mode_Name(spec.recovery().mode());
  run.seed = static_cast<std::int64_t>(spec.seed());
  run.tags = options.tags;
  run.codeVersion = codeVersion();
  auto created = store.value()->createRun(run);
  if (!created) return created.status();
  const std::int64_t runId = created.value();
  auto opened = RunRecorder::open(options.dbPath, runId);
  if (!opened) return opened.status();
  auto& recorder = *opened.value();
  if (options.onRunCreated) options.onRunCreated(runId);

  const std::string dir = tempRunDir();
  const std::string specFile = dir + "/spec.json";
  {
    std::ofstream out(specFile);
    out << specToJson(spec);
    if (dir.empty() || !out) {
      (void)recorder.finish(RunStatus::Failed, "cannot write the run's spec file");
      return Status::error("runner: cannot create a temporary run directory");
    }
  }

  NodeOutput output;
  OutputPump pump([&](const std::string& node, bool isStderr, const std::string& line) {
    std::smatch m;
    if (node == "server" && std::regex_search(line, m, kListening)) {
      std::lock_guard<std::mutex> lock(output.mu);
      output.listenAddress = m[1].str();
      output.parameters = std::stoll(m[2].str());
      output.trainCount = std::stoll(m[3].str());
      output.cv.notify_all();
    } else if (std::regex_search(line, m, kNodeStats)) {
      std::lock_guard<std::mutex> lock(output.mu);
      output.bytes[node] = {std::stoll(m[1].str()), std::stoll(m[2].str())};
    }
    if (node == "server" && isStderr) {
      std::lock_guard<std::mutex> lock(output.mu);
      output.serverStderrTail = line;
    }
    LogRow row;
    row.runId = runId;
    row.node = node;
    row.stream = isStderr ? "stderr" : "stdout";
    row.line = line;
    recorder.record(row);
  });

  std::map<std::string, std::unique_ptr<ChildProcess>> children;
  auto launch = [&](const std::string& name, const std::vector<std::string>& args) -> Status {
    std::vector<std::string> argv{options.daspBinary};
    argv.insert(argv.end(), args.begin(), args.end());
    auto child = ChildProcess::spawn(name, argv);
    if (!child) return child.status();
    pump.add(name, child.value()->stdoutFd(), false);
    pump.add(name, child.value()->stderrFd(), true);
    NodeRow row;
    row.runId = runId;
    row.node = name;
    row.role = name == "server" ? "server" : name == "evaluator" ? "evaluator" : "worker";
    row.host = hostName();
    row.pid = child.value()->pid();
    recorder.record(row);
    children[name] = std::move(child).value();
    return Status::ok();
  };

  RunSummary summary;
  summary.runId = runId;
  summary.strategy = spec.strategy().name();
  summary.recovery = run.recovery;
  summary.seed = spec.seed();
  summary.workers = n;
  std::string failure;

  auto finishChildren = [&](double graceS) {
    for (auto& [name, child] : children) {
      if (name == "server") continue;
      if (!child->waitFor(graceS)) child->signal(SIGKILL);
    }
    for (auto& [name, child] : children) {
      if (name == "server") continue;
      child->waitFor(5.0);
    }
    if (auto it = children.find("server"); it != children.end()) {
      it->second->signal(SIGTERM);
      if (!it->second->waitFor(10.0)) {
        it->second->signal(SIGKILL);
        it->second->waitFor(5.0);
      }
    }
  };

  // 1. The server.
  if (auto st = launch("server", {"server", "--spec", specFile, "--workers", std::to_string(n), "--bind",
                                  "127.0.0.1", "--port", "0"});
      !st) {
    (void)recorder.finish(RunStatus::Failed, st.message());
    return st;
  }
  say("run " + std::to_string(runId) + ": " + spec.strategy().name() + ", " + std::to_string(n) +
      " workers, seed " + std::to_string(spec.seed()));
  {
    std::unique_lock<std::mutex> lock(output.mu);
    const auto until = Clock::now() + std::chrono::duration<double>(options.startTimeoutS);
    while (output.listenAddress.empty() && Clock::now() < until && children["server"]->running()) {
      output.cv.wait_for(lock, std::chrono::milliseconds(100));
      lock.unlock();
      children["server"]->poll();
      lock.lock();
    }
    if (output.listenAddress.empty()) {
      failure = "server did not start: " +
                (children["server"]->exitInfo() ? children["server"]->exitInfo()->describe() : std::string("timed out")) +
                (output.serverStderrTail.empty() ? "" : " (" + output.serverStderrTail + ")");
    }
  }
  if (!failure.empty()) {
    finishChildren(1.0);
    pump.drainAndStop();
    (void)recorder.finish(RunStatus::Failed, failure);
    return Status::error("run " + std::to_string(runId) + ": " + failure);
  }
  const std::string address = output.listenAddress;
  PsClient control(address, output.parameters);

  // 2. The event stream.
  EventRecording recording(recorder, names, spec.stop().target_accuracy());
  std::mutex eventMu;
  std::condition_variable eventCv;
  grpc::ClientContext watchContext;
  // The stream lives as long as the run; its deadline only guards against a hung server.
  setDeadline(watchContext, 7 * 24 * 3600.0);
  auto reader = control.watch(watchContext);
  std::thread watcher([&] {
    dasp::ps::v1::EventBatch batch;
    while (reader->Read(&batch)) {
      recording.record(batch);
      if (options.onEvents) options.onEvents(runId, batch);
      eventCv.notify_all();
    }
    (void)reader->Finish();
    eventCv.notify_all();
  });

  // 3. Workers and the evaluator.
  for (int r = 0; r < n && failure.empty(); ++r) {
    if (auto st = launch(names[static_cast<std::size_t>(r)],
                         {"worker", "--server", address, "--rank", std::to_string(r), "--name", names[static_cast<std::size_t>(r)]});
        !st) {
      failure = st.message();
    }
  }
  if (failure.empty()) {
    if (auto st = launch("evaluator", {"evaluator", "--server", address}); !st) failure = st.message();
  }

  // Live actions from the GUI: speed through the server, pause/resume/kill by signal.
  auto applyControl = [&](const RunControl::Action& action) -> std::string {
    const auto rankIt = std::find(names.begin(), names.end(), action.node);
    const int rank = rankIt == names.end() ? -1 : static_cast<int>(rankIt - names.begin());
    switch (action.kind) {
      case RunControl::Kind::SlowDown:
      case RunControl::Kind::Restore: {
        if (rank < 0) return "cannot change the speed of " + action.node + ": not a worker";
        dasp::ps::v1::ControlRequest creq;
        creq.set_action(dasp::ps::v1::ControlRequest::SET_SLOWDOWN);
        creq.set_rank(rank);
        creq.set_slowdown(action.kind == RunControl::Kind::Restore ? 0.0 : action.factor);
        dasp::ps::v1::ControlReply crep;
        auto st = control.control(creq, crep, 5.0);
        if (!st.ok()) return "speed change of " + action.node + " failed: " + describe(st);
        return action.kind == RunControl::Kind::Restore ? "restore " + action.node + " to its own speed profile"
                                                        : "slow " + action.node + " to x" + std::to_string(action.factor);
      }
      case RunControl::Kind::Pause:
      case RunControl::Kind::Resume:
      case RunControl::Kind::Kill: {
        auto it = children.find(action.node);
        if (it == children.end() || !it->second->running()) return action.node + " is not running";
        const int sig = action.kind == RunControl::Kind::Pause ? SIGSTOP
                        : action.kind == RunControl::Kind::Resume ? SIGCONT
                                                                   : SIGKILL;
        it->second->signal(sig);
        return std::string(action.kind == RunControl::Kind::Pause ? "pause " : action.kind == RunControl::Kind::Resume ? "resume " : "kill ") +
               action.node;
      }
    }
    return "unknown action";
  };

  // 4. Watch the stop condition, the processes and the cancel flag.
  const auto& stop = spec.stop();
  const double trainCount = static_cast<double>(std::max<std::int64_t>(1, output.trainCount));
  std::string stopReason;
  std::map<std::string, bool> reportedExit;
  while (failure.empty() && stopReason.empty()) {
    {
      std::unique_lock<std::mutex> lock(eventMu);
      eventCv.wait_for(lock, std::chrono::milliseconds(100));
    }
    const auto f = recording.figures();
    if (options.cancel && options.cancel->load()) stopReason = "cancelled";
    else if (f.targetT && stop.stop_at_target()) stopReason = "target";
    else if (stop.max_seconds() > 0 && f.lastT >= stop.max_seconds()) stopReason = "max_seconds";
    else if (stop.max_updates() > 0 && f.version >= stop.max_updates()) stopReason = "max_updates";
    else if (stop.epochs() > 0 && static_cast<double>(f.samples) / trainCount >= stop.epochs()) stopReason = "epochs";
    if (options.control != nullptr) {
      for (const auto& action : options.control->take()) {
        recorder.record(EventRow{runId, f.lastT, "control", action.node, applyControl(action)});
      }
    }
    for (auto& [name, child] : children) {
      if (reportedExit[name] || !child->poll()) continue;
      reportedExit[name] = true;
      const std::string what = name + " " + child->exitInfo()->describe();
      recorder.record(EventRow{runId, f.lastT, "exit", name, what});
      if (name == "server") {
        failure = "server exited during the run: " + child->exitInfo()->describe() +
                  (output.serverStderrTail.empty() ? "" : " (" + output.serverStderrTail + ")");
      } else if (name == "evaluator") {
        failure = "evaluator exited during the run: " + child->exitInfo()->describe();
      } else {
        // A worker vanished: the server stops waiting for it; training goes on.
        say("run " + std::to_string(runId) + ": " + what + "; marking it down");
        dasp::ps::v1::ControlRequest req;
        req.set_action(dasp::ps::v1::ControlRequest::MARK_DOWN);
        req.set_rank(static_cast<int>(std::find(names.begin(), names.end(), name) - names.begin()));
        dasp::ps::v1::ControlReply rep;
        (void)control.control(req, rep, 5.0);
        bool anyWorker = false;
        for (const auto& w : names) anyWorker = anyWorker || children[w]->running();
        if (!anyWorker) failure = "every worker exited";
      }
    }
  }

  // 5. Stop: the server answers every pull with stop; the evaluator does its final
  // evaluation; then every process is shut down.
  // A node paused from the GUI must run again to stop cleanly.
  for (auto& [name, child] : children) child->signal(SIGCONT);
  dasp::ps::v1::ControlRequest req;
  req.set_action(dasp::ps::v1::ControlRequest::STOP);
  req.set_rank(-1);
  dasp::ps::v1::ControlReply rep;
  (void)control.control(req, rep, 5.0);
  if (auto it = children.find("evaluator"); it != children.end() && failure.empty()) it->second->waitFor(120.0);
  finishChildren(30.0);
  watchContext.TryCancel();
  watcher.join();
  pump.drainAndStop();

  const auto f = recording.figures();
  for (auto& [name, child] : children) {
    NodeRow row;
    row.runId = runId;
    row.node = name;
    row.role = name == "server" ? "server" : name == "evaluator" ? "evaluator" : "worker";
    row.host = hostName();
    row.pid = child->pid();
    if (const auto& e = child->exitInfo()) {
      row.exitCode = e->exitCode;
      row.signal = e->signal;
      row.cpuS = e->cpuS;
      row.maxRssKb = e->maxRssKb;
    }
    if (auto it = output.bytes.find(name); it != output.bytes.end()) {
      row.bytesSent = it->second.first;
      row.bytesReceived = it->second.second;
    }
    recorder.record(row);
  }
  summary.stopReason = failure.empty() ? stopReason : "failed";
  summary.timeToTargetS = f.targetT;
  summary.finalAccuracy = f.lastAccuracy;
  summary.finalLoss = f.lastLoss;
  summary.seconds = f.lastT;
  summary.updates = f.version;
  summary.gradients = f.gradients;
  summary.applied = f.applied;
  summary.dropped = f.dropped;
  summary.meanWaitS = f.gradients > 0 ? f.waitSum / static_cast<double>(f.gradients) : 0;
  summary.waitFraction = f.waitSum + f.computeSum > 0 ? f.waitSum / (f.waitSum + f.computeSum) : 0;
  summary.meanStaleness = f.applied > 0 ? f.stalenessSum / static_cast<double>(f.applied) : 0;
  summary.maxStaleness = f.maxStaleness;
  summary.epochs = static_cast<double>(f.samples) / trainCount;

  std::vector<SummaryRow> rows{
      {"final_accuracy", summary.finalAccuracy, ""}, {"final_loss", summary.finalLoss, ""},
      {"seconds", summary.seconds, ""},              {"updates", static_cast<double>(summary.updates), ""},
      {"gradients", static_cast<double>(summary.gradients), ""},
      {"applied", static_cast<double>(summary.applied), ""},
      {"dropped", static_cast<double>(summary.dropped), ""},
      {"mean_wait_s", summary.meanWaitS, ""},        {"wait_fraction", summary.waitFraction, ""},
      {"mean_staleness", summary.meanStaleness, ""}, {"max_staleness", static_cast<double>(summary.maxStaleness), ""},
      {"epochs", summary.epochs, ""},                {"workers", static_cast<double>(n), ""},
      {"stop_reason", std::nullopt, summary.stopReason},
      {"lr_convention", std::nullopt, v1::OptimizerSpec::LrConvention_Name(spec.optimizer().lr_convention())}};
  if (summary.timeToTargetS) rows.push_back({"time_to_target_s", *summary.timeToTargetS, ""});
  recorder.setSummary(rows);
  const RunStatus status = !failure.empty() ? RunStatus::Failed
                           : stopReason == "cancelled" ? RunStatus::Stopped
                                                       : RunStatus::Completed;
  summary.status = toString(status);
  auto finished = recorder.finish(status, failure);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  if (!failure.empty()) return Status::error("run " + std::to_string(runId) + ": " + failure);
  if (!finished) return finished;
  return summary;
}

}  // namespace dasp::net
