// SPDX-License-Identifier: MIT
#include "ui/live/run_controller.h"

#include "core/common/run_lines.h"
#include "core/store/run_store.h"
#include "net/launch/process.h"
#include "ui/live/live_run_feed.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QMetaObject>

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <utility>

namespace dasp::ui {

RunController::RunController(LiveRunFeed* feed, QObject* parent) : QObject(parent), m_feed(feed) {}

RunController::~RunController() { stopAndWait(); }

QString RunController::daspBinary() {
  const QString fromEnv = qEnvironmentVariable("DASP_BIN");
  if (!fromEnv.isEmpty()) return fromEnv;
  return QCoreApplication::applicationDirPath() + QStringLiteral("/dasp");
}

bool RunController::start(std::vector<PlannedRun> plan, const QString& dbPath, QString* error) {
  auto refuse = [&](const QString& why) {
    if (error) *error = why;
    return false;
  };
  if (m_running) return refuse(tr("A run is already going; stop it first."));
  if (plan.empty()) return refuse(tr("Nothing to run."));
  const QString binary = daspBinary();
  if (!QFileInfo(binary).isExecutable()) {
    return refuse(tr("Cannot find the dasp binary at %1 (set DASP_BIN to its path).").arg(binary));
  }
  joinThread();  // a plan that just ended, whose finish notification is still queued
  m_cancel.store(false);
  (void)m_control.take();  // nothing requested for an earlier run carries over
  m_currentRunId.store(0);
  m_currentIndex.store(-1);
  m_plan = plan;
  m_running = true;
  ++m_generation;
  m_thread = std::thread(&RunController::threadMain, this, std::move(plan), dbPath.toStdString(),
                         binary.toStdString(), QDir::tempPath().toStdString(), m_generation);
  return true;
}

bool RunController::currentRunIsSim() const {
  if (!m_running || m_plan.empty()) return false;
  // Before the thread took the first run the index is -1: the plan's engine is one.
  const auto index = static_cast<std::size_t>(std::max(0, m_currentIndex.load()));
  return index < m_plan.size() && isSimSpec(m_plan[index].spec);
}

void RunController::threadMain(std::vector<PlannedRun> plan, std::string dbPath, std::string binary,
                               std::string tempDir, int generation) {
  // Runs on the background thread: everything that reaches the GUI is queued to `this`.
  auto post = [this](auto&& fn) { QMetaObject::invokeMethod(this, std::forward<decltype(fn)>(fn), Qt::QueuedConnection); };
  auto noteRun = [this, post](std::int64_t runId) {
    if (m_currentRunId.exchange(runId) == runId) return;
    m_feed->runCreated(runId);
    post([this, runId] { Q_EMIT runStarted(runId); });
  };

  net::RunnerOptions options;
  options.daspBinary = binary;
  options.dbPath = dbPath;
  options.cancel = &m_cancel;
  options.control = &m_control;
  options.onRunCreated = noteRun;
  options.onEvents = [this, noteRun](std::int64_t runId, const dasp::ps::v1::EventBatch& batch) {
    noteRun(runId);  // idempotent; covers a runner that reports events before the id
    m_feed->push(runId, batch);
  };
  options.log = [post, this](const std::string& line) {
    const QString text = QString::fromStdString(line);
    post([this, text] { Q_EMIT logLine(text); });
  };

  const int total = static_cast<int>(plan.size());
  for (int i = 0; i < total && !m_cancel.load(); ++i) {
    const PlannedRun& run = plan[static_cast<std::size_t>(i)];
    m_currentIndex.store(i);
    const QString label = QString::fromStdString(run.label) +
                          QStringLiteral(" seed %1").arg(static_cast<qulonglong>(run.spec.seed()));
    post([this, i, total, label] { Q_EMIT runPlanned(i, total, label); });
    Outcome outcome;
    if (isSimSpec(run.spec)) {
      outcome = runSimChild(run.spec, dbPath, binary, tempDir);
    } else {
      m_feed->beginRun(run.spec);
      Result<net::RunSummary> result = net::runExperiment(run.spec, options);
      outcome.runId = result ? result->runId : m_currentRunId.load();
      outcome.status = result ? QString::fromStdString(result->status) : QStringLiteral("failed");
      outcome.error = result ? QString() : QString::fromStdString(result.message());
    }
    m_currentRunId.store(0);
    post([this, outcome] { Q_EMIT runFinished(outcome.runId, outcome.status, outcome.error); });
  }
  post([this, generation] { onThreadDone(generation); });
}

namespace {

// Writes `text` to the file descriptor, whole.
bool writeAll(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

QString errnoText(int err) { return QString::fromLocal8Bit(std::strerror(err)); }

// Removes the temporary spec file on every way out of runSimChild().
struct RemoveFile {
  std::string path;
  ~RemoveFile() {
    if (!path.empty()) ::unlink(path.c_str());
  }
};

constexpr double kTermAfterS = 10;  // SIGINT, then SIGTERM this long after
constexpr double kKillAfterS = 5;   // and SIGKILL this long after that

}  // namespace

RunController::Outcome RunController::runSimChild(const ExperimentSpec& spec, const std::string& dbPath,
                                                  const std::string& binary, const std::string& tempDir) {
  // Runner thread. Output lines arrive on the pump's thread; both only post to `this`.
  auto post = [this](auto&& fn) { QMetaObject::invokeMethod(this, std::forward<decltype(fn)>(fn), Qt::QueuedConnection); };
  auto log = [this, post](const QString& text) { post([this, text] { Q_EMIT logLine(text); }); };
  Outcome out;
  out.status = QStringLiteral("failed");

  // The planned spec (resolved, one seed, no suite), so the child runs exactly this run.
  std::string pattern = (tempDir.empty() ? std::string("/tmp") : tempDir) + "/dasp-sim-XXXXXX.json";
  const int fd = ::mkstemps(pattern.data(), 5);
  if (fd < 0) {
    out.error = tr("Cannot write the sim run's spec into %1: %2").arg(QString::fromStdString(tempDir), errnoText(errno));
    return out;
  }
  RemoveFile specFile{pattern};
  const bool written = writeAll(fd, specToJson(spec) + "\n");
  const int writeErrno = errno;
  if (::close(fd) != 0 || !written) {
    out.error = tr("Cannot write the sim run's spec %1: %2").arg(QString::fromStdString(pattern), errnoText(writeErrno));
    return out;
  }

  const std::vector<std::string> argv{binary, "run", pattern, "--db", dbPath, "--quiet"};
  log(tr("sim run: %1 run %2 --db %3 --quiet")
          .arg(QString::fromStdString(binary), QString::fromStdString(pattern), QString::fromStdString(dbPath)));
  auto child = net::ChildProcess::spawn("dasp run", argv);
  if (!child) {
    out.error = tr("Cannot start %1: %2").arg(QString::fromStdString(binary), QString::fromStdString(child.message()));
    return out;
  }

  std::string lastError;  // written on the pump's thread, read after drainAndStop() joined it
  net::OutputPump pump([&](const std::string&, bool isStderr, const std::string& line) {
    if (isStderr && line.rfind(kRunCreatedPrefix, 0) == 0) {
      const std::int64_t runId = std::strtoll(line.c_str() + sizeof kRunCreatedPrefix - 1, nullptr, 10);
      if (runId > 0) {
        if (m_currentRunId.exchange(runId) != runId) post([this, runId] { Q_EMIT runStarted(runId); });
        return;
      }
    }
    if (isStderr && line.rfind(kRunProgressPrefix, 0) == 0) return;  // one run: nothing to show
    if (isStderr && line.rfind(kErrorPrefix, 0) == 0) lastError = line.substr(sizeof kErrorPrefix - 1);
    log(QString::fromStdString(line));
  });
  pump.add("dasp", child.value()->stdoutFd(), false);
  pump.add("dasp", child.value()->stderrFd(), true);

  // Wait for the child; a cancel asks it to stop (it records the run as stopped), and
  // insists if it does not go.
  using Clock = std::chrono::steady_clock;
  int signalsSent = 0;
  Clock::time_point signalledAt;
  net::ExitInfo ended;
  while (true) {
    if (auto e = child.value()->waitFor(0.1)) {
      ended = *e;
      break;
    }
    if (!m_cancel.load()) continue;
    const double since = std::chrono::duration<double>(Clock::now() - signalledAt).count();
    if (signalsSent == 0) {
      child.value()->signal(SIGINT);
      log(tr("sim run: stop requested (SIGINT to pid %1)").arg(child.value()->pid()));
    } else if (signalsSent == 1 && since >= kTermAfterS) {
      child.value()->signal(SIGTERM);
      log(tr("sim run: still going after %1 s: SIGTERM").arg(kTermAfterS));
    } else if (signalsSent == 2 && since >= kKillAfterS) {
      child.value()->signal(SIGKILL);
      log(tr("sim run: still going: SIGKILL"));
    } else {
      continue;
    }
    ++signalsSent;
    signalledAt = Clock::now();
  }
  pump.drainAndStop();

  const bool cancelled = m_cancel.load();
  const bool exitOk = ended.exitCode && *ended.exitCode == 0;
  const bool exitStopped = (ended.exitCode && *ended.exitCode == 130) || (cancelled && ended.signal.has_value());
  const QString childError = lastError.empty() ? QString() : QString::fromStdString(lastError);
  out.runId = m_currentRunId.load();
  if (out.runId <= 0) {
    out.runId = 0;
    if (cancelled && !exitOk) {
      out.status = QStringLiteral("stopped");
      return out;
    }
    out.error = !childError.isEmpty() ? childError
                : exitOk ? tr("dasp run ended without creating a run (does this dasp binary run engine \"sim\"?)")
                         : tr("dasp run ended (%1) before it created a run").arg(QString::fromStdString(ended.describe()));
    return out;
  }

  // The run's status as the child recorded it. Opening the store marks a run its (gone)
  // writer left `running` as interrupted, so a killed child leaves no run that seems to go.
  auto store = RunStore::open(dbPath);
  Result<RunRow> row = store ? store.value()->run(out.runId) : Result<RunRow>(store.status());
  if (row) {
    out.status = QString::fromLatin1(toString(row->status));
    if (row->status == RunStatus::Running) {  // (only if the store could not tell the writer is gone)
      out.status = exitStopped ? QStringLiteral("stopped") : QStringLiteral("failed");
    }
    // A diverged run ended as the spec says it should: an outcome, not an error.
    if (out.status != QLatin1String("completed") && out.status != QLatin1String("stopped") &&
        out.status != QLatin1String(toString(RunStatus::Diverged))) {
      out.error = !childError.isEmpty()       ? childError
                  : !row->error.empty()       ? QString::fromStdString(row->error)
                  : tr("dasp run: %1").arg(QString::fromStdString(ended.describe()));
    }
    return out;
  }
  // The store cannot say: the exit does.
  out.status = exitOk ? QStringLiteral("completed") : exitStopped ? QStringLiteral("stopped") : QStringLiteral("failed");
  if (!exitOk && !exitStopped) {
    out.error = !childError.isEmpty() ? childError : tr("dasp run: %1").arg(QString::fromStdString(ended.describe()));
  }
  log(tr("sim run %1: cannot read its status from the store: %2").arg(out.runId).arg(QString::fromStdString(row.message())));
  return out;
}

void RunController::onThreadDone(int generation) {
  // stopAndWait() may already have joined and announced the end, and a new plan may run.
  if (!m_running || generation != m_generation) return;
  joinThread();
  m_running = false;
  m_currentIndex.store(-1);
  Q_EMIT finished();
}

void RunController::joinThread() {
  if (m_thread.joinable()) m_thread.join();
}

void RunController::stop() { m_cancel.store(true); }

void RunController::stopAndWait() {
  m_cancel.store(true);
  joinThread();
  if (m_running) {
    m_running = false;
    m_currentIndex.store(-1);
    Q_EMIT finished();
  }
}

bool RunController::refuseForSim(const QString& action) {
  if (!currentRunIsSim()) return false;
  Q_EMIT logLine(tr("not applied: %1 — a simulated run (engine sim) has no node processes to act on; "
                    "put speed changes and fault drills into its spec instead")
                     .arg(action));
  return true;
}

double RunController::profileSlowdown(const QString& node) const {
  const int index = m_currentIndex.load();
  if (index < 0 || index >= static_cast<int>(m_plan.size())) return 1.0;
  for (const auto& w : expandWorkers(m_plan[static_cast<std::size_t>(index)].spec)) {
    if (QString::fromStdString(w.name()) == node) return w.speed().slowdown();
  }
  return 1.0;
}

void RunController::slowDown(const QString& node, double k) {
  if (!m_running || !(k > 0)) return;
  if (refuseForSim(tr("slow %1 ×%2").arg(node).arg(k))) return;
  const double factor = k * profileSlowdown(node);
  m_control.slowDown(node.toStdString(), factor);
  Q_EMIT logLine(tr("requested: slow %1 ×%2 (slowdown %3)").arg(node).arg(k).arg(factor));
}

void RunController::restore(const QString& node) {
  if (!m_running) return;
  if (refuseForSim(tr("restore %1").arg(node))) return;
  m_control.restore(node.toStdString());
  Q_EMIT logLine(tr("requested: restore %1").arg(node));
}

void RunController::pause(const QString& node) {
  if (!m_running) return;
  if (refuseForSim(tr("pause %1").arg(node))) return;
  m_control.pause(node.toStdString());
  Q_EMIT logLine(tr("requested: pause %1").arg(node));
}

void RunController::resume(const QString& node) {
  if (!m_running) return;
  if (refuseForSim(tr("resume %1").arg(node))) return;
  m_control.resume(node.toStdString());
  Q_EMIT logLine(tr("requested: resume %1").arg(node));
}

void RunController::kill(const QString& node) {
  if (!m_running) return;
  if (refuseForSim(tr("kill %1").arg(node))) return;
  m_control.kill(node.toStdString());
  Q_EMIT logLine(tr("requested: kill %1").arg(node));
}

void RunController::killServer() { kill(QStringLiteral("server")); }

void RunController::restart(const QString& node) {
  if (!m_running || node.isEmpty()) return;
  if (refuseForSim(tr("restart %1").arg(node))) return;
  m_control.restart(node.toStdString());
  Q_EMIT logLine(tr("requested: restart %1").arg(node));
}

}  // namespace dasp::ui
