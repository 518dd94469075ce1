// SPDX-License-Identifier: MIT
#pragma once
// PredictDialog: "Predict other strategies on this cluster…" (issue 34). For one stored
// run it shows the cluster the run measured (each worker's compute per sample and its
// speed changes: core/results/cluster_profile.h, read from the store), then runs
// `dasp predict RUN_ID --json` in a child process: the virtual-cluster engine on that
// measured cluster, for the strategies and seeds chosen, each prediction stored as an
// engine run tagged predicted-from-RUN_ID. The engine needs LibTorch (real gradients),
// which the workbench must not link, hence the child, as for the workbench's sim runs.
//
// While it goes: a progress bar (the child's `dasp-run-progress DONE TOTAL` lines) and
// Cancel (SIGINT: the child ends the run in progress as stopped and prints what it has;
// SIGTERM and SIGKILL if it does not go). Then: the predicted time to target per strategy
// (mean ± std over the seeds, each run a dot, the reference a dashed line) with the
// measured run's own time marked at its strategy; "Launch <best> for real" hands the
// measured run's spec with the predicted best strategy to the main window (launch
// requested); "Compare" asks for the measured run and its predictions in the compare view.
//
// A run that cannot be profiled (too short, no pushes) says why and offers nothing to
// start. A child that fails shows its `dasp:` message.
//
// Threading: GUI thread only (the child is a QProcess of this thread).

#include "core/results/cluster_profile.h"
#include "ui/charts/time_to_target_bars.h"
#include "dasp/v1/results.pb.h"

#include <QDialog>
#include <QList>
#include <QProcess>
#include <QString>
#include <QStringList>

#include <cstdint>
#include <optional>
#include <vector>

class QCheckBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QTimer;

namespace dasp::ui {

// The bars of predicted runs (the lines of `dasp predict --json`): one per label, in
// first-seen order, at the mean time to target of the runs that reached it; the
// reference as the dashed line; `measured` (the measured run's time to target) marked at
// the bar labelled `measuredLabel`.
TargetBars predictionBars(const std::vector<v1::RunResult>& predicted, const QString& measuredLabel,
                          std::optional<double> measured);
// The label of the bar with the lowest mean time among those whose every run reached the
// target, the reference aside ("" when none).
QString bestPrediction(const TargetBars& bars);
// One line per worker: its compute per sample and, after a change, what it became.
QString describeProfile(const ClusterProfile& profile);

class PredictDialog : public QDialog {
  Q_OBJECT

 public:
  // The run `runId` of the store at `dbPath`; `daspBinary`: the `dasp` that predicts.
  PredictDialog(const QString& dbPath, std::int64_t runId, const QString& daspBinary, QWidget* parent = nullptr);
  // A child still running is stopped (SIGTERM, then SIGKILL): only when the main window
  // goes, as closing the dialog waits for its child without blocking (closeEvent).
  ~PredictDialog() override;

  // Starts the prediction (the Start button): false, with the reason in statusText(),
  // when the run has no profile, no strategy is chosen, the seeds do not parse, or the
  // child does not start.
  bool start();
  // Cancel: the child stops after the run in progress; what it predicted is shown.
  void cancel();
  bool isRunning() const { return m_process != nullptr; }

  QString statusText() const;
  const TargetBars& bars() const { return m_chart->bars(); }
  const std::vector<v1::RunResult>& predicted() const { return m_predicted; }
  QProgressBar* progressBar() const { return m_progress; }
  QPushButton* launchButton() const { return m_launch; }
  QLineEdit* seedsEdit() const { return m_seeds; }
  // The strategy check boxes (bsp, asp, ssp, dssp, backup, dasp) and the reference's.
  const std::vector<QCheckBox*>& strategyBoxes() const { return m_strategyBoxes; }
  QCheckBox* referenceBox() const { return m_reference; }

 Q_SIGNALS:
  // The prediction ended: completed, cancelled or failed (statusText() says which).
  void finished();
  // "Launch <best> for real": the measured run's spec with the best predicted strategy.
  void launchRequested(qint64 sourceRunId, const QString& specJson);
  // "Compare": the measured run and its predictions, for the compare view.
  void compareRequested(const QList<qint64>& runIds);

 private:
  void buildUi();
  void loadMeasuredRun();
  void onStdout();
  void onStderr();
  void onFinished(int exitCode, QProcess::ExitStatus status);
  void showPredictions();
  void requestLaunch();
  void setRunning(bool running);
  // Closing (the window's X, Esc, done()) while a prediction runs cancels it and hides the
  // dialog; the close completes (and WA_DeleteOnClose deletes it) once the child has
  // stopped and its runs are stored, so the GUI thread never waits on the child.
  void closeEvent(QCloseEvent* event) override;
  void done(int result) override;
  void closeWhenStopped();

  QString m_dbPath;
  std::int64_t m_runId;
  QString m_daspBinary;
  std::optional<ClusterProfile> m_profile;
  QString m_profileError;
  QString m_measuredLabel;          // the measured run's strategy, as the tables label it
  std::optional<double> m_measuredTime;
  QString m_measuredSpecJson;

  QProcess* m_process = nullptr;
  QTimer* m_insist = nullptr;       // SIGTERM, then SIGKILL, after a cancel
  int m_signalsSent = 0;
  bool m_cancelled = false;
  bool m_closeWhenStopped = false;  // closed while running: close once the child exits
  QByteArray m_stdout, m_stderrLine;
  QString m_lastError;
  std::vector<v1::RunResult> m_predicted;
  QString m_status;

  QLabel* m_header = nullptr;
  QLabel* m_speeds = nullptr;
  std::vector<QCheckBox*> m_strategyBoxes;
  QCheckBox* m_reference = nullptr;
  QLineEdit* m_seeds = nullptr;
  QProgressBar* m_progress = nullptr;
  QLabel* m_statusLabel = nullptr;
  TimeToTargetBars* m_chart = nullptr;
  QPushButton* m_start = nullptr;
  QPushButton* m_cancel = nullptr;
  QPushButton* m_launch = nullptr;
  QPushButton* m_compare = nullptr;
};

}  // namespace dasp::ui
