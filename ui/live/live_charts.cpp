// SPDX-License-Identifier: MIT
#include "ui/live/live_charts.h"

#include "ui/charts/chart_export.h"
#include "ui/charts/convergence_chart.h"
#include "ui/charts/node_bars.h"
#include "ui/charts/node_lanes.h"
#include "ui/charts/staleness_histogram.h"
#include "ui/charts/run_data.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QSignalBlocker>
#include <QSlider>
#include <QSplitter>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <limits>

namespace dasp::ui {

namespace {

constexpr int kSlowRefreshMs = 500;  // bars and histogram while live (they scan every sample)
// The scroll areas show every lane / bar row up to these heights, then scroll: with the
// node table of 16 workers above them the charts still fit the right-hand column of the
// default window (the splitters give them more when there is room). The bars show four
// workers, the default experiment's, before they scroll.
constexpr int kMaxLanesHeight = 130;
constexpr int kBarRowsShown = 4;
constexpr int kMinHistogramHeight = 54;
constexpr int kMinConvergenceHeight = 120;

// A scroll area that lets a custom-painted chart grow with its rows (32 workers need more
// height than a dock has) and otherwise fills the space.
QScrollArea* scrolled(QWidget* chart, QWidget* parent) {
  auto* area = new QScrollArea(parent);
  area->setWidget(chart);
  area->setWidgetResizable(true);
  area->setFrameShape(QFrame::NoFrame);
  area->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  return area;
}

}  // namespace

LiveCharts::LiveCharts(QWidget* parent)
    : QWidget(parent), m_cursor(std::numeric_limits<double>::quiet_NaN()), m_hover(m_cursor) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);

  // Replay bar: hidden while live.
  m_replayBar = new QWidget(this);
  m_replayBar->setObjectName(QStringLiteral("replayBar"));
  auto* bar = new QHBoxLayout(m_replayBar);
  bar->setContentsMargins(0, 0, 0, 0);
  m_replayLabel = new QLabel(m_replayBar);
  bar->addWidget(m_replayLabel);
  m_slider = new QSlider(Qt::Horizontal, m_replayBar);
  m_slider->setObjectName(QStringLiteral("replaySlider"));
  m_slider->setRange(0, kSliderSteps);
  m_slider->setToolTip(tr("Time cursor: scrubs the lanes, the convergence chart, the bars and the node table"));
  bar->addWidget(m_slider, 1);
  m_timeLabel = new QLabel(m_replayBar);
  m_timeLabel->setObjectName(QStringLiteral("replayTime"));
  m_timeLabel->setMinimumWidth(fontMetrics().horizontalAdvance(QStringLiteral("t = 0000.0 / 0000.0 s")));
  bar->addWidget(m_timeLabel);
  m_liveButton = new QPushButton(tr("Show Live Run"), m_replayBar);
  m_liveButton->setObjectName(QStringLiteral("showLiveButton"));
  m_liveButton->setEnabled(false);
  bar->addWidget(m_liveButton);
  m_replayBar->hide();
  layout->addWidget(m_replayBar);

  auto* vertical = new QSplitter(Qt::Vertical, this);
  vertical->setObjectName(QStringLiteral("liveChartSplitter"));
  vertical->setChildrenCollapsible(false);
  m_lanes = new NodeLanes;
  m_lanes->setObjectName(QStringLiteral("nodeLanes"));
  m_lanesArea = scrolled(m_lanes, vertical);
  vertical->addWidget(m_lanesArea);

  auto* horizontal = new QSplitter(Qt::Horizontal, vertical);
  horizontal->setChildrenCollapsible(false);
  auto* convergenceBox = new QWidget(horizontal);
  auto* convergenceLayout = new QVBoxLayout(convergenceBox);
  convergenceLayout->setContentsMargins(0, 0, 0, 0);
  auto* options = new QHBoxLayout;
  m_metric = new QComboBox(convergenceBox);
  m_metric->setObjectName(QStringLiteral("liveMetric"));
  m_metric->addItem(tr("Test accuracy"), static_cast<int>(ConvergenceChart::Metric::Accuracy));
  m_metric->addItem(tr("Test loss"), static_cast<int>(ConvergenceChart::Metric::Loss));
  m_xAxis = new QComboBox(convergenceBox);
  m_xAxis->setObjectName(QStringLiteral("liveXAxis"));
  m_xAxis->addItem(tr("against wall time"), static_cast<int>(ConvergenceChart::XAxis::Time));
  m_xAxis->addItem(tr("against updates"), static_cast<int>(ConvergenceChart::XAxis::Updates));
  m_xAxis->addItem(tr("against samples"), static_cast<int>(ConvergenceChart::XAxis::Samples));
  options->addWidget(m_metric);
  options->addWidget(m_xAxis);
  options->addStretch(1);
  convergenceLayout->addLayout(options);
  m_convergence = new ConvergenceChart(convergenceBox);
  m_convergence->setObjectName(QStringLiteral("liveConvergence"));
  m_convergence->setMinimumSize(260, kMinConvergenceHeight);
  convergenceLayout->addWidget(m_convergence, 1);
  horizontal->addWidget(convergenceBox);

  auto* right = new QSplitter(Qt::Vertical, horizontal);
  right->setChildrenCollapsible(false);
  m_bars = new NodeBars;
  m_bars->setObjectName(QStringLiteral("nodeBars"));
  m_barsArea = scrolled(m_bars, right);
  right->addWidget(m_barsArea);
  m_histogram = new StalenessHistogram(right);
  m_histogram->setObjectName(QStringLiteral("stalenessHistogram"));
  m_histogram->setMinimumHeight(kMinHistogramHeight);
  right->addWidget(m_histogram);
  horizontal->addWidget(right);
  horizontal->setStretchFactor(0, 3);
  horizontal->setStretchFactor(1, 2);

  vertical->addWidget(horizontal);
  vertical->setStretchFactor(0, 1);
  vertical->setStretchFactor(1, 1);
  layout->addWidget(vertical, 1);

  connect(m_metric, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] {
    m_convergence->setMetric(static_cast<ConvergenceChart::Metric>(m_metric->currentData().toInt()));
  });
  connect(m_xAxis, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] {
    m_convergence->setXAxis(static_cast<ConvergenceChart::XAxis>(m_xAxis->currentData().toInt()));
  });
  connect(m_slider, &QSlider::valueChanged, this, &LiveCharts::onSlider);
  connect(m_lanes, &NodeLanes::timeHovered, this, &LiveCharts::onHover);
  connect(m_lanes, &NodeLanes::timeClicked, this, &LiveCharts::onClick);
  connect(m_convergence, &ConvergenceChart::cursorHovered, this, [this](double x) { onHover(timeAtAxisX(x)); });
  connect(m_convergence, &ConvergenceChart::cursorClicked, this, [this](double x) { onClick(timeAtAxisX(x)); });
  connect(m_liveButton, &QPushButton::clicked, this, &LiveCharts::liveRequested);
  // The convergence chart has its own context menu (zoom, axes, export).
  installExportMenu(m_lanes, QStringLiteral("lanes"));
  installExportMenu(m_bars, QStringLiteral("node-bars"));
  installExportMenu(m_histogram, QStringLiteral("staleness"));
  showLive(nullptr);
}

