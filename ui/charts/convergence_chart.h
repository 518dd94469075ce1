// SPDX-License-Identifier: MIT
#pragma once
// ConvergenceChart: test accuracy or test loss of one or several runs (Qt Charts), for
// the live view, the compare view and the reports. The x axis is wall time, updates
// (model version) or training samples. Curves can be smoothed with an EMA (the raw trace
// stays faint behind the smoothed one), or grouped: runs sharing a label (a strategy, say)
// are drawn as their mean with a ± std band across seeds, each run interpolated on a common
// x grid. A vertical time cursor, a horizontal target line and event markers (faults,
// controls: small ticks at the bottom of the plot with a tooltip) are drawn over the plot,
// and a crosshair under the mouse reads out both values at the axes.
// Fault drills (faultSpans(): a node killed or paused until its restart or resume) are
// shaded bands with a label at the top ("kill server"; hover it for what recovery did); a
// fault not restarted yet reaches to the run's end.
//
// The view (ui/charts/convergence_chart_view.cpp): the y axis fits the curves in view
// (fitY, default) or shows the metric's full range (accuracy 0–1, loss from 0); the loss
// can be drawn on a log axis. The mouse zooms (drag a rectangle; the wheel zooms the x
// axis about the pointer) and pans (middle button, or Shift + drag); a double click, the
// context menu or resetZoom() returns to the whole data. While zoomed, live refreshes keep
// the window instead of following the data. The context menu also exports the chart as
// PNG or SVG (ui/charts/chart_export.h).
//
// refresh() re-reads the runs and is cheap enough for a live run at 5–10 Hz: the series
// objects are created only when the runs, labels or grouping change, and each refresh
// replace()s every series with points decimated to the plot's pixels (one signal per
// series, never one per point).
//
// Threading: GUI thread only. The RunData objects are not owned; they must outlive the
// chart or be replaced with setRuns({}) first.

#include "ui/charts/run_data.h"

#include <QChartView>
#include <QColor>
#include <QString>
#include <QStringList>

#include <vector>

QT_FORWARD_DECLARE_CLASS(QAreaSeries)
QT_FORWARD_DECLARE_CLASS(QLogValueAxis)
QT_FORWARD_DECLARE_CLASS(QLineSeries)
QT_FORWARD_DECLARE_CLASS(QValueAxis)

class QMenu;
class QRubberBand;

namespace dasp::ui {

class ConvergenceChart : public QChartView {
  Q_OBJECT

 public:
  enum class Metric { Accuracy, Loss };
  enum class XAxis { Time, Updates, Samples };

  explicit ConvergenceChart(QWidget* parent = nullptr);
  ~ConvergenceChart() override;

  // The runs to draw and one label each (legend text; the grouping key in grouped mode).
  // Missing labels default to "<strategy> #<run id>" (grouped: the strategy).
  void setRuns(std::vector<const RunData*> runs, QStringList labels = {});
  // The time axis's title for these runs: wall time for real runs, virtual time for
  // runs of the simulator (engine "sim"), and a title that says both when they are mixed.
  static QString timeAxisTitle(const std::vector<const RunData*>& runs);
  void setMetric(Metric metric);
  void setXAxis(XAxis axis);
  // EMA factor: 0 = no smoothing … 0.99 (clamped).
  void setSmoothing(double factor);
  void setGrouped(bool grouped);
  // A horizontal line at `value` (in the metric's units); NaN hides it.
  void setTarget(double value);
  // The time cursor in seconds of run time (mapped onto the updates/samples axes through
  // the first run's evaluations); NaN hides it.
  void setCursor(double t);
  using QWidget::setCursor;
  void setCursor(Qt::CursorShape) = delete;  // would silently convert to a time
  // Re-reads the runs' data into the series.
  void refresh();
  // Runs the chart's posted layout and refreshes for the final plot size: what a chart
  // that is never shown needs before it is rendered (reports, exports).
  void settleLayout();

  // The view: y range, log axis, zoom and pan (ui/charts/convergence_chart_view.cpp).
  void setFitY(bool fit);
  bool fitY() const { return m_fitY; }
  // A log y axis (base 10); only the loss is drawn on one, accuracy stays linear.
  void setLogY(bool log);
  bool logY() const { return m_logY; }
  bool logYActive() const { return m_logY && m_metric == Metric::Loss; }
  // Shows x in [x0, x1] (axis units); y follows fitY.
  void zoomX(double x0, double x1);
  // Shows x in [x0, x1] and y in [y0, y1].
  void zoomTo(double x0, double x1, double y0, double y1);
  // Zooms the x axis by `factor` (> 1 zooms in) keeping `x` where it is.
  void zoomXAt(double x, double factor);
  // Moves the window by a fraction of its width and height (+x right, +y up).
  void panBy(double dxFraction, double dyFraction);
  void resetZoom();
  bool isZoomed() const { return m_zoomX || m_zoomY; }
  // The axes' ranges as drawn (after the last refresh).
  QPointF xRange() const { return {m_xMin, m_xMax}; }
  QPointF yRange() const { return {m_yMin, m_yMax}; }
  // The context menu: reset zoom, fit y, log y, export. The caller owns the menu.
  QMenu* createContextMenu(QWidget* parent);

