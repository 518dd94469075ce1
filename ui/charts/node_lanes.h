// SPDX-License-Identifier: MIT
#pragma once
// NodeLanes: the timeline of one run, one lane per worker (and, above them, a thin lane per
// shard of a sharded server: the share of each period it spent applying and serving,
// from its SHARD_LOAD reports). Each worker lane shows the node's
// state over time (COMPUTE, PUSH, WAIT, PULL, DOWN, IDLE in a fixed colour-blind-friendly
// palette; OFFLINE while it computes with no server answering, labelled with its backlog
// or local steps so far), a thin strip above it with the node's parallel state (SYNC, ASYNC, DOWN), and
// the policy's decisions that changed something (state changes, barrier timeouts, drops:
// core marksTimeline(); re-partitions and grants are records, not markers) and the run's
// events as markers (cluster-wide ones on the "cluster" lane at the top) whose tooltip
// gives the decision and its reason.
//
// Painted with QPainter rather than Qt Charts: a run has hundreds of thousands of
// intervals, and each paint only visits those in the visible window (binary search on a
// per-node index) and draws at most one rectangle per pixel column: intervals shorter than
// a pixel are merged and the pixel gets the state that covers most of it.
//
// The window is either follow mode (the last N seconds of the run, for a live run) or a
// fixed [t0, t1]: the wheel zooms around the mouse, a drag pans, a double click shows the
// whole run; any of these leaves follow mode and emits windowChanged. Hovering and
// clicking the plot emit the time under the mouse (timeHovered, timeClicked).
//
// Threading: GUI thread only. The RunData is not owned; it must outlive the widget or be
// replaced with setRun(nullptr) first, and refresh() is called after it grows.

#include "ui/charts/run_data.h"

#include <QColor>
#include <QRect>
#include <QString>
#include <QWidget>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace dasp::ui {

class NodeLanes : public QWidget {
  Q_OBJECT

 public:
  explicit NodeLanes(QWidget* parent = nullptr);
  ~NodeLanes() override;

  void setRun(const RunData* run);
  const RunData* run() const { return m_run; }
  // A fixed window [t0, t1] in seconds of run time (leaves follow mode).
  void setWindow(double t0, double t1);
  // Follow mode: the window is the last `seconds` of the run (at least [0, seconds]).
  void setFollow(double seconds);
  bool following() const { return m_follow; }
  double windowStart() const;
  double windowEnd() const;
  // The time cursor, a vertical line across the lanes; NaN hides it.
  void setCursor(double t);
  using QWidget::setCursor;
  void setCursor(Qt::CursorShape) = delete;  // would silently convert to a time
  double cursorTime() const { return m_cursor; }
  // Re-reads the run (cheap: only repaints; call it after the RunData grew).
  void refresh();

  static QColor stateColor(NodeState state);
  static QColor parallelColor(Parallel parallel);
  // A shard lane's colour for the share of a period spent applying (true) or serving.
  static QColor shardLoadColor(bool applying);

  // Geometry, for hit tests, tests and the report.
  double xForTime(double t) const;
  double timeForX(double x) const;
  QRect laneRect(int lane) const;   // the state body of worker lane `lane`
  QRect stripRect(int lane) const;  // the parallel-state strip above it
  QRect clusterLaneRect() const;
  QRect shardLaneRect(int shard) const;  // a sharded server's shard `shard` (0 decides)
  QRect plotRect() const;           // the area the lanes' time axis spans
  // The tooltip shown at `pos`: the decisions/events near it, else the lane's state.
  QString toolTipAt(const QPoint& pos) const;

  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 Q_SIGNALS:
  // The user zoomed, panned or reset the window.
  void windowChanged(double t0, double t1);
  // The time-cursor hook (LiveCharts shares one cursor between the charts): the mouse is
  // over run time t of the plot (NaN: it left it), or clicked there without dragging.
  void timeHovered(double t);
  void timeClicked(double t);

 protected:
  bool event(QEvent* event) override;
  void paintEvent(QPaintEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void mouseDoubleClickEvent(QMouseEvent* event) override;
  void leaveEvent(QEvent* event) override;

 private:
  // Per-node bookkeeping so a paint can binary-search the intervals: updated
  // incrementally as a live RunData grows.
  struct LaneIndex {
    QString name;
    std::size_t seen = 0;
    bool sorted = true;
    double lastT0 = 0;
    double maxDuration = 0;
  };
  struct Marker {
    double t = 0;
    int lane = -1;  // -1: the cluster lane
    bool isEvent = false;
    std::size_t index = 0;  // into decisions or events
  };

  int laneHeight() const;
  int laneCount() const;
  int shardCount() const;
  int shardsHeight() const;  // the shard lanes' band, between the cluster lane and the workers'
  int laneOf(const QString& node) const;
  const LaneIndex& index(int lane) const;
  // [first, last) of the node's intervals that may overlap [t0, t1].
  std::pair<std::size_t, std::size_t> candidates(int lane, double t0, double t1) const;
  std::vector<Marker> markers(double t0, double t1) const;
  void paintLane(QPainter& p, int lane, double t0, double t1) const;
  void paintOfflineCounts(QPainter& p, int lane, std::size_t first, std::size_t last, double t0,
                          double pxPerS) const;
  // The worker's work without a server as of the report at or after t (nullopt: none).
  static std::optional<std::int64_t> offlineCountAt(const NodeData& node, double t);
  QString offlineText(const NodeData& node, double t) const;
  void paintShard(QPainter& p, int shard, double t0, double t1) const;
  QString shardToolTip(int shard, double t) const;
  void paintAxis(QPainter& p, double t0, double t1) const;
  int legendRows(QPainter* p) const;
  int legendHeight() const;
  void setWindowByUser(double t0, double t1);

  const RunData* m_run = nullptr;
  bool m_follow = true;
  double m_followSeconds = 30;
  double m_t0 = 0, m_t1 = 30;
  double m_cursor;
  mutable std::vector<LaneIndex> m_index;
  mutable std::vector<std::array<float, kNodeStates.size()>> m_cover;  // per-pixel coverage, reused
  bool m_dragging = false;
  bool m_dragMoved = false;  // the press moved more than a click's few pixels
  int m_dragX = 0;
  double m_dragT0 = 0, m_dragT1 = 0;
};

}  // namespace dasp::ui