LiveCharts::~LiveCharts() = default;

void LiveCharts::setRun(const RunData* run) {
  m_run = run;
  m_shownRunId = run != nullptr ? run->runId : -1;
  m_evaluationsSeen = run != nullptr ? run->evaluations.size() : 0;
  m_eventsSeen = run != nullptr ? run->events.size() : 0;
  m_lanes->setRun(run);
  // A run the runner has not created yet (id 0) has no curve and no legend entry.
  const bool exists = run != nullptr && run->runId > 0;
  m_convergence->setRuns(exists ? std::vector<const RunData*>{run} : std::vector<const RunData*>{});
  m_bars->setRun(run);
  m_histogram->setRun(run);
  m_slowRefresh.start();
  fitAreas();
}

void LiveCharts::fitAreas() {
  // A scroll area does not pass its widget's minimum size on: without this the lanes of
  // four workers would get a scroll bar while the splitter gives the space elsewhere.
  const int lanes = m_run != nullptr ? static_cast<int>(m_run->nodes.size()) : 0;
  if (lanes == m_fittedLanes) return;
  m_fittedLanes = lanes;
  m_lanesArea->setMinimumHeight(std::min(m_lanes->sizeHint().height() + 2, kMaxLanesHeight));
  m_barsArea->setMinimumHeight(std::min(m_bars->sizeHint().height(), NodeBars::heightForRows(kBarRowsShown)) + 2);
}

void LiveCharts::showLive(const RunData* run) {
  m_replay = false;
  m_cursor = std::numeric_limits<double>::quiet_NaN();
  m_hover = m_cursor;
  m_replayBar->hide();
  m_lanes->setFollow(kFollowSeconds);
  m_lanes->setCursor(m_cursor);
  m_convergence->setCursor(m_cursor);
  m_bars->setLastSeconds(kBarsSeconds);
  m_histogram->setUntil(m_cursor);
  setRun(run);
}

void LiveCharts::showReplay(const RunData* run) {
  m_replay = true;
  m_hover = std::numeric_limits<double>::quiet_NaN();
  setRun(run);
  m_replayLabel->setText(run != nullptr ? tr("Replay of run %1").arg(run->runId) : tr("Replay"));
  m_replayBar->show();
  const double end = endTime();
  m_lanes->setWindow(0, end > 0 ? end : 1);
  m_cursor = end;
  {
    const QSignalBlocker block(m_slider);  // applyCursor() below; no second round
    m_slider->setValue(kSliderSteps);
  }
  applyCursor();
}

