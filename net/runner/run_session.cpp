// SPDX-License-Identifier: MIT
#include "net/runner/run_session.h"

#include "core/common/build_info.h"
#include "core/results/cluster_profile.h"
#include "net/client/ps_client.h"
#include "net/client/recovery_line.h"

#include <signal.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <regex>

namespace dasp::net {
namespace {

namespace pb = dasp::ps::v1;

// Lines a node prints for the runner (everything else is its log).
const std::regex kListening(R"(^dasp-server listening ([^ ]+) parameters=(\d+) train_count=(\d+))");
const std::regex kNodeStats(R"(^dasp-node-stats bytes_sent=(\d+) bytes_received=(\d+))");
// The node wrapper's, in a Slurm step (net/launch/node_wrapper.cpp).
const std::regex kSlurmStep(R"(^dasp-node-slurm-step job=(\d+) step=(\d+)$)");

std::string tempRunDir() {
  const char* tmp = getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/dasp-run-XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) return {};
  return buf.data();
}

}  // namespace

RunSession::RunSession(const ExperimentSpec& spec, const RunnerOptions& options)
    : m_spec(spec),
      m_options(options),
      m_serverNames(serverNodeNames(spec)),
      m_chain(chainsWholeServers(spec)),
      m_recovery(recoveryName(spec.recovery().mode())),
      m_tracker(std::vector<v1::FaultSpec>(spec.faults().begin(), spec.faults().end())) {
  for (const auto& w : expandWorkers(spec)) m_workerNames.push_back(w.name());
}

RunSession::~RunSession() {
  if (m_watcher) m_watcher->stop();
  for (auto& w : m_shardWatchers) w->stop();
  if (!m_dir.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(m_dir, ec);
  }
}

void RunSession::say(const std::string& text) const {
  if (m_options.log) m_options.log(text);
}

bool RunSession::isServer(const std::string& node) const {
  return std::find(m_serverNames.begin(), m_serverNames.end(), node) != m_serverNames.end();
}

bool RunSession::shardChainGoesOn(const std::string& server) const {
  return chainsShards(m_spec) && server != m_serverNames.front();
}

Status RunSession::checkFaultNodes() const {
  for (int i = 0; i < m_spec.faults_size(); ++i) {
    const auto& node = m_spec.faults(i).node();
    if (node != "server" && node != "evaluator" && !isServer(node) &&
        std::find(m_workerNames.begin(), m_workerNames.end(), node) == m_workerNames.end()) {
      std::string known = "server, evaluator";
      for (const auto& s : m_serverNames) known += s == "server" ? "" : ", " + s;
      for (const auto& w : m_workerNames) known += ", " + w;
      return Status::error("faults[" + std::to_string(i) + "].node: no node '" + node + "' in this run (nodes: " +
                           known + ")");
    }
  }
  return Status::ok();
}

Status RunSession::open() {
  auto store = RunStore::open(m_options.dbPath);
  if (!store) return store.status();
  m_store = std::move(store).value();
  NewRun run;
  run.kind = "distributed";
  run.name = m_spec.name().empty() ? "run" : m_spec.name();
  run.specJson = specToJson(m_spec, false);
  run.model = m_spec.model().name();
  run.dataset = m_spec.dataset().name();
  run.strategy = m_spec.strategy().name();
  run.recovery = m_recovery;
  run.seed = static_cast<std::int64_t>(m_spec.seed());
  run.tags = m_options.tags;
  run.codeVersion = codeVersion();
  auto created = m_store->createRun(run);
  if (!created) return created.status();
  m_runId = created.value();
  auto opened = RunRecorder::open(m_options.dbPath, m_runId);
  if (!opened) return opened.status();
  m_recorder = std::move(opened).value();
  if (m_options.onRunCreated) m_options.onRunCreated(m_runId);
  return Status::ok();
}

Status RunSession::failRun(const std::string& problem) {
  (void)m_recorder->finish(RunStatus::Failed, problem);
  return Status::error("run " + std::to_string(m_runId) + ": " + problem);
}

