// SPDX-License-Identifier: MIT
#include "ui/runs/compare_panel.h"

#include "ui/charts/chart_export.h"
#include "ui/charts/convergence_chart.h"
#include "ui/charts/run_groups.h"
#include "ui/charts/time_to_target_bars.h"
#include "ui/runs/faults_view.h"
#include "ui/runs/sweep_view.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSlider>
#include <QSplitter>
#include <QTabWidget>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

namespace dasp::ui {

namespace {

QString figure(const std::optional<double>& v, int decimals, const QString& suffix = {}) {
  return v && std::isfinite(*v) ? QString::number(*v, 'f', decimals) + suffix : QStringLiteral("–");
}


}  // namespace

ComparePanel::ComparePanel(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);

  auto* controls = new QHBoxLayout;
  m_metric = new QComboBox(this);
  m_metric->setObjectName(QStringLiteral("compareMetric"));
  m_metric->addItem(tr("Test accuracy"), static_cast<int>(ConvergenceChart::Metric::Accuracy));
  m_metric->addItem(tr("Test loss"), static_cast<int>(ConvergenceChart::Metric::Loss));
  m_xAxis = new QComboBox(this);
  m_xAxis->setObjectName(QStringLiteral("compareXAxis"));
  m_xAxis->addItem(tr("x = run time"), static_cast<int>(ConvergenceChart::XAxis::Time));
  m_xAxis->addItem(tr("x = updates"), static_cast<int>(ConvergenceChart::XAxis::Updates));
  m_xAxis->addItem(tr("x = samples"), static_cast<int>(ConvergenceChart::XAxis::Samples));
  m_smoothing = new QSlider(Qt::Horizontal, this);
  m_smoothing->setObjectName(QStringLiteral("compareSmoothing"));
  m_smoothing->setRange(0, 99);  // EMA factor ×100
  m_smoothing->setMaximumWidth(160);
  m_smoothing->setToolTip(tr("EMA smoothing of the curves; the raw trace stays faint behind"));
  m_smoothingLabel = new QLabel(this);
  m_group = new QCheckBox(tr("Group by"), this);
  m_group->setObjectName(QStringLiteral("compareGroup"));
  m_group->setToolTip(tr("One curve per group: the mean across its runs with a ± std band"));
  m_groupKey = new QComboBox(this);
  m_groupKey->setObjectName(QStringLiteral("compareGroupKey"));
  m_groupKey->setToolTip(tr("Group the curves and the time-to-target bars by the strategy or by a spec field "
                            "that differs between the runs"));
  m_groupKey->addItem(strategyGroupKey());
  m_fitY = new QCheckBox(tr("Fit y"), this);
  m_fitY->setObjectName(QStringLiteral("compareFitY"));
  m_fitY->setChecked(true);
  m_fitY->setToolTip(tr("The y axis fits the curves in view; off: the full range (accuracy 0–1)"));
  m_logY = new QCheckBox(tr("Log y"), this);
  m_logY->setObjectName(QStringLiteral("compareLogY"));
  m_logY->setToolTip(tr("The loss on a log axis"));
  auto* resetZoom = new QPushButton(tr("Reset zoom"), this);
  resetZoom->setObjectName(QStringLiteral("compareResetZoom"));
  resetZoom->setToolTip(tr("Drag a rectangle or turn the wheel over the chart to zoom, Shift + drag or the middle "
                           "button to pan; double click or this button to see everything again"));
  m_target = new QDoubleSpinBox(this);
  m_target->setObjectName(QStringLiteral("compareTarget"));
  m_target->setRange(0, 1);
  m_target->setDecimals(3);
  m_target->setSingleStep(0.01);
  m_target->setSpecialValueText(tr("from spec"));  // 0: each run's stop.target_accuracy
  m_target->setToolTip(tr("Target accuracy of 'time to target' (0: the spec's)"));
  controls->addWidget(m_metric);
  controls->addWidget(m_xAxis);
  controls->addSpacing(8);
  controls->addWidget(new QLabel(tr("EMA"), this));
  controls->addWidget(m_smoothing);
  controls->addWidget(m_smoothingLabel);
  controls->addSpacing(8);
  controls->addWidget(m_group);
  controls->addWidget(m_groupKey);
  controls->addSpacing(8);
  controls->addWidget(m_fitY);
  controls->addWidget(m_logY);
  controls->addWidget(resetZoom);
  controls->addSpacing(8);
  controls->addWidget(new QLabel(tr("Target"), this));
  controls->addWidget(m_target);
  controls->addStretch(1);
  layout->addLayout(controls);