double LiveCharts::endTime() const {
  return m_run != nullptr && std::isfinite(m_run->endT) && m_run->endT > 0 ? m_run->endT : 0.0;
}

void LiveCharts::setCursorTime(double t) {
  if (!m_replay || !std::isfinite(t)) return;
  const double end = endTime();
  m_cursor = std::clamp(t, 0.0, end);
  {
    const QSignalBlocker block(m_slider);
    m_slider->setValue(end > 0 ? static_cast<int>(std::lround(m_cursor / end * kSliderSteps)) : 0);
  }
  applyCursor();
}

void LiveCharts::onSlider(int value) {
  if (!m_replay) return;
  m_cursor = endTime() * static_cast<double>(value) / kSliderSteps;
  applyCursor();
}

double LiveCharts::shownCursorTime() const { return std::isfinite(m_hover) ? m_hover : m_cursor; }

void LiveCharts::onHover(double t) {
  if (std::isnan(t) && std::isnan(m_hover)) return;  // leaving twice, or never over a plot
  m_hover = t;
  applyCursor();
}

void LiveCharts::onClick(double t) {
  if (!m_replay || !std::isfinite(t)) return;  // live: nothing to pin, the run goes on
  m_hover = std::numeric_limits<double>::quiet_NaN();
  setCursorTime(t);
}

double LiveCharts::timeAtAxisX(double x) const {
  if (!std::isfinite(x) || m_run == nullptr) return std::numeric_limits<double>::quiet_NaN();
  const ConvergenceChart::XAxis axis = m_convergence->xAxis();
  if (axis == ConvergenceChart::XAxis::Time) return x;
  // ConvergenceChart::xOf's inverse: between the evaluations, linear; before the first, a
  // ramp from (0, 0); past the last, its time.
  const auto& ev = m_run->evaluations;
  if (ev.empty()) return std::numeric_limits<double>::quiet_NaN();
  auto value = [axis](const Evaluation& e) {
    return static_cast<double>(axis == ConvergenceChart::XAxis::Updates ? e.version : e.samples);
  };
  const auto it = std::find_if(ev.begin(), ev.end(), [&](const Evaluation& e) { return value(e) >= x; });
  if (it == ev.end()) return ev.back().t;
  if (it == ev.begin()) return value(*it) > 0 ? it->t * std::clamp(x / value(*it), 0.0, 1.0) : it->t;
  const Evaluation& a = *(it - 1);
  const double span = value(*it) - value(a);
  return span > 0 ? a.t + (x - value(a)) / span * (it->t - a.t) : it->t;
}

void LiveCharts::applyCursor() {
  const double t = shownCursorTime();
  m_lanes->setCursor(t);
  m_convergence->setCursor(t);
  if (m_replay) {
    m_bars->setWindow(0, t);
  } else if (std::isfinite(t)) {
    m_bars->setWindow(t - kBarsSeconds, t);  // how the nodes behaved then
  } else {
    m_bars->setLastSeconds(kBarsSeconds);
  }
  m_histogram->setUntil(t);
  if (m_replay) updateReplayLabel();
  Q_EMIT cursorMoved(t);
}

void LiveCharts::updateReplayLabel() {
  m_timeLabel->setText(tr("t = %1 / %2 s").arg(shownCursorTime(), 0, 'f', 1).arg(endTime(), 0, 'f', 1));
}

void LiveCharts::setLiveAvailable(bool available) { m_liveButton->setEnabled(available); }

void LiveCharts::refresh() {
  if (m_run != nullptr && m_run->runId != m_shownRunId) {
    setRun(m_run);  // the next run of a suite replaced the data: new lanes and series
  }
  m_lanes->refresh();
  if (m_run == nullptr) return;
  fitAreas();  // lanes of nodes first heard of now
  // The convergence chart re-decimates every series on refresh: only when it has news.
  if (m_run->evaluations.size() != m_evaluationsSeen || m_run->events.size() != m_eventsSeen) {
    m_evaluationsSeen = m_run->evaluations.size();
    m_eventsSeen = m_run->events.size();
    m_convergence->refresh();
  }
  // Replay data does not grow: the cursor (applyCursor) and setRun() recompute those two.
  if (!m_replay && (!m_slowRefresh.isValid() || m_slowRefresh.elapsed() >= kSlowRefreshMs ||
                    m_run->status != QLatin1String("running"))) {
    m_bars->refresh();
    m_histogram->refresh();
    m_slowRefresh.start();
  }
}

}  // namespace dasp::ui