// A fresh random token per run, handed to every node in its environment (DASP_RUN_TOKEN;
// never on a command line, which ps shows), and TLS when the spec asks for it (the
// runner's own watch/control clients trust tls_cert too).
Status RunSession::prepareSecurity() {
  auto token = newRunToken();
  if (!token) return token.status();
  m_security.token = token.value();
  m_nodeEnv[kTokenEnvironment] = m_security.token;
  if (m_spec.security().tls()) {
    auto tls = loadTls(m_spec.security().tls_cert());
    if (!tls) return tls.status();
    m_security.tls = std::move(tls).value();
  }
  return Status::ok();
}

// How nodes start (spec.launch.launcher). Before any node starts, every placed host is
// checked (reachable, dasp there: the run fails early, naming the host) and gets the run's
// directory; the servers' hosts get the spec file.
Status RunSession::prepareLauncher() {
  auto made = makeLauncher(m_spec.launch(), m_dir, std::move(m_allocation));
  if (!made) return made.status();
  m_launcher = std::move(made).value();
  if (auto st = m_launcher->prepare(m_placement->hosts); !st) return st;
  for (const auto& s : m_serverNames) {
    const auto& host = m_placement->hostOf(s);
    if (m_specPathOn.count(host.name()) > 0) continue;
    auto path = m_launcher->putFile(host, "spec.json", specToJson(m_spec));
    if (!path) return path.status();
    m_specPathOn[host.name()] = path.value();
  }
  if (m_placement->placed) {
    std::string where;
    for (const auto& h : m_placement->hosts) where += (where.empty() ? "" : ", ") + h.name() + " (" + h.address() + ")";
    say("run " + std::to_string(m_runId) + ": " + m_launcher->kind() + " launcher, hosts " + where);
  }
  return Status::ok();
}

Status RunSession::prepare() {
  // The run's local directory (the launcher writes the spec file into it, or onto the
  // server's host).
  m_dir = tempRunDir();
  if (m_dir.empty()) {
    (void)m_recorder->finish(RunStatus::Failed, "cannot create a temporary run directory");
    return Status::error("runner: cannot create a temporary run directory");
  }
  if (auto st = prepareSecurity(); !st) return failRun(st.message());
  if (auto st = prepareLauncher(); !st) return failRun(st.message());

  // Before the pump: node lines are recorded too (a worker's work through an outage).
  m_recording = std::make_unique<EventRecording>(*m_recorder, m_workerNames, m_spec.stop());
  m_pump = std::make_unique<OutputPump>(
      [this](const std::string& node, bool isStderr, const std::string& line) { onLine(node, isStderr, line); });
  RunNodes::Config config;
  config.runId = m_runId;
  config.spec = &m_spec;
  config.workerNames = m_workerNames;
  config.serverNames = m_serverNames;
  config.placement = &*m_placement;
  config.launcher = m_launcher.get();
  config.env = m_nodeEnv;
  if (m_security.tls) {
    // The files are read where each node runs.
    config.tlsClientArgs = {"--tls-cert", m_spec.security().tls_cert()};
    config.tlsServerArgs = {"--tls-cert", m_spec.security().tls_cert(), "--tls-key", m_spec.security().tls_key()};
  }
  config.specPathOn = m_specPathOn;
  // Checkpoints go to a folder of this run (never restore another run's checkpoints), on
  // the server's host: the run's directory there unless the spec names one.
  const auto& recovery = m_spec.recovery();
  if (recovery.mode() == v1::RecoverySpec::CHECKPOINT) {
    const std::string base = recovery.checkpoint_dir().empty()
                                 ? m_launcher->runDir(m_placement->hostOf(m_serverNames.front())) + "/checkpoints"
                                 : recovery.checkpoint_dir();
    config.checkpointDir = base + "/run-" + std::to_string(m_runId);
  }
  config.startTimeoutS = m_options.startTimeoutS;
  if (!m_options.recordDir.empty()) {
    config.recordDir = m_options.recordDir + "/run-" + std::to_string(m_runId);
    std::error_code ec;
    std::filesystem::create_directories(config.recordDir, ec);
    if (ec) return failRun("cannot create the update record directory " + config.recordDir + ": " + ec.message());
  }
  m_nodes = std::make_unique<RunNodes>(std::move(config), *m_pump, *m_recorder, m_lines);
  return Status::ok();
}

