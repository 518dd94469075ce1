// SPDX-License-Identifier: MIT
#include "ui/run_controller.h"

#include "ui/live_run_feed.h"

#include <QCoreApplication>
#include <QFileInfo>
#include <QMetaObject>

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
                         binary.toStdString(), m_generation);
  return true;
}

void RunController::threadMain(std::vector<PlannedRun> plan, std::string dbPath, std::string binary,
                               int generation) {
  // Runs on the background thread: everything that reaches the GUI is queued to `this`.
  auto post = [this](auto&& fn) { QMetaObject::invokeMethod(this, std::forward<decltype(fn)>(fn), Qt::QueuedConnection); };
  auto noteRun = [this, post](std::int64_t runId) {
    if (m_currentRunId.exchange(runId) == runId) return;
    m_feed->runCreated(runId);
    post([this, runId] { Q_EMIT runStarted(runId); });
  };

  net::RunnerOptions options;
  options.daspBinary = std::move(binary);
  options.dbPath = std::move(dbPath);
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
    m_feed->beginRun(run.spec);
    Result<net::RunSummary> result = net::runExperiment(run.spec, options);
    const std::int64_t runId = result ? result->runId : m_currentRunId.load();
    const QString status = result ? QString::fromStdString(result->status) : QStringLiteral("failed");
    const QString errorText = result ? QString() : QString::fromStdString(result.message());
    m_currentRunId.store(0);
    post([this, runId, status, errorText] { Q_EMIT runFinished(runId, status, errorText); });
  }
  post([this, generation] { onThreadDone(generation); });
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
  const double factor = k * profileSlowdown(node);
  m_control.slowDown(node.toStdString(), factor);
  Q_EMIT logLine(tr("requested: slow %1 ×%2 (slowdown %3)").arg(node).arg(k).arg(factor));
}

void RunController::restore(const QString& node) {
  if (!m_running) return;
  m_control.restore(node.toStdString());
  Q_EMIT logLine(tr("requested: restore %1").arg(node));
}

void RunController::pause(const QString& node) {
  if (!m_running) return;
  m_control.pause(node.toStdString());
  Q_EMIT logLine(tr("requested: pause %1").arg(node));
}

void RunController::resume(const QString& node) {
  if (!m_running) return;
  m_control.resume(node.toStdString());
  Q_EMIT logLine(tr("requested: resume %1").arg(node));
}

void RunController::kill(const QString& node) {
  if (!m_running) return;
  m_control.kill(node.toStdString());
  Q_EMIT logLine(tr("requested: kill %1").arg(node));
}

void RunController::killServer() { kill(QStringLiteral("server")); }

void RunController::restart(const QString& node) {
  if (!m_running || node.isEmpty()) return;
  m_control.restart(node.toStdString());
  Q_EMIT logLine(tr("requested: restart %1").arg(node));
}

}  // namespace dasp::ui