  m_message = new QLabel(this);
  m_message->setObjectName(QStringLiteral("compareMessage"));
  m_message->setWordWrap(true);
  m_message->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_message->hide();
  layout->addWidget(m_message);
  m_empty = new QLabel(tr("Select runs in the Runs view and choose Runs → Compare Selected."), this);
  layout->addWidget(m_empty);

  auto* splitter = new QSplitter(Qt::Vertical, this);
  splitter->setChildrenCollapsible(false);
  auto* charts = new QSplitter(Qt::Horizontal, splitter);
  charts->setChildrenCollapsible(false);
  m_chart = new ConvergenceChart(charts);
  m_chart->setObjectName(QStringLiteral("compareChart"));
  m_chart->setMinimumHeight(200);
  m_bars = new TimeToTargetBars(charts);
  m_bars->setObjectName(QStringLiteral("compareTargetBars"));
  installExportMenu(m_bars, QStringLiteral("time-to-target"));
  charts->addWidget(m_chart);
  charts->addWidget(m_bars);
  charts->setStretchFactor(0, 3);
  charts->setStretchFactor(1, 2);
  // The first split 3 : 2 too (the stretch factors share only the space beyond the size
  // hints, and the bars' hint is wide): QSplitter scales these to its width when shown.
  charts->setSizes({3000, 2000});
  m_tabs = new QTabWidget(splitter);
  m_tabs->setObjectName(QStringLiteral("compareTabs"));
  m_table = new QTableWidget(0, ColumnCount, m_tabs);
  m_table->setObjectName(QStringLiteral("compareSummary"));
  m_table->setHorizontalHeaderLabels({tr("Run"), tr("Name"), tr("Strategy"), tr("Seed"), tr("Status"), tr("Target"),
                                      tr("Time to target (s)"), tr("Speedup vs BSP"), tr("Heterogeneity cost"),
                                      tr("Final accuracy"),
                                      tr("Mean wait (s)"), tr("Mean staleness"), tr("Max staleness"), tr("Updates"),
                                      tr("Dropped"), tr("Lost")});
  m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_table->verticalHeader()->hide();
  m_table->horizontalHeader()->setStretchLastSection(true);
  m_faults = new FaultsView(m_tabs);
  m_faults->setObjectName(QStringLiteral("compareFaults"));
  m_tabs->addTab(m_table, tr("Summary"));
  m_tabs->addTab(m_faults, tr("Faults"));
  m_tabs->setTabToolTip(1, tr("The runs' fault drills and how each recovered"));
  m_sweep = new SweepView(m_tabs);
  m_sweep->setObjectName(QStringLiteral("compareSweep"));
  m_tabs->addTab(m_sweep, tr("Sweep"));
  m_tabs->setTabToolTip(2, tr("The swept spec fields: the grid points and their parallel coordinates"));
  splitter->addWidget(charts);
  splitter->addWidget(m_tabs);
  splitter->setStretchFactor(0, 3);
  splitter->setStretchFactor(1, 1);
  layout->addWidget(splitter, 1);

  connect(m_metric, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] {
    m_chart->setMetric(static_cast<ConvergenceChart::Metric>(m_metric->currentData().toInt()));
    updateTargetLine();
  });
  connect(m_xAxis, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] {
    m_chart->setXAxis(static_cast<ConvergenceChart::XAxis>(m_xAxis->currentData().toInt()));
  });
  connect(m_smoothing, &QSlider::valueChanged, this, [this](int value) {
    m_chart->setSmoothing(value / 100.0);
    updateSmoothingLabel();
  });
  connect(m_group, &QCheckBox::toggled, this, &ComparePanel::updateGroups);
  connect(m_groupKey, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] {
    updateGroups();
    updateBars(figures());
  });
  connect(m_fitY, &QCheckBox::toggled, m_chart, &ConvergenceChart::setFitY);
  connect(m_logY, &QCheckBox::toggled, m_chart, &ConvergenceChart::setLogY);
  connect(resetZoom, &QPushButton::clicked, m_chart, &ConvergenceChart::resetZoom);
  connect(m_target, qOverload<double>(&QDoubleSpinBox::valueChanged), this, [this] {
    updateTable();
    updateTargetLine();
  });
  updateSmoothingLabel();
}

ComparePanel::~ComparePanel() {
  m_chart->setRuns({});  // the chart must not outlive the data it points at
}