// Every node line: a server's address and size, traffic figures, recovery lines for the
// tracker; all of it into the node's log.
void RunSession::onLine(const std::string& node, bool isStderr, const std::string& line) {
  std::smatch m;
  if (isServer(node) && std::regex_search(line, m, kListening)) {
    std::lock_guard<std::mutex> lock(m_lines.mu);
    m_lines.listen[node] = m[1].str();
    m_lines.parameters = std::stoll(m[2].str());
    m_lines.trainCount = std::stoll(m[3].str());
    m_lines.cv.notify_all();
  } else if (std::regex_search(line, m, kNodeStats)) {
    std::lock_guard<std::mutex> lock(m_lines.mu);
    m_lines.bytes[node] = {std::stoll(m[1].str()), std::stoll(m[2].str())};
  } else if (std::regex_search(line, m, kSlurmStep)) {
    std::lock_guard<std::mutex> lock(m_lines.mu);
    m_lines.slurmSteps[node] = m[1].str() + "." + m[2].str();
  } else if (auto report = parseRecoveryLine(line)) {
    const double now = m_clock.now();
    m_tracker.observeRecovery(node, *report, now);
    if (report->kind == RecoveryReport::Kind::OutageProgress) relayOfflineWork(node, *report, now);
  }
  if (isServer(node) && isStderr) {
    std::lock_guard<std::mutex> lock(m_lines.mu);
    m_lines.serverStderrTail = line;
  }
  LogRow row;
  row.runId = m_runId;
  row.node = node;
  row.stream = isStderr ? "stderr" : "stdout";
  row.line = line;
  m_recorder->record(row);
}

// A worker's outage progress as the event the lanes draw, into the store and the live view.
void RunSession::relayOfflineWork(const std::string& node, const RecoveryReport& report, double now) {
  const auto at = std::find(m_workerNames.begin(), m_workerNames.end(), node);
  if (at == m_workerNames.end()) return;
  pb::EventBatch batch;
  auto* e = batch.add_events();
  e->set_kind(pb::ClusterEvent::OFFLINE_WORK);
  e->set_t_s(now);
  e->set_rank(static_cast<int>(at - m_workerNames.begin()));
  e->set_period_s(std::min(report.periodS, now));
  e->set_count(report.computed);
  e->set_outage_s(report.outageS);
  m_recording->record(batch);
  if (m_options.onEvents) m_options.onEvents(m_runId, batch);
}

Status RunSession::startNodes() {
  // 1. The server (or the chain of replicas, tail first: each is told its successor).
  std::string failure;
  if (auto st = m_nodes->startServers(m_chain); !st) failure = st.message();
  const auto& recovery = m_spec.recovery();
  say("run " + std::to_string(m_runId) + ": " + m_spec.strategy().name() + ", " +
      std::to_string(m_workerNames.size()) + " workers, seed " + std::to_string(m_spec.seed()) +
      (recovery.mode() != v1::RecoverySpec::NONE || m_spec.faults_size() > 0 ? ", recovery " + m_recovery
                                                                              : std::string()));
  if (!failure.empty()) {
    m_nodes->finish(1.0);
    m_pump->drainAndStop();
    return failRun(failure);
  }

  // 2. The event stream, re-subscribed whenever the head changes or restarts.
  m_watcher = std::make_unique<EventWatcher>(m_lines, m_security, &m_clock, [this](const pb::EventBatch& batch) {
    m_recording->record(batch);
    m_tracker.observe(batch, [this](int rank) { return m_nodes->nameOf(rank); });
    if (m_options.onEvents) m_options.onEvents(m_runId, batch);
  });
  m_watcher->start(m_nodes->addressOf(m_serverNames.front()));
  if (m_spec.ps().shards() > 1) {
    // Every other shard and every replica: a replica's load (the ranges it takes, the steps
    // it carries out) is what a standby costs, and once promoted it serves the shard.
    for (std::size_t i = 1; i < m_serverNames.size(); ++i) {
      m_shardWatchers.push_back(std::make_unique<EventWatcher>(m_lines, m_security, nullptr, [this](const pb::EventBatch& batch) {
        pb::EventBatch loads;
        for (const auto& e : batch.events()) {
          if (e.kind() == pb::ClusterEvent::SHARD_LOAD) *loads.add_events() = e;
        }
        if (loads.events_size() == 0) return;
        m_recording->record(loads);
        if (m_options.onEvents) m_options.onEvents(m_runId, loads);
      }));
      m_shardWatchers.back()->start(m_nodes->addressOf(m_serverNames[i]));
    }
  }
  m_control = std::make_unique<ServerControl>(m_lines, m_security, *m_watcher);
  auto sayFn = [this](const std::string& text) { say(text); };
  m_chainMaster = std::make_unique<ChainMaster>(m_runId, *m_nodes, *m_watcher, *m_control, *m_recorder, sayFn);
  m_chainMaster->reset(m_serverNames);
  m_drills = std::make_unique<RunDrills>(m_runId, m_spec, *m_nodes, *m_chainMaster, *m_control, m_tracker,
                                         *m_recorder, sayFn);

  // 3. Workers and the evaluator. A failure here is reported after the stop below.
  for (int r = 0; r < static_cast<int>(m_workerNames.size()) && m_failure.empty(); ++r) {
    if (auto st = m_nodes->startWorker(r); !st) m_failure = st.message();
  }
  if (m_failure.empty()) {
    if (auto st = m_nodes->startEvaluator(); !st) m_failure = st.message();
  }
  return Status::ok();
}