  Metric metric() const { return m_metric; }
  XAxis xAxis() const { return m_xAxis; }
  double smoothing() const { return m_smoothing; }
  bool grouped() const { return m_grouped; }
  double target() const { return m_target; }
  double cursorTime() const { return m_cursor; }
  // The crosshair under the mouse (hover, no button): the point in axis units, drawn as a
  // dotted line across the plot with both values read out at the axes; NaN when the mouse
  // is outside the plot.
  QPointF crosshair() const { return m_crosshair; }
  // The tooltip of the event marker at a viewport position ("" when none is there).
  QString markerToolTipAt(const QPoint& viewportPos) const;
  // The x value of run time `t` for `run` on the current axis (NaN if it cannot be mapped).
  double xOf(const RunData& run, double t) const;

  // A fault drill as drawn: the band [x0, x1] in axis units.
  struct FaultMark {
    double x0 = 0, x1 = 0;
    bool closed = false;  // restarted / resumed; else the band reaches the run's end
    QString label;        // "kill server" ("#12 kill server" with several runs)
    QString detail;       // the tooltip
    QColor color;
  };
  const std::vector<FaultMark>& faultMarks() const { return m_faultMarks; }
  // The tooltip of the fault label at a viewport position ("" when none is there).
  QString faultToolTipAt(const QPoint& viewportPos) const;
  // The x-axis value under a viewport position; NaN outside the plot.
  double axisXAt(const QPoint& viewportPos) const;

 Q_SIGNALS:
  // The time-cursor hook (LiveCharts shares one cursor between the charts): the mouse is
  // over x-axis value `x` (NaN: it left the plot), or was clicked there without dragging.
  void cursorHovered(double x);
  void cursorClicked(double x);

 protected:
  void drawForeground(QPainter* painter, const QRectF& rect) override;
  bool viewportEvent(QEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void mouseDoubleClickEvent(QMouseEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  void contextMenuEvent(QContextMenuEvent* event) override;

 private:
  struct RunSeries {
    QLineSeries* raw = nullptr;
    QLineSeries* smooth = nullptr;
  };
  struct GroupSeries {
    QString label;
    std::vector<int> members;
    QLineSeries* mean = nullptr;
    QLineSeries* upper = nullptr;
    QLineSeries* lower = nullptr;
    QAreaSeries* band = nullptr;
  };
  struct Marker {
    double x = 0;
    QString text;
    QColor color;
  };

  void rebuild();  // re-creates the series after the runs, labels or grouping changed
  void updateTitles();
  std::vector<QPointF> points(const RunData& run) const;
  std::vector<QPointF> smoothed(const std::vector<QPointF>& raw) const;
  QRectF plotInScene() const;
  double sceneXOf(double x) const;
  double sceneYOf(double y) const;
  void drawCrosshair(QPainter* painter, const QRectF& plot) const;
  QPointF valueAt(const QPoint& viewportPos) const;  // axis units at a viewport position
  // The axis ranges from the data's extents (curves: what is plotted) and the view state.
  void applyRanges(const std::vector<QList<QPointF>>& curves, double xMin, double xMax);
  void useYAxis();  // attaches the series to the linear or the log y axis

  std::vector<const RunData*> m_runs;
  QStringList m_labels;
  Metric m_metric = Metric::Accuracy;
  XAxis m_xAxis = XAxis::Time;
  double m_smoothing = 0;
  bool m_grouped = false;
  double m_target;
  double m_cursor;
  QPointF m_crosshair;
  QValueAxis* m_axisX = nullptr;
  QValueAxis* m_axisY = nullptr;
  QLogValueAxis* m_logAxisY = nullptr;
  bool m_logAttached = false;  // the series are on m_logAxisY
  std::vector<RunSeries> m_runSeries;
  std::vector<GroupSeries> m_groups;
  std::vector<Marker> m_markers;
  std::vector<FaultMark> m_faultMarks;
  int m_labelRows = 1;          // lines of fault labels drawn at the top of the plot
  double m_xMin = 0, m_xMax = 1, m_yMin = 0, m_yMax = 1;
  int m_pixels = 0;             // the plot width the series were decimated for
  bool m_refreshQueued = false;
  bool m_fitY = true;
  bool m_logY = false;
  bool m_zoomX = false, m_zoomY = false;
  double m_viewX0 = 0, m_viewX1 = 1, m_viewY0 = 0, m_viewY1 = 1;
  // Mouse gestures: a rubber band from m_pressPos, or a pan from the last position; a
  // press and release within 3 px of m_pressPos is a click (the time cursor).
  enum class Drag { None, Zoom, Pan } m_drag = Drag::None;
  QPoint m_pressPos, m_lastPos;
  QRubberBand* m_band = nullptr;
};

}  // namespace dasp::ui
