// SPDX-License-Identifier: MIT
#include "net/runner.h"

#include "core/build_info.h"
#include "core/run_store.h"
#include "net/action_outcome.h"
#include "net/bind_address.h"
#include "net/event_recording.h"
#include "net/fault_tracker.h"
#include "net/launcher.h"
#include "net/node_security.h"
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
#include <set>
#include <sstream>
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
  std::map<std::string, std::string> listen;  // server node -> host:port
  std::int64_t parameters = 0;
  std::int64_t trainCount = 0;
  std::map<std::string, std::pair<std::int64_t, std::int64_t>> bytes;  // node -> sent, received
  std::string serverStderrTail;
};

// CPU-seconds a live process has used so far (/proc/PID/stat utime + stime); 0 if gone.
double processCpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(text.substr(close + 2));
  std::string skip;
  for (int i = 3; i <= 13; ++i) fields >> skip;  // state … cmajflt
  double utime = 0, stime = 0;
  fields >> utime >> stime;
  const long tick = sysconf(_SC_CLK_TCK);
  return tick > 0 ? (utime + stime) / static_cast<double>(tick) : 0;
}

// The run's clock on the runner's side: anchored to the server's event times (the
// smallest observed delivery delay wins), so it keeps running while no server is up and a
// restarted server can be told where the run's clock stands.
class RunClock {
 public:
  void observe(double serverT) {
    if (serverT <= 0) return;
    const auto origin = Clock::now() - std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(serverT));
    std::lock_guard<std::mutex> lock(m_mu);
    if (!m_anchored || origin < m_origin) m_origin = origin;
    m_anchored = true;
  }
  double now() const {
    std::lock_guard<std::mutex> lock(m_mu);
    return m_anchored ? std::chrono::duration<double>(Clock::now() - m_origin).count() : 0.0;
  }

 private:
  mutable std::mutex m_mu;
  bool m_anchored = false;
  Clock::time_point m_origin;
};