void RunSession::applyLiveActions(double runT) {
  if (m_options.control == nullptr) return;
  for (const auto& action : m_options.control->take()) {
    if (auto done = m_drills->apply(action, runT)) {
      m_recorder->record(actionRow(m_runId, runT, v1::RunEvent::CONTROL, action.node, std::move(*done)));
    }
  }
}

void RunSession::handleExit(const std::string& name, NodeProcess& child, double runT) {
  const std::string what = name + " " + child.exitInfo()->describe();
  m_recorder->record(EventRow{m_runId, runT, v1::RunEvent::EXIT, name, what, v1::RunEvent::EXITED, {}});
  const bool expected = m_drills->takeExpectedExit(name);
  if (isServer(name)) {
    if (m_chain) {
      if (!m_chainMaster->leave(name, runT)) m_failure = "every server replica exited";
    } else if (!expected || !(m_tracker.restartPending(name) || m_drills->restartsWithAShard(name) ||
                               shardChainGoesOn(name))) {
      std::lock_guard<std::mutex> lock(m_lines.mu);
      m_failure = name + " exited during the run: " + child.exitInfo()->describe() +
                  (m_lines.serverStderrTail.empty() ? "" : " (" + m_lines.serverStderrTail + ")");
    }
  } else if (name == "evaluator") {
    if (!expected || !m_tracker.restartPending(name)) {
      m_failure = "evaluator exited during the run: " + child.exitInfo()->describe();
    }
  } else {
    // A worker vanished: the server stops waiting for it; training goes on.
    say("run " + std::to_string(m_runId) + ": " + what + "; marking it down");
    pb::ControlRequest req;
    req.set_action(pb::ControlRequest::MARK_DOWN);
    req.set_rank(m_nodes->rankOf(name));
    pb::ControlReply rep;
    (void)m_control->head(req, rep);
    bool anyWorker = false;
    for (const auto& w : m_workerNames) {
      NodeProcess* p = m_nodes->process(w);
      anyWorker = anyWorker || (p != nullptr && p->running()) || m_tracker.restartPending(w);
    }
    if (!anyWorker) m_failure = "every worker exited";
  }
}

void RunSession::handleExits(double runT) {
  for (auto& [name, child] : m_nodes->processes()) {
    bool& reported = m_reportedExit[name];
    if (reported && !child->running()) continue;
    if (!child->poll()) {
      reported = false;  // a restarted node
      continue;
    }
    if (reported) continue;
    reported = true;
    handleExit(name, *child, runT);
  }
}

