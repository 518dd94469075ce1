// SPDX-License-Identifier: MIT
#pragma once
// LiveCharts: the charts of the live view, composed from ui/charts/ — the node lanes on
// top (one lane per worker under the cluster lane: state over time, the parallel-state
// strip, decisions and run events as markers with their reason on hover), and below them
// the convergence chart (accuracy or loss against wall time or updates, with the run's
// faults and live actions as markers) beside the per-node bars (mean wait, mean
// staleness, throughput with the straggler flagged) and the staleness histogram.
//
// Two modes:
// - live (showLive): the lanes follow the last 20 s, the bars cover the last 10 s;
//   refresh() is called after every drain of the live feed (LivePanel::refreshed) and
//   only redraws what can have changed: the convergence series are re-read only when
//   evaluations or events arrived, and the bars and the histogram, which scan every
//   sample of the run, at most every 500 ms, so a long run does not cost the GUI thread
//   more on every tick.
// - replay (showReplay): a finished run from the store; the lanes show the whole run and a
//   time slider over [0, end] sets one cursor on the lanes and the convergence chart,
//   limits the bars to [0, t] and the histogram to the gradients applied by t, and emits
//   cursorMoved(t) so the node table can show the state at t.
//
// One time cursor is shared by the lanes, the convergence chart and the bars: hovering
// the lanes or the convergence chart shows the cursor at the time under the mouse in all
// of them (the bars then cover the kBarsSeconds before it while live, [0, t] in a replay),
// and leaving returns it to where it was (live: none); in a replay a click moves the
// slider's cursor there. The convergence chart's updates/samples axes are mapped to run
// time through the run's evaluations.
//
// Threading: GUI thread only. The RunData is not owned; it must outlive the widget or be
// replaced first (showLive/showReplay/setRun with another run or nullptr).

#include <QElapsedTimer>
#include <QWidget>

#include <cstddef>
#include <cstdint>

class QComboBox;
class QLabel;
class QPushButton;
class QSlider;

namespace dasp::ui {

class ConvergenceChart;
class NodeBars;
class NodeLanes;
class StalenessHistogram;
struct RunData;

class LiveCharts : public QWidget {
  Q_OBJECT

 public:
  static constexpr double kFollowSeconds = 20;   // the lanes' window while live
  static constexpr double kBarsSeconds = 10;     // the bars' window while live
  static constexpr int kSliderSteps = 1000;      // slider resolution over [0, end]

  explicit LiveCharts(QWidget* parent = nullptr);
  ~LiveCharts() override;

  // Live mode: follows the run as it grows.
  void showLive(const RunData* run);
  // Replay mode: the whole run, the cursor at its end.
  void showReplay(const RunData* run);
  bool isReplay() const { return m_replay; }
  const RunData* run() const { return m_run; }

  // Replay: moves the cursor (clamped to [0, end]) and the slider with it.
  void setCursorTime(double t);
  // The slider's cursor: NaN while live.
  double cursorTime() const { return m_cursor; }
  // The cursor the charts show: the hovered time, else cursorTime().
  double shownCursorTime() const;
  // The run time of an x value of the convergence chart's axis (NaN when unknown).
  double timeAtAxisX(double x) const;
  // Whether "Show Live Run" in the replay bar is enabled (a live run exists).
  void setLiveAvailable(bool available);

  NodeLanes* lanes() const { return m_lanes; }
  ConvergenceChart* convergence() const { return m_convergence; }
  NodeBars* bars() const { return m_bars; }
  StalenessHistogram* histogram() const { return m_histogram; }
  QSlider* timeSlider() const { return m_slider; }
  QComboBox* metricCombo() const { return m_metric; }
  QComboBox* xAxisCombo() const { return m_xAxis; }

 public Q_SLOTS:
  // Redraws after the RunData grew (live) or changed.
  void refresh();

 Q_SIGNALS:
  // Replay: the cursor moved to run time t.
  void cursorMoved(double t);
  // "Show Live Run" in the replay bar.
  void liveRequested();

 private:
  void setRun(const RunData* run);
  void applyCursor();
  void onSlider(int value);
  void onHover(double t);
  void onClick(double t);
  void updateReplayLabel();
  void fitAreas();
  double endTime() const;

  const RunData* m_run = nullptr;
  bool m_replay = false;
  double m_cursor;
  double m_hover;  // the time under the mouse on a chart (NaN: none)
  std::int64_t m_shownRunId = -1;
  std::size_t m_evaluationsSeen = 0, m_eventsSeen = 0;
  QElapsedTimer m_slowRefresh;  // when the bars and the histogram were last recomputed

  int m_fittedLanes = -1;  // lane count the scroll areas' heights were fitted to

  QWidget* m_replayBar = nullptr;
  QWidget* m_lanesArea = nullptr;
  QWidget* m_barsArea = nullptr;
  QLabel* m_replayLabel = nullptr;
  QSlider* m_slider = nullptr;
  QLabel* m_timeLabel = nullptr;
  QPushButton* m_liveButton = nullptr;
  QComboBox* m_metric = nullptr;
  QComboBox* m_xAxis = nullptr;
  NodeLanes* m_lanes = nullptr;
  ConvergenceChart* m_convergence = nullptr;
  NodeBars* m_bars = nullptr;
  StalenessHistogram* m_histogram = nullptr;
};

}  // namespace dasp::ui
