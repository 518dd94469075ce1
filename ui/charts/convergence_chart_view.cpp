// SPDX-License-Identifier: MIT
// ConvergenceChart's view: the axis ranges (fit to the curves in view, or the metric's
// full range; linear or log), zoom and pan by mouse and by call, and the context menu.
#include "ui/charts/convergence_chart.h"
#include "ui/charts/axis_ticks.h"
#include "ui/charts/chart_export.h"

#include <QAbstractSeries>
#include <QChart>
#include <QContextMenuEvent>
#include <QLogValueAxis>
#include <QMenu>
#include <QMouseEvent>
#include <QRubberBand>
#include <QValueAxis>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>
#include <limits>

namespace dasp::ui {

namespace {

constexpr int kMinDragPx = 6;     // a smaller rubber band is a click, not a zoom
constexpr double kWheelStep = 1.25;

// Ticks at round numbers (0, 10, 20 s rather than 11.2563): the range extends to the
// next tick and the tick count follows. (Dynamic ticks with an interval would briefly
// combine a new range with the old interval: 10^5 tick items for one frame.)
void niceRange(QValueAxis* axis, double& lo, double& hi, int ticks) {
  const double step = niceStep(hi - lo, ticks);
  lo = std::floor(lo / step + 1e-9) * step;
  hi = std::max(std::ceil(hi / step - 1e-9) * step, lo + step);
  axis->setRange(lo, hi);
  axis->setTickCount(std::clamp(static_cast<int>(std::lround((hi - lo) / step)) + 1, 2, 64));
}

}  // namespace

void ConvergenceChart::applyRanges(const std::vector<QList<QPointF>>& curves, double xMin, double xMax) {
  if (!(xMin <= xMax)) xMin = 0, xMax = 1;
  if (!(xMax > xMin)) xMax = xMin + 1;
  if (m_zoomX) xMin = m_viewX0, xMax = m_viewX1;
  const bool log = logYActive();
  const bool accuracy = m_metric == Metric::Accuracy;
  // The y extent of what is drawn inside the x window (a zoom refits y to what it shows).
  // Unzoomed, the first tenth of the x range is left out: the rise from chance level there
  // would squeeze the differences that matter (0.80 against 0.87) into a sliver; the curves'
  // start is then cut off at the bottom, and "full range" shows it.
  const double fitFrom = m_zoomX || !m_fitY ? xMin : xMin + 0.1 * (xMax - xMin);
  double yMin = std::numeric_limits<double>::infinity(), yMax = -yMin;
  for (const QList<QPointF>& c : curves) {
    for (const QPointF& p : c) {
      if (p.x() < fitFrom || p.x() > xMax) continue;
      yMin = std::min(yMin, p.y());
      yMax = std::max(yMax, p.y());
    }
  }
  if (std::isfinite(m_target) && (!log || m_target > 0)) {
    yMin = std::min(yMin, m_target);
    yMax = std::max(yMax, m_target);
  }
  if (!(yMin <= yMax)) yMin = accuracy ? 0.0 : (log ? 0.1 : 0.0), yMax = 1;
  if (m_zoomY) {
    yMin = m_viewY0, yMax = m_viewY1;
  } else if (!m_fitY) {
    // The full range: accuracy 0–1, the loss from 0 (a log axis from a decade below).
    if (accuracy) yMin = 0, yMax = 1;
    else if (!log) yMin = 0;
    else yMin = std::pow(10.0, std::floor(std::log10(yMin)) - 1);
  }
  const QRectF area = chart()->plotArea();
  const int xTicks = std::max(3, static_cast<int>(area.width()) / 110);
  if (m_zoomX) {
    m_axisX->setRange(xMin, xMax);  // the window as chosen, not widened to round ticks
    m_axisX->setTickCount(xTicks + 1);
  } else {
    niceRange(m_axisX, xMin, xMax, xTicks);
  }
  if (log) {
    // Labels sit at powers of the base only: base 10 over several decades, base 2 where the
    // curves span less (0.25, 0.5, 1 rather than a single "1").
    const double base = std::log10(yMax / yMin) >= 1.5 ? 10.0 : 2.0;
    m_logAxisY->setBase(base);
    m_logAxisY->setMinorTickCount(base == 10.0 ? 8 : 3);
    if (!m_zoomY) {
      const double lb = std::log(base);
      yMin = std::pow(base, std::floor(std::log(yMin) / lb + 1e-9));
      yMax = std::pow(base, std::ceil(std::log(yMax) / lb - 1e-9));
    }
    if (!(yMax > yMin)) yMax = yMin * 10;
    m_logAxisY->setRange(yMin, yMax);
  } else if (m_zoomY) {
    if (!(yMax > yMin)) yMax = yMin + 1e-6;
    m_axisY->setRange(yMin, yMax);
    m_axisY->setTickCount(std::max(3, static_cast<int>(area.height()) / 45) + 1);
  } else {
    const double pad = std::max((yMax - yMin) * 0.05, 1e-3);
    if (accuracy) {
      yMin = std::max(0.0, yMin - (m_fitY ? pad : 0));
      yMax = std::min(1.0, yMax + (m_fitY ? pad : 0));
      if (!(yMax > yMin)) yMin = std::max(0.0, yMax - 0.05), yMax = yMin + 0.05;
    } else {
      yMin = yMin >= 0 && !m_fitY ? 0.0 : yMin - pad;
      yMax = yMax + pad;
    }
    niceRange(m_axisY, yMin, yMax, std::max(3, static_cast<int>(area.height()) / 45));
    if (accuracy) yMin = std::max(0.0, yMin), yMax = std::min(1.0, yMax), m_axisY->setRange(yMin, yMax);
  }
  m_xMin = xMin, m_xMax = xMax, m_yMin = yMin, m_yMax = yMax;
}

void ConvergenceChart::useYAxis() {
  const bool log = logYActive();
  if (log == m_logAttached) return;
  QAbstractAxis* from = m_logAttached ? static_cast<QAbstractAxis*>(m_logAxisY) : m_axisY;
  QAbstractAxis* to = log ? static_cast<QAbstractAxis*>(m_logAxisY) : m_axisY;
  QChart* c = chart();
  const QList<QAbstractSeries*> series = c->series();
  for (QAbstractSeries* s : series) s->detachAxis(from);
  c->removeAxis(from);
  from->setParent(this);  // the chart gave up ownership; the view keeps the axis for later
  c->addAxis(to, Qt::AlignLeft);
  for (QAbstractSeries* s : series) s->attachAxis(to);
  m_logAttached = log;
}

void ConvergenceChart::setFitY(bool fit) {
  m_fitY = fit;
  m_zoomY = false;
  refresh();
}

void ConvergenceChart::setLogY(bool log) {
  m_logY = log;
  m_zoomY = false;
  useYAxis();
  refresh();
}

void ConvergenceChart::zoomX(double x0, double x1) {
  if (!std::isfinite(x0) || !std::isfinite(x1) || x0 == x1) return;
  m_viewX0 = std::min(x0, x1), m_viewX1 = std::max(x0, x1);
  m_zoomX = true;
  refresh();
}

void ConvergenceChart::zoomTo(double x0, double x1, double y0, double y1) {
  if (!std::isfinite(y0) || !std::isfinite(y1) || y0 == y1) return zoomX(x0, x1);
  if (logYActive() && !(std::min(y0, y1) > 0)) return zoomX(x0, x1);
  m_viewY0 = std::min(y0, y1), m_viewY1 = std::max(y0, y1);
  m_zoomY = true;
  zoomX(x0, x1);
}

void ConvergenceChart::zoomXAt(double x, double factor) {
  if (!(factor > 0) || !std::isfinite(x)) return;
  zoomX(x - (x - m_xMin) / factor, x + (m_xMax - x) / factor);
}

void ConvergenceChart::panBy(double dxFraction, double dyFraction) {
  const double dx = (m_xMax - m_xMin) * dxFraction;
  if (dyFraction != 0) {
    if (logYActive()) {
      const double f = std::pow(m_yMax / m_yMin, dyFraction);
      m_viewY0 = m_yMin * f, m_viewY1 = m_yMax * f;
    } else {
      const double dy = (m_yMax - m_yMin) * dyFraction;
      m_viewY0 = m_yMin + dy, m_viewY1 = m_yMax + dy;
    }
    m_zoomY = true;
  }
  zoomX(m_xMin + dx, m_xMax + dx);
}

void ConvergenceChart::resetZoom() {
  m_zoomX = m_zoomY = false;
  refresh();
}

QRectF ConvergenceChart::plotInScene() const { return chart()->mapRectToScene(chart()->plotArea()); }

double ConvergenceChart::sceneXOf(double x) const {
  const QRectF plot = plotInScene();
  return plot.left() + (x - m_xMin) / (m_xMax - m_xMin) * plot.width();
}

double ConvergenceChart::sceneYOf(double y) const {
  const QRectF plot = plotInScene();
  const double f = logYActive() ? std::log(y / m_yMin) / std::log(m_yMax / m_yMin) : (y - m_yMin) / (m_yMax - m_yMin);
  return plot.bottom() - f * plot.height();
}

QPointF ConvergenceChart::valueAt(const QPoint& viewportPos) const {
  const QRectF plot = plotInScene();
  const QPointF scene = mapToScene(viewportPos);
  const double fx = (scene.x() - plot.left()) / std::max(plot.width(), 1.0);
  const double fy = (plot.bottom() - scene.y()) / std::max(plot.height(), 1.0);
  const double y = logYActive() ? m_yMin * std::pow(m_yMax / m_yMin, fy) : m_yMin + fy * (m_yMax - m_yMin);
  return {m_xMin + fx * (m_xMax - m_xMin), y};
}

QMenu* ConvergenceChart::createContextMenu(QWidget* parent) {
  auto* menu = new QMenu(parent);
  QAction* reset = menu->addAction(tr("Reset zoom"), this, &ConvergenceChart::resetZoom);
  reset->setEnabled(isZoomed());
  QAction* fit = menu->addAction(tr("Fit y-axis to the data"), this, &ConvergenceChart::setFitY);
  fit->setCheckable(true);
  fit->setChecked(m_fitY);
  QAction* log = menu->addAction(tr("Log y-axis (loss)"), this, &ConvergenceChart::setLogY);
  log->setCheckable(true);
  log->setChecked(m_logY);
  menu->addSeparator();
  addExportActions(menu, this, m_metric == Metric::Accuracy ? QStringLiteral("accuracy") : QStringLiteral("loss"));
  return menu;
}

void ConvergenceChart::contextMenuEvent(QContextMenuEvent* event) {
  QMenu* menu = createContextMenu(this);
  menu->setAttribute(Qt::WA_DeleteOnClose);
  menu->popup(event->globalPos());
}

void ConvergenceChart::mousePressEvent(QMouseEvent* event) {
  const QPoint pos = event->position().toPoint();
  const bool pan = event->button() == Qt::MiddleButton ||
                   (event->button() == Qt::LeftButton && (event->modifiers() & Qt::ShiftModifier));
  if (pan || event->button() == Qt::LeftButton) {
    m_drag = pan ? Drag::Pan : Drag::Zoom;
    m_pressPos = m_lastPos = pos;
    event->accept();
    return;
  }
  QChartView::mousePressEvent(event);
}

void ConvergenceChart::mouseMoveEvent(QMouseEvent* event) {
  const QPoint pos = event->position().toPoint();
  if (m_drag == Drag::Pan) {
    const QRectF plot = plotInScene();
    const QPoint d = pos - m_lastPos;
    m_lastPos = pos;
    panBy(-d.x() / std::max(plot.width(), 1.0), d.y() / std::max(plot.height(), 1.0));
  } else if (m_drag == Drag::Zoom) {
    if (m_band == nullptr) m_band = new QRubberBand(QRubberBand::Rectangle, viewport());
    m_band->setGeometry(QRect(m_pressPos, pos).normalized());
    m_band->show();
  } else {
    QChartView::mouseMoveEvent(event);
  }
}

void ConvergenceChart::mouseReleaseEvent(QMouseEvent* event) {
  const Drag drag = m_drag;
  m_drag = Drag::None;
  if (m_band != nullptr) m_band->hide();
  if (drag != Drag::Zoom) {
    if (drag == Drag::None) QChartView::mouseReleaseEvent(event);
    return;
  }
  const QRect r = QRect(m_pressPos, event->position().toPoint()).normalized();
  if (r.width() < kMinDragPx) return;
  const QPointF a = valueAt(r.bottomLeft());
  const QPointF b = valueAt(r.topRight());
  // A flat band zooms the time only; a tall one the values too.
  if (r.height() < kMinDragPx) zoomX(a.x(), b.x());
  else zoomTo(a.x(), b.x(), a.y(), b.y());
}

void ConvergenceChart::mouseDoubleClickEvent(QMouseEvent* event) {
  if (event->button() == Qt::LeftButton) return resetZoom();
  QChartView::mouseDoubleClickEvent(event);
}

void ConvergenceChart::wheelEvent(QWheelEvent* event) {
  const double steps = event->angleDelta().y() / 120.0;
  if (steps == 0) return QChartView::wheelEvent(event);
  zoomXAt(valueAt(event->position().toPoint()).x(), std::pow(kWheelStep, steps));
  event->accept();
}

}  // namespace dasp::ui