using RE = v1::RunEvent;

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
  const auto& recovery = spec.recovery();
  const bool chain = recovery.mode() == v1::RecoverySpec::CHAIN;
  std::vector<std::string> serverNames;
  if (chain) {
    for (int i = 0; i < recovery.replicas(); ++i) serverNames.push_back("server-" + std::to_string(i));
  } else {
    serverNames.push_back("server");
  }
  auto isServer = [&](const std::string& node) {
    return std::find(serverNames.begin(), serverNames.end(), node) != serverNames.end();
  };
  for (int i = 0; i < spec.faults_size(); ++i) {
    const auto& node = spec.faults(i).node();
    if (node != "server" && node != "evaluator" && !isServer(node) &&
        std::find(names.begin(), names.end(), node) == names.end()) {
      std::string known = "server, evaluator";
      for (const auto& s : serverNames) known += s == "server" ? "" : ", " + s;
      for (const auto& w : names) known += ", " + w;
      return Status::error("faults[" + std::to_string(i) + "].node: no node '" + node + "' in this run (nodes: " +
                           known + ")");
    }
  }

  // Where each node runs (spec.launch; without hosts, everything on this machine).
  auto placement = placeNodes(spec, serverNames, names, options.daspBinary);
  if (!placement) return placement.status();

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
  run.recovery = recoveryName(spec.recovery().mode());
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

  // The run's local directory (the launcher writes the spec file into it, or onto the
  // server's host).
  const std::string dir = tempRunDir();
  if (dir.empty()) {
    (void)recorder.finish(RunStatus::Failed, "cannot create a temporary run directory");
    return Status::error("runner: cannot create a temporary run directory");
  }

  // Node security: a fresh random token per run, handed to every node in its environment
  // (nodeSpawn.env: DASP_RUN_TOKEN; never on a command line, which ps shows), and TLS when
  // the spec asks for it (the runner's own watch/control clients trust tls_cert too).
  NodeSecurity security;
  SpawnOptions nodeSpawn;  // how every node process of this run is started
  {
    std::string problem;
    if (auto token = newRunToken()) {
      security.token = token.value();
      nodeSpawn.env[kTokenEnvironment] = security.token;
    } else {
      problem = token.message();
    }
    if (problem.empty() && spec.security().tls()) {
      if (auto tls = loadTls(spec.security().tls_cert())) {
        security.tls = std::move(tls).value();
      } else {
        problem = tls.message();
      }
    }
    if (!problem.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
      (void)recorder.finish(RunStatus::Failed, problem);
      return Status::error("run " + std::to_string(runId) + ": " + problem);
    }
  }
  // TLS flags for the nodes (the files are read where each node runs).
  std::vector<std::string> tlsClientArgs, tlsServerArgs;
  if (security.tls) {
    tlsClientArgs = {"--tls-cert", spec.security().tls_cert()};
    tlsServerArgs = {"--tls-cert", spec.security().tls_cert(), "--tls-key", spec.security().tls_key()};
  }

  // How nodes start (spec.launch.launcher). Before any node starts, every placed host is
  // checked (reachable, dasp there: the run fails early, naming the host) and gets the
  // run's directory; the servers' hosts get the spec file. Declared before the node
  // processes, so it outlives them: its destructor removes the run's remote directories.
  std::unique_ptr<NodeLauncher> launcher;
  std::map<std::string, std::string> specPathOn;  // host name -> the spec file there
  {
    std::string problem;
    if (auto made = makeLauncher(spec.launch(), dir)) {
      launcher = std::move(made).value();
      if (auto st = launcher->prepare(placement->hosts); !st) problem = st.message();
    } else {
      problem = made.message();
    }
    for (const auto& s : serverNames) {
      const auto& host = placement->hostOf(s);
      if (!problem.empty() || specPathOn.count(host.name()) > 0) continue;
      auto path = launcher->putFile(host, "spec.json", specToJson(spec));
      if (path) {
        specPathOn[host.name()] = path.value();
      } else {
        problem = path.message();
      }
    }
    if (!problem.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
      (void)recorder.finish(RunStatus::Failed, problem);
      return Status::error("run " + std::to_string(runId) + ": " + problem);
    }
    if (placement->placed) {
      std::string where;
      for (const auto& h : placement->hosts) where += (where.empty() ? "" : ", ") + h.name() + " (" + h.address() + ")";
      say("run " + std::to_string(runId) + ": " + launcher->kind() + " launcher, hosts " + where);
    }
  }

  RunClock clock;
  FaultTracker tracker(std::vector<v1::FaultSpec>(spec.faults().begin(), spec.faults().end()));
  NodeOutput output;
  OutputPump pump([&](const std::string& node, bool isStderr, const std::string& line) {
    std::smatch m;
    if (isServer(node) && std::regex_search(line, m, kListening)) {
      std::lock_guard<std::mutex> lock(output.mu);
      output.listen[node] = m[1].str();
      output.parameters = std::stoll(m[2].str());
      output.trainCount = std::stoll(m[3].str());
      output.cv.notify_all();
    } else if (std::regex_search(line, m, kNodeStats)) {
      std::lock_guard<std::mutex> lock(output.mu);
      output.bytes[node] = {std::stoll(m[1].str()), std::stoll(m[2].str())};
    } else if (line.find("dasp-recovery") != std::string::npos) {
      tracker.observeLine(node, line, clock.now());
    }
    if (isServer(node) && isStderr) {
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

  std::map<std::string, std::unique_ptr<NodeProcess>> children;
  auto roleOf = [&](const std::string& name) {
    return isServer(name) ? "server" : name == "evaluator" ? "evaluator" : "worker";
  };
  auto launch = [&](const std::string& name, const std::vector<std::string>& args) -> Status {
    NodeStart start;
    start.name = name;
    start.host = placement->hostOf(name);
    start.args = args;
    start.env = nodeSpawn.env;
    auto child = launcher->start(start);
    if (!child) return child.status();
    pump.add(name, child.value()->stdoutFd(), false);
    pump.add(name, child.value()->stderrFd(), true);
    NodeRow row;
    row.runId = runId;
    row.node = name;
    row.role = roleOf(name);
    row.host = start.host.name();
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
      if (isServer(name)) continue;
      if (!child->waitFor(graceS)) child->signal(SIGKILL);
    }
    for (auto& [name, child] : children) {
      if (isServer(name)) continue;
      child->waitFor(5.0);
    }
    for (auto& [name, child] : children) {
      if (!isServer(name)) continue;
      child->signal(SIGTERM);
      if (!child->waitFor(10.0)) {
        child->signal(SIGKILL);
        child->waitFor(5.0);
      }
    }
  };

  // 1. The server (or the chain of replicas, tail first: each is told its successor).
  // Checkpoints go to a folder of this run (never restore another run's checkpoints).
  std::string checkpointDir;
  if (recovery.mode() == v1::RecoverySpec::CHECKPOINT) {
    // (on the server's host: the run's directory there unless the spec names one).
    const std::string base = recovery.checkpoint_dir().empty()
                                 ? launcher->runDir(placement->hostOf(serverNames.front())) + "/checkpoints"
                                 : recovery.checkpoint_dir();
    checkpointDir = base + "/run-" + std::to_string(runId);
  }
  std::map<std::string, std::string> serverAddress;  // node -> host:port (kept across restarts)
  auto startServer = [&](const std::string& name, const std::string& port,
                         const std::vector<std::string>& extra) -> Result<std::string> {
    {
      std::lock_guard<std::mutex> lock(output.mu);
      output.listen.erase(name);
    }
    // The server binds to its host's address (127.0.0.1 without placement) unless the
    // spec says otherwise; nodes dial that host.
    const auto& host = placement->hostOf(name);
    const std::string bind = serverBindAddress(spec, placement->placed ? host.address() : std::string());
    std::vector<std::string> args{"server", "--spec", specPathOn[host.name()], "--workers", std::to_string(n), "--bind",
                                  bind, "--port", port, "--name", name};
    args.insert(args.end(), tlsServerArgs.begin(), tlsServerArgs.end());
    if (!checkpointDir.empty()) args.insert(args.end(), {"--checkpoint-dir", checkpointDir});
    args.insert(args.end(), extra.begin(), extra.end());
    if (auto st = launch(name, args); !st) return st;
    auto& child = children[name];
    std::unique_lock<std::mutex> lock(output.mu);
    const auto until = Clock::now() + std::chrono::duration<double>(options.startTimeoutS);
    while (output.listen[name].empty() && Clock::now() < until && child->running()) {
      output.cv.wait_for(lock, std::chrono::milliseconds(100));
      lock.unlock();
      child->poll();
      lock.lock();
    }
    if (output.listen[name].empty()) {
      return Status::error(name + " did not start: " +
                           (child->exitInfo() ? child->exitInfo()->describe() : std::string("timed out")) +
                           (output.serverStderrTail.empty() ? "" : " (" + output.serverStderrTail + ")"));
    }
    const auto& listening = output.listen[name];
    serverAddress[name] = serverDialAddress(bind, host, listening.substr(listening.rfind(':') + 1));
    return serverAddress[name];
  };
  auto portOf = [&](const std::string& name) {
    const auto& a = serverAddress[name];
    return a.substr(a.rfind(':') + 1);
  };
  std::vector<std::string> chainOrder;  // live servers, head first (one without a chain)
  for (int i = static_cast<int>(serverNames.size()) - 1; i >= 0 && failure.empty(); --i) {
    std::vector<std::string> extra;
    if (chain && i > 0) extra.push_back("--replica");
    if (chain && i + 1 < static_cast<int>(serverNames.size())) {
      extra.insert(extra.end(), {"--chain-next", serverAddress[serverNames[static_cast<std::size_t>(i) + 1]]});
    }
    // launch.server_port: replica i listens on server_port + i (0: any free port).
    const int fixedPort = spec.launch().server_port();
    auto started = startServer(serverNames[static_cast<std::size_t>(i)],
                               fixedPort > 0 ? std::to_string(fixedPort + i) : std::string("0"), extra);
    if (!started) failure = started.message();
  }
  chainOrder = serverNames;
  say("run " + std::to_string(runId) + ": " + spec.strategy().name() + ", " + std::to_string(n) +
      " workers, seed " + std::to_string(spec.seed()) +
      (recovery.mode() != v1::RecoverySpec::NONE || spec.faults_size() > 0
           ? ", recovery " + recoveryName(recovery.mode())
           : std::string()));
  if (!failure.empty()) {
    finishChildren(1.0);
    pump.drainAndStop();
    (void)recorder.finish(RunStatus::Failed, failure);
    return Status::error("run " + std::to_string(runId) + ": " + failure);
  }
  std::string serverList;
  for (const auto& name : serverNames) serverList += (serverList.empty() ? "" : ",") + serverAddress[name];

  // The head's address: the watch stream and control calls follow it.
  std::mutex headMu;
  std::condition_variable headCv;
  std::string headAddress = serverAddress[serverNames.front()];
  bool watchStop = false;
  grpc::ClientContext* watchContext = nullptr;
  auto currentHead = [&] {
    std::lock_guard<std::mutex> lock(headMu);
    return headAddress;
  };
  auto controlAt = [&](const std::string& address, dasp::ps::v1::ControlRequest req,
                       dasp::ps::v1::ControlReply& rep) {
    PsClient client(address, output.parameters, security);
    return client.control(req, rep, 5.0);
  };
  auto controlHead = [&](const dasp::ps::v1::ControlRequest& req, dasp::ps::v1::ControlReply& rep) {
    return controlAt(currentHead(), req, rep);
  };

  // 2. The event stream, re-subscribed whenever the head changes or restarts.
  EventRecording recording(recorder, names, spec.stop().target_accuracy());
  std::mutex eventMu;
  std::condition_variable eventCv;
  auto nodeName = [&](int rank) {
    return rank >= 0 && rank < n ? names[static_cast<std::size_t>(rank)] : std::string("server");
  };
  std::thread watcher([&] {
    dasp::ps::v1::EventBatch batch;
    while (true) {
      const std::string address = currentHead();
      PsClient client(address, output.parameters, security);
      grpc::ClientContext context;
      // The stream lives as long as the run; its deadline only guards against a hung server.
      setDeadline(context, 7 * 24 * 3600.0);
      {
        std::lock_guard<std::mutex> lock(headMu);
        if (watchStop) break;
        watchContext = &context;
      }
      auto reader = client.watch(context);
      while (reader->Read(&batch)) {
        double latest = 0;
        for (const auto& e : batch.events()) latest = std::max(latest, e.t_s());
        clock.observe(latest);
        recording.record(batch);
        tracker.observe(batch, nodeName);
        if (options.onEvents) options.onEvents(runId, batch);
        eventCv.notify_all();
      }
      (void)reader->Finish();
      eventCv.notify_all();
      std::unique_lock<std::mutex> lock(headMu);
      watchContext = nullptr;
      if (watchStop) break;
      // The server went away: try again shortly (it may be restarting, or a replica is
      // being promoted).
      headCv.wait_for(lock, std::chrono::milliseconds(200), [&] { return watchStop; });
      if (watchStop) break;
    }
  });
  auto stopWatching = [&] {
    std::lock_guard<std::mutex> lock(headMu);
    watchStop = true;
    if (watchContext) watchContext->TryCancel();
    headCv.notify_all();
  };

  // 3. Workers and the evaluator.
  auto workerArgs = [&](int r) {
    std::vector<std::string> args{"worker", "--server", serverList, "--rank", std::to_string(r), "--name",
                                  names[static_cast<std::size_t>(r)], "--connect-timeout",
                                  std::to_string(recovery.reconnect_timeout_s())};
    args.insert(args.end(), tlsClientArgs.begin(), tlsClientArgs.end());
    return args;
  };
  std::vector<std::string> evaluatorArgs{"evaluator", "--server", serverList, "--connect-timeout",
                                         std::to_string(recovery.reconnect_timeout_s())};
  evaluatorArgs.insert(evaluatorArgs.end(), tlsClientArgs.begin(), tlsClientArgs.end());
  for (int r = 0; r < n && failure.empty(); ++r) {
    if (auto st = launch(names[static_cast<std::size_t>(r)], workerArgs(r)); !st) failure = st.message();
  }
  if (failure.empty()) {
    if (auto st = launch("evaluator", evaluatorArgs); !st) failure = st.message();
  }

  // Chain reconfiguration by the runner as the configuration master: a replica that exited
  // leaves the chain; if it was the head, the next one is promoted (its state is what the
  // chain acknowledged), else its predecessor forwards to its successor.
  auto leaveChain = [&](const std::string& name, double t) {
    const auto pos = std::find(chainOrder.begin(), chainOrder.end(), name);
    if (pos == chainOrder.end()) return;
    const bool wasHead = pos == chainOrder.begin();
    const auto index = static_cast<std::size_t>(pos - chainOrder.begin());
    chainOrder.erase(pos);
    if (chainOrder.empty()) {
      failure = "every server replica exited";
      return;
    }
    dasp::ps::v1::ControlReply rep;
    dasp::ps::v1::ControlRequest req;
    std::string what;
    if (wasHead) {
      req.set_action(dasp::ps::v1::ControlRequest::PROMOTE);
      req.set_t_s(t);
      auto st = controlAt(serverAddress[chainOrder.front()], req, rep);
      what = st.ok() ? name + " left the chain; " + rep.detail()
                     : name + " left the chain; promoting " + chainOrder.front() + " failed: " + describe(st);
      {
        std::lock_guard<std::mutex> lock(headMu);
        headAddress = serverAddress[chainOrder.front()];
        if (watchContext) watchContext->TryCancel();
      }
    } else {
      req.set_action(dasp::ps::v1::ControlRequest::SET_NEXT);
      req.set_address(index < chainOrder.size() ? serverAddress[chainOrder[index]] : std::string());
      auto st = controlAt(serverAddress[chainOrder[index - 1]], req, rep);
      what = st.ok() ? name + " left the chain; " + rep.detail()
                     : name + " left the chain; re-linking " + chainOrder[index - 1] + " failed: " + describe(st);
    }
    say("run " + std::to_string(runId) + ": " + what);
    recorder.record(EventRow{runId, t, RE::RECOVERY, name, what, RE::LEFT_CHAIN, {}});
  };

  // Starts a killed node again. A server resumes the run as the recovery mode says; a
  // chain replica rejoins at the tail and catches up from it.
  auto restartNode = [&](const std::string& name, double t) -> ActionOutcome {
    if (auto it = children.find(name); it != children.end()) {
      if (it->second->running()) return {RE::RESTART_REFUSED, name, name + " is still running; not restarted"};
      it->second->waitFor(5.0);
    }
    if (isServer(name)) {
      if (chain) {
        auto started = startServer(name, portOf(name), {"--replica"});
        if (!started) return restartFailed(name, started.message());
        dasp::ps::v1::ControlRequest req;
        req.set_action(dasp::ps::v1::ControlRequest::SET_NEXT);
        req.set_address(started.value());
        dasp::ps::v1::ControlReply rep;
        const std::string tail = chainOrder.back();
        auto st = controlAt(serverAddress[tail], req, rep);
        if (!st.ok()) return restarted(name, ", but linking it after " + tail + " failed: " + describe(st));
        chainOrder.push_back(name);
        return restarted(name, "; it rejoins the chain at the tail after " + tail + " and catches up");
      }
      std::vector<std::string> extra{"--resume-at", std::to_string(t)};
      if (recovery.mode() == v1::RecoverySpec::CHECKPOINT) extra.push_back("--restore");
      if (recovery.mode() == v1::RecoverySpec::STATELESS) extra.push_back("--adopt");
      auto started = startServer(name, portOf(name), extra);
      if (!started) return restartFailed(name, started.message());
      return restarted(name, " (recovery " + recoveryName(recovery.mode()) + ")");
    }
    const auto rankIt = std::find(names.begin(), names.end(), name);
    if (rankIt != names.end()) {
      auto st = launch(name, workerArgs(static_cast<int>(rankIt - names.begin())));
      return st ? restarted(name, "; it rejoins with its rank") : restartFailed(name, st.message());
    }
    if (name == "evaluator") {
      auto st = launch(name, evaluatorArgs);
      return st ? restarted(name, "") : restartFailed(name, st.message());
    }
    return notApplied("unknown node " + name);
  };

  // CPU-seconds of every live node process, by pid (for the drills' CPU cost).
  std::map<int, std::map<pid_t, double>> cpuAtFault;
  auto cpuSnapshot = [&] {
    std::map<pid_t, double> out;
    for (auto& [name, child] : children) {
      if (child->running() && !child->remote()) out[child->pid()] = processCpuSeconds(child->pid());
    }
    return out;
  };
  auto resolveTarget = [&](const std::string& node) { return node == "server" ? chainOrder.front() : node; };
  std::set<std::string> expectedExit;  // killed on purpose (drill or by hand)

  // Kill or pause a node (a drill, or by hand when `manual`).
  auto fireFault = [&](int index, const v1::FaultSpec& fault, double t) -> ActionOutcome {
    const std::string target = resolveTarget(fault.node());
    auto it = children.find(target);
    if (it == children.end() || !it->second->running()) return notApplied(target + " is not running; fault not applied");
    cpuAtFault[index] = cpuSnapshot();
    tracker.fired(index, t, target, isServer(target), chain);
    const bool kill = fault.action() == v1::FaultSpec::KILL;
    if (kill) expectedExit.insert(target);
    it->second->signal(kill ? SIGKILL : SIGSTOP);
    return signalled(kill ? RE::KILL : RE::PAUSE, target);
  };

  // Live actions from the GUI: speed through the server, pause/resume/kill by signal.
  auto applyControl = [&](const RunControl::Action& action, double t) -> ActionOutcome {
    const auto rankIt = std::find(names.begin(), names.end(), action.node);
    const int rank = rankIt == names.end() ? -1 : static_cast<int>(rankIt - names.begin());
    switch (action.kind) {
      case RunControl::Kind::SlowDown:
      case RunControl::Kind::Restore: {
        if (rank < 0) return notApplied("cannot change the speed of " + action.node + ": not a worker");
        dasp::ps::v1::ControlRequest creq;
        creq.set_action(dasp::ps::v1::ControlRequest::SET_SLOWDOWN);
        creq.set_rank(rank);
        creq.set_slowdown(action.kind == RunControl::Kind::Restore ? 0.0 : action.factor);
        dasp::ps::v1::ControlReply crep;
        auto st = controlHead(creq, crep);
        if (!st.ok()) return notApplied("speed change of " + action.node + " failed: " + describe(st));
        return speedSet(action.node, action.kind == RunControl::Kind::Restore, action.factor);
      }
      case RunControl::Kind::Pause:
      case RunControl::Kind::Kill: {
        const std::string target = resolveTarget(action.node);
        auto it = children.find(target);
        if (it == children.end() || !it->second->running()) return notApplied(action.node + " is not running");
        v1::FaultSpec fault;
        fault.set_node(target);
        fault.set_action(action.kind == RunControl::Kind::Kill ? v1::FaultSpec::KILL : v1::FaultSpec::PAUSE);
        fault.set_at_s(t);
        const int index = tracker.addManual(fault, t, target, isServer(target), chain);
        cpuAtFault[index] = cpuSnapshot();
        if (action.kind == RunControl::Kind::Kill) expectedExit.insert(target);
        it->second->signal(action.kind == RunControl::Kind::Kill ? SIGKILL : SIGSTOP);
        return signalled(action.kind == RunControl::Kind::Kill ? RE::KILL : RE::PAUSE, target);
      }
      case RunControl::Kind::Resume: {
        auto it = children.find(action.node);
        if (it == children.end() || !it->second->running()) return notApplied(action.node + " is not running");
        it->second->signal(SIGCONT);
        tracker.restartedManual(action.node, t);
        return signalled(RE::RESUME, action.node);
      }
      case RunControl::Kind::Restart: {
        tracker.restartedManual(action.node, t);
        return restartNode(action.node, t);
      }
    }
    return notApplied("unknown action");
  };

  // 4. Watch the stop condition, the drills, the processes and the cancel flag.
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
    // Run time keeps going while no server is up (no events then).
    const double runT = std::max(f.lastT, clock.now());
    if (options.cancel && options.cancel->load()) stopReason = "cancelled";
    else if (f.targetT && stop.stop_at_target()) stopReason = "target";
    else if (stop.max_seconds() > 0 && runT >= stop.max_seconds()) stopReason = "max_seconds";
    else if (stop.max_updates() > 0 && f.version >= stop.max_updates()) stopReason = "max_updates";
    else if (stop.epochs() > 0 && static_cast<double>(f.samples) / trainCount >= stop.epochs()) stopReason = "epochs";
    if (!stopReason.empty()) break;
    if (options.control != nullptr) {
      for (const auto& action : options.control->take()) {
        recorder.record(actionRow(runId, runT, RE::CONTROL, action.node, applyControl(action, runT)));
      }
    }
    // Fault drills, once the run's clock runs (every worker has joined).
    if (f.lastT > 0) {
      for (const auto& due : tracker.due(runT)) {
        ActionOutcome what;
        if (!due.restart) {
          what = fireFault(due.index, due.spec, runT);
        } else if (due.spec.action() == v1::FaultSpec::PAUSE) {
          const std::string target = resolveTarget(due.spec.node());
          auto it = children.find(target);
          if (it != children.end()) it->second->signal(SIGCONT);
          tracker.restarted(due.index, runT);
          what = signalled(RE::RESUME, target);
        } else {
          const auto records = tracker.records();
          const std::string target = records[static_cast<std::size_t>(due.index)].node;
          tracker.restarted(due.index, runT);  // before: the new server's first updates count
          what = restartNode(target, runT);
          tracker.addDetail(due.index, what.text);
        }
        say("run " + std::to_string(runId) + ": drill " + std::to_string(due.index + 1) + " at " +
            std::to_string(runT).substr(0, 6) + " s: " + what.text);
        recorder.record(actionRow(runId, runT, RE::FAULT, due.spec.node(), std::move(what)));
      }
    }
    for (int index : tracker.resumedWithoutCpu()) {
      double cpu = 0;
      const auto& before = cpuAtFault[index];
      for (auto& [name, child] : children) {
        if (!child->running() || child->remote()) continue;  // a remote node's CPU is not visible here
        const auto was = before.find(child->pid());
        cpu += processCpuSeconds(child->pid()) - (was == before.end() ? 0.0 : was->second);
      }
      tracker.setCpu(index, cpu);
    }
    for (auto& [name, child] : children) {
      if (reportedExit[name] && !child->running()) continue;
      if (!child->poll()) {
        reportedExit[name] = false;  // a restarted node
        continue;
      }
      if (reportedExit[name]) continue;
      reportedExit[name] = true;
      const std::string what = name + " " + child->exitInfo()->describe();
      recorder.record(EventRow{runId, runT, RE::EXIT, name, what, RE::EXITED, {}});
      const bool expected = expectedExit.erase(name) > 0;
      if (isServer(name)) {
        if (chain) {
          leaveChain(name, runT);
        } else if (!expected || !tracker.restartPending(name)) {
          failure = "server exited during the run: " + child->exitInfo()->describe() +
                    (output.serverStderrTail.empty() ? "" : " (" + output.serverStderrTail + ")");
        }
      } else if (name == "evaluator") {
        if (!expected || !tracker.restartPending(name)) {
          failure = "evaluator exited during the run: " + child->exitInfo()->describe();
        }
      } else {
        // A worker vanished: the server stops waiting for it; training goes on.
        say("run " + std::to_string(runId) + ": " + what + "; marking it down");
        dasp::ps::v1::ControlRequest req;
        req.set_action(dasp::ps::v1::ControlRequest::MARK_DOWN);
        req.set_rank(static_cast<int>(std::find(names.begin(), names.end(), name) - names.begin()));
        dasp::ps::v1::ControlReply rep;
        (void)controlHead(req, rep);
        bool anyWorker = false;
        for (const auto& w : names) anyWorker = anyWorker || children[w]->running() || tracker.restartPending(w);
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
  const bool stopped = controlHead(req, rep).ok();
  if (!stopped) {
    // No server to answer with stop (the run ended during an outage): nodes stop on SIGTERM.
    for (auto& [name, child] : children) {
      if (!isServer(name)) child->signal(SIGTERM);
    }
  }
  if (auto it = children.find("evaluator"); it != children.end() && failure.empty() && stopped) {
    it->second->waitFor(120.0);
  }
  finishChildren(30.0);
  stopWatching();
  watcher.join();
  pump.drainAndStop();

  const auto f = recording.figures();
  for (auto& [name, child] : children) {
    NodeRow row;
    row.runId = runId;
    row.node = name;
    row.role = roleOf(name);
    row.host = placement->hostOf(name).name();
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
  summary.speedChangeDip = speedChangeDip(spec, tracker.evaluations());

  if (const auto records = tracker.records(); !records.empty()) {
    summary.faults = computeRecoveryMetrics(records, tracker.evaluations(), summary.finalAccuracy);
    recorder.recordFaults(summary.faults);
  }
  summary.wallS = clock.now();
  const auto rows = summaryRows(summary, spec);
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
