// SPDX-License-Identifier: MIT
#pragma once
// RunController: launches experiments from the workbench with the same runner as
// `dasp run` (net::runExperiment), on a background thread, and carries the GUI's live
// actions (slow a node ×k, restore, pause, resume, kill a node, kill the server, restart a
// killed node) to the runner, which executes and records each one as a run event (a kill
// or pause is recorded as a fault, with its recovery metrics at the end of the run).
//
// A launch is a plan: one run, or a suite expanded like the CLI does (entries × seeds,
// planRuns()), run in turn. The runner's event batches go to a LiveRunFeed (drained by the
// GUI on a timer); only low-rate notifications cross as queued signals: a run started, a
// run finished, progress lines.
//
// Closing the window mid-run calls stopAndWait(): it sets the cancel flag and joins the
// thread; the runner then stops the server, lets the evaluator finish, shuts every node
// down and marks the run `stopped` in the store.
//
// A planned run whose spec says engine "sim" is not run here: the simulator needs
// LibTorch (real gradients), which the workbench must not link. It runs in one child
// process, `dasp run <spec file> --db <store> --quiet`, with the resolved planned spec in a
// temporary file (removed when the child is gone). The child prints
// `dasp-run-created <id>` on stderr once the run is in the store (→ runStarted, as for a
// real run), writes the run's rows into the store as it goes (the main window follows it
// from there: there is no live event stream), and ends with exit code 0, or 1 and a
// `dasp: <message>` line (→ runFinished with the run's status from the store and that
// message). Cancel sends the child SIGINT (it records the run as `stopped`), then SIGTERM
// and SIGKILL if it does not go. The live actions act on a real run's node processes: a
// sim run has none, so they are refused with a message while one goes.
//
// Threading: a QObject of the GUI thread; every public method is for the GUI thread and
// every signal is delivered there (queued from the runner's threads). The runner thread
// must live as long as the run's children (they get PR_SET_PDEATHSIG, which follows the
// forking thread), which holds because runExperiment() blocks until they are gone.

#include "core/common/result.h"
#include "core/spec/spec.h"
#include "net/runner/runner.h"

#include <QObject>
#include <QString>

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

namespace dasp::ui {

class LiveRunFeed;

// A launch runs the plan `dasp run` makes (core/spec/spec.h: planRuns): suite entries × seeds,
// each validated with the CLI's messages and filled with defaults.
using ::dasp::PlannedRun;
using ::dasp::planRuns;

class RunController : public QObject {
  Q_OBJECT

 public:
  // `feed` receives the live events; it must outlive the controller.
  explicit RunController(LiveRunFeed* feed, QObject* parent = nullptr);
  ~RunController() override;  // stopAndWait()

  // The `dasp` executable that runs the nodes: $DASP_BIN when set, else the `dasp` next to
  // this application's binary.
  static QString daspBinary();

  // Starts the plan on the background thread, recording into `dbPath`. Refused (false,
  // with `error`) while a plan is running, for an empty plan, or without a `dasp` binary.
  bool start(std::vector<PlannedRun> plan, const QString& dbPath, QString* error = nullptr);
  // True from start() until finished() (or stopAndWait()).
  bool isRunning() const { return m_running; }
  // The run in progress (0 before the runner created it, and between runs).
  std::int64_t currentRunId() const { return m_currentRunId.load(); }
  // The number of runs in the current (or last) plan.
  int plannedRuns() const { return static_cast<int>(m_plan.size()); }
  // Whether a spec runs on the simulator (engine "sim"), in a `dasp run` child process.
  static bool isSimSpec(const ExperimentSpec& spec) { return spec.engine() == "sim"; }
  // True while the plan in progress is a simulated one (the engine is the base spec's, the
  // same for every run of a plan): the live actions do not apply.
  bool currentRunIsSim() const;

 public Q_SLOTS:
  // Asks the runner to stop the current run and skips the rest of the plan.
  void stop();
  // stop(), then blocks until the runner has shut every node down (window closing).
  void stopAndWait();

  // Live actions on the current run, by node name ("worker-2"). slowDown multiplies the
  // node's own slowdown (from the spec) by `k`; restore returns it to its profile.
  void slowDown(const QString& node, double k);
  void restore(const QString& node);
  void pause(const QString& node);
  void resume(const QString& node);
  void kill(const QString& node);
  void killServer();
  // Starts a killed node again: a server resumes under the spec's recovery mode (a chain
  // replica, named "server-N", rejoins at the tail), a worker rejoins with its rank.
  void restart(const QString& node);

 Q_SIGNALS:
  // Run `index` (0-based) of `total` begins (before the runner creates it).
  void runPlanned(int index, int total, const QString& label);
  // The runner created the run in the store.
  void runStarted(qint64 runId);
  // A run ended: status completed, stopped or failed (runId 0 when it never got one).
  void runFinished(qint64 runId, const QString& status, const QString& error);
  // The whole plan is over (or was stopped); isRunning() is false from here.
  void finished();
  // Progress lines of the runner, for the log view.
  void logLine(const QString& line);

 private:
  // How one run of the plan ended, for runFinished.
  struct Outcome {
    std::int64_t runId = 0;
    QString status;  // completed, stopped, failed
    QString error;
  };
  void threadMain(std::vector<PlannedRun> plan, std::string dbPath, std::string binary, std::string tempDir,
                  int generation);
  // Runs one sim run in a `dasp run` child and waits for it (runner thread).
  Outcome runSimChild(const ExperimentSpec& spec, const std::string& dbPath, const std::string& binary,
                      const std::string& tempDir);
  // A live action on a sim run: says why it does nothing and returns true.
  bool refuseForSim(const QString& action);
  void onThreadDone(int generation);
  void joinThread();
  double profileSlowdown(const QString& node) const;

  LiveRunFeed* m_feed;
  std::vector<PlannedRun> m_plan;
  std::thread m_thread;
  std::atomic<bool> m_cancel{false};
  std::atomic<std::int64_t> m_currentRunId{0};
  std::atomic<int> m_currentIndex{-1};
  net::RunControl m_control;
  bool m_running = false;
  int m_generation = 0;  // which plan a queued "thread done" belongs to
};

}  // namespace dasp::ui