// Watches the stop condition, the drills, the processes and the cancel flag.
std::string RunSession::watch() {
  const auto& stop = m_spec.stop();
  const double trainCount = static_cast<double>(std::max<std::int64_t>(1, m_lines.trainCount));
  std::string stopReason;
  while (m_failure.empty() && stopReason.empty()) {
    m_watcher->waitForEvents(std::chrono::milliseconds(100));
    const auto f = m_recording->figures();
    // Run time keeps going while no server is up (no events then).
    const double runT = std::max(f.lastT, m_clock.now());
    if (m_options.cancel && m_options.cancel->load()) stopReason = "cancelled";
    else if (f.divergence) stopReason = "diverged";
    else if (f.targetT && stop.stop_at_target()) stopReason = "target";
    else if (stop.max_seconds() > 0 && runT >= stop.max_seconds()) stopReason = "max_seconds";
    else if (stop.max_updates() > 0 && f.version >= stop.max_updates()) stopReason = "max_updates";
    else if (stop.epochs() > 0 && static_cast<double>(f.samples) / trainCount >= stop.epochs()) stopReason = "epochs";
    if (!stopReason.empty()) break;
    m_drills->completeStarts(runT);
    applyLiveActions(runT);
    // Fault drills, once the run's clock runs (every worker has joined).
    if (f.lastT > 0) m_drills->fireDue(runT);
    m_drills->takeCpuFigures();
    handleExits(runT);
    noteStoreHealth(runT);
  }
  m_drills->abandonStarts(m_clock.now());
  return stopReason;
}

void RunSession::noteStoreHealth(double runT) {
  const auto h = m_recorder->health();
  if (h.full == m_storeFull) return;
  m_storeFull = h.full;
  std::string text;
  if (h.full) {
    text = "the run store is full (" + h.error + "): its rows are kept in memory (" + std::to_string(h.heldRows) +
           " so far) and written again every second";
  } else {
    text = "the run store has room again after " + std::to_string(h.fullSeconds).substr(0, 5) + " s: the " +
           std::to_string(h.heldMax) + " rows held were written (" + std::to_string(h.lostRows) + " lost)";
  }
  say("run " + std::to_string(m_runId) + ": " + text);
  m_recorder->record(EventRow{m_runId, runT, v1::RunEvent::RECOVERY, "store", text,
                              h.full ? v1::RunEvent::STORE_FULL : v1::RunEvent::STORE_WRITABLE, {}});
}

// The server answers every pull with stop; the evaluator does its final evaluation; then
// every process is shut down. A cancelled run (SIGTERM or SIGINT: scancel, a Slurm time
// limit, Ctrl-C) stops within about 20 s in all, whatever its nodes do: under Slurm they
// got the same signal, and the batch script copies the store back only after the runner
// has ended, before Slurm's KILL (KillWait, 30 s by default).
void RunSession::stopNodes(bool cancelled) {
  const double controlS = cancelled ? 2.0 : 5.0, evaluatorS = cancelled ? 3.0 : 120.0;
  const double nodesS = cancelled ? 3.0 : 30.0, serverS = cancelled ? 3.0 : 10.0;
  // A node paused from the GUI must run again to stop cleanly.
  for (auto& [name, child] : m_nodes->processes()) child->signal(SIGCONT);
  pb::ControlRequest req;
  req.set_action(pb::ControlRequest::STOP);
  req.set_rank(-1);
  pb::ControlReply rep;
  const bool stopped = m_control->head(req, rep, controlS).ok();
  if (!stopped) {
    // No server to answer with stop (the run ended during an outage): nodes stop on SIGTERM.
    for (auto& [name, child] : m_nodes->processes()) {
      if (!isServer(name)) child->signal(SIGTERM);
    }
  }
  if (NodeProcess* evaluator = m_nodes->process("evaluator"); evaluator && m_failure.empty() && stopped) {
    evaluator->waitFor(evaluatorS);
  }
  m_nodes->finish(nodesS, serverS);
  m_watcher->stop();
  for (auto& w : m_shardWatchers) w->stop();
  m_pump->drainAndStop();
}

bool RunSession::isCancelled(const std::string& stopReason) const {
  return stopReason == "cancelled" || (m_options.cancel && m_options.cancel->load());
}

// The cluster as this run measured it, stored with the run (dasp profile, dasp predict and
// the workbench's prediction read it back). Its records are flushed first. None for a run
// too short to profile, or while the store's disk is full.
std::optional<SummaryRow> RunSession::measuredProfileRow() {
  if (!m_recorder->flush()) return std::nullopt;
  auto profile = measureRecordedProfile(*m_store, m_runId, m_spec.batch_size());
  if (!profile) return std::nullopt;
  return SummaryRow{kProfileSummaryKey, std::nullopt, profileJson(profile.value())};
}