void ComparePanel::setRuns(std::vector<RunData> runs) {
  m_chart->setRuns({});  // no dangling pointers while the vector is replaced
  m_runs = std::move(runs);
  {
    // The keys of these runs; the chosen one stays when they have it too.
    const QSignalBlocker blocker(m_groupKey);
    const QString key = groupKey();
    m_groupKey->clear();
    m_groupKey->addItems(groupKeys(m_runs));
    m_groupKey->setCurrentIndex(std::max(0, m_groupKey->findText(key)));
  }
  updateGroups();
  m_empty->setVisible(m_runs.empty());
  m_faults->setRuns(m_runs);
  m_tabs->setTabText(1, m_faults->faultCount() > 0 ? tr("Faults (%1)").arg(m_faults->faultCount()) : tr("Faults"));
  m_sweep->setRuns(m_runs);
  m_tabs->setTabText(2, m_sweep->gridPoints() > 0 ? tr("Sweep (%1)").arg(m_sweep->gridPoints()) : tr("Sweep"));
  // A sweep is read from its grid first; other runs from their summary.
  if (m_sweep->gridPoints() > 0) {
    m_tabs->setCurrentWidget(m_sweep);
  } else if (m_tabs->currentWidget() == m_sweep) {
    m_tabs->setCurrentWidget(m_table);
  }
  updateTable();
  updateTargetLine();
}

void ComparePanel::setMessage(const QString& text, bool isError) {
  m_message->setText(text);
  m_message->setStyleSheet(isError ? QStringLiteral("color: #b00020;") : QString());
  m_message->setVisible(!text.isEmpty());
}

QString ComparePanel::message() const { return m_message->text(); }

double ComparePanel::targetOverride() const { return m_target->value(); }

std::vector<RunFigures> ComparePanel::figures() const {
  std::vector<RunFigures> figs = runFigures(m_runs);
  const double target = targetOverride();
  if (!(target > 0)) return figs;
  // Another target than the specs': times from the evaluations, and the speedups and
  // heterogeneity costs from those times, as runFigures() does.
  for (std::size_t i = 0; i < figs.size(); ++i) {
    figs[i].target = target;
    figs[i].timeToTarget = m_runs[i].timeToTarget(target);
  }
  fillRelativeFigures(figs, m_runs);
  return figs;
}

void ComparePanel::updateGroups() {
  std::vector<const RunData*> pointers;
  for (const RunData& r : m_runs) pointers.push_back(&r);
  m_chart->setGrouped(m_group->isChecked());
  m_chart->setRuns(std::move(pointers),
                   m_group->isChecked() ? groupLabels(m_runs, groupKey()) : QStringList());
}

void ComparePanel::updateBars(const std::vector<RunFigures>& figs) {
  m_bars->setBars(timeToTargetBars(m_runs, figs, groupLabels(m_runs, groupKey()), m_group->isChecked()));
}

void ComparePanel::updateTable() {
  const std::vector<RunFigures> figs = figures();
  updateBars(figs);
  m_table->setRowCount(static_cast<int>(figs.size()));
  for (std::size_t i = 0; i < figs.size(); ++i) {
    const RunFigures& f = figs[i];
    const QStringList cells = {QString::number(f.runId),
                               f.name,
                               f.strategy,
                               QString::number(f.seed),
                               f.status,
                               figure(f.target, 3),
                               timeToTargetText(f, 2),
                               figure(f.speedupVsBsp, 2, QStringLiteral("×")),
                               figure(f.heterogeneityCost, 2),
                               figure(f.finalAccuracy, 4),
                               figure(f.meanWait, 4),
                               figure(f.meanStaleness, 2),
                               figure(f.maxStaleness, 0),
                               figure(f.updates, 0),
                               figure(f.dropped, 0),
                               figure(f.lost, 0)};
    for (int c = 0; c < cells.size(); ++c) {
      auto* item = new QTableWidgetItem(cells[c]);
      if (c != Name && c != Strategy && c != Status) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
      m_table->setItem(static_cast<int>(i), c, item);
    }
  }
  m_table->resizeColumnsToContents();
}

void ComparePanel::updateTargetLine() {
  double target = std::numeric_limits<double>::quiet_NaN();
  if (m_chart->metric() == ConvergenceChart::Metric::Accuracy) {
    if (targetOverride() > 0) {
      target = targetOverride();
    } else {
      for (const RunFigures& f : runFigures(m_runs)) {
        if (f.target) {
          target = *f.target;  // the first run's; a suite shares one
          break;
        }
      }
    }
  }
  m_chart->setTarget(target);
}

void ComparePanel::updateSmoothingLabel() {
  m_smoothingLabel->setText(QString::number(m_smoothing->value() / 100.0, 'f', 2));
}

QString ComparePanel::groupKey() const { return m_groupKey->currentText(); }

}  // namespace dasp::ui