Result<RunSummary> RunSession::summarize(const std::string& stopReason) {
  const auto f = m_recording->figures();
  m_nodes->recordFinalRows();
  const double trainCount = static_cast<double>(std::max<std::int64_t>(1, m_lines.trainCount));
  RunSummary summary;
  summary.runId = m_runId;
  summary.strategy = m_spec.strategy().name();
  summary.recovery = m_recovery;
  summary.seed = m_spec.seed();
  summary.workers = static_cast<int>(m_workerNames.size());
  // Cancelled by the time the nodes are stopped: a node that exited first went with the
  // same cancellation (scancel signals the runner and every job step at once, and a
  // step's exit may be seen before the runner's own signal).
  const bool cancelled = isCancelled(stopReason);
  if (cancelled && !m_failure.empty()) {
    say("run " + std::to_string(m_runId) + ": cancelled (before that: " + m_failure + ")");
    m_failure.clear();
  }
  summary.stopReason = !m_failure.empty() ? "failed" : cancelled ? "cancelled" : stopReason;
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
  summary.speedChangeDip = speedChangeDip(m_spec, m_tracker.evaluations());
  if (const auto records = m_tracker.records(); !records.empty()) {
    summary.faults = computeRecoveryMetrics(records, m_tracker.evaluations(), summary.finalAccuracy);
    m_recorder->recordFaults(summary.faults);
  }
  summary.wallS = m_clock.now();
  auto rows = summaryRows(summary, m_spec);
  if (const auto h = m_recorder->health(); h.heldMax > 0 || h.lostRows > 0) {
    // The store's own recovery figures: how long its disk was full, what it held, what it lost.
    rows.push_back({"store_full_s", h.fullSeconds, ""});
    rows.push_back({"store_rows_held_max", static_cast<double>(h.heldMax), ""});
    rows.push_back({"store_rows_lost", static_cast<double>(h.lostRows), ""});
  }
  if (auto profile = measuredProfileRow()) rows.push_back(std::move(*profile));
  m_recorder->setSummary(rows);
  const RunStatus status = !m_failure.empty() ? RunStatus::Failed
                           : cancelled        ? RunStatus::Stopped
                           : f.divergence     ? RunStatus::Diverged
                                              : RunStatus::Completed;
  summary.status = toString(status);
  if (status == RunStatus::Diverged) {
    summary.divergence = f.divergence;
    m_recorder->record(EventRow{m_runId, f.divergence->tS, v1::RunEvent::TRAINING, "cluster",
                                "diverged: " + f.divergence->describeWithLoss(), v1::RunEvent::DIVERGED, {}});
    say("run " + std::to_string(m_runId) + ": diverged: " + f.divergence->describeWithLoss());
  }
  auto finished = m_recorder->finish(status, m_failure, summary.divergence);
  if (!m_failure.empty()) return Status::error("run " + std::to_string(m_runId) + ": " + m_failure);
  if (!finished) return finished;
  return summary;
}

Result<RunSummary> RunSession::run() {
  if (auto st = checkFaultNodes(); !st) return st;
  // A SLURM spec without hosts: the nodes of its allocation.
  const std::string jobName = "dasp-" + (m_spec.name().empty() ? std::string("run") : m_spec.name());
  if (auto st = placeOnSlurmAllocation(m_spec, jobName, m_allocation); !st) return st;
  // Where each node runs (spec.launch; without hosts, everything on this machine).
  auto placement = placeNodes(m_spec, m_serverNames, m_workerNames, m_options.daspBinary);
  if (!placement) return placement.status();
  m_placement = std::move(placement).value();
  // The store first: a run we cannot record is not started.
  if (auto st = open(); !st) return st;
  if (auto st = prepare(); !st) return st;
  if (auto st = startNodes(); !st) return st;
  const std::string stopReason = watch();
  const bool cancelled = isCancelled(stopReason);
  if (cancelled) say("run " + std::to_string(m_runId) + ": cancelled; stopping its nodes");
  stopNodes(cancelled);
  return summarize(stopReason);
}

Result<RunSummary> runExperiment(const ExperimentSpec& spec, const RunnerOptions& options) {
  RunSession session(spec, options);
  return session.run();
}

}  // namespace dasp::net
