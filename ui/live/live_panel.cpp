// SPDX-License-Identifier: MIT
#include "ui/live/live_panel.h"

#include "ui/charts/convergence_chart.h"
#include "ui/charts/node_bars.h"
#include "ui/live/live_charts.h"
#include "ui/live/run_controller.h"
#include "ui/charts/run_data.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QScrollBar>
#include <QPushButton>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <limits>

namespace dasp::ui {

namespace {

enum EventColumn { EventT, EventKind, EventNode, EventDetail, EventColumnCount };

// Periodic checkpoints are routine: the server row's tooltip shows the last one, the list
// leaves them out.
bool listedEvent(const Event& e) { return e.code != v1::RunEvent::CHECKPOINT; }

// The state cell's tooltip: the last news of the node, and a server's last checkpoint.
QString tipOf(const NodeStatus& st) {
  const QString news = QString::fromStdString(st.news);
  const QString checkpoint = QString::fromStdString(st.checkpoint);
  if (checkpoint.isEmpty()) return news;
  return news.isEmpty() ? checkpoint : news + QLatin1Char('\n') + checkpoint;
}

}  // namespace

LivePanel::LivePanel(RunController* controller, QWidget* parent) : QWidget(parent), m_controller(controller) {
  auto* layout = new QVBoxLayout(this);
  m_divergenceBanner = new QLabel(this);
  m_divergenceBanner->setObjectName(QStringLiteral("liveDivergenceBanner"));
  m_divergenceBanner->setWordWrap(true);
  m_divergenceBanner->setStyleSheet(
      QStringLiteral("QLabel { background: #b00020; color: white; padding: 6px; font-weight: bold; }"));
  m_divergenceBanner->hide();
  layout->addWidget(m_divergenceBanner);
  m_summary = new QLabel(tr("No run yet: design an experiment and Launch it."), this);
  m_summary->setObjectName(QStringLiteral("liveSummary"));
  m_summary->setWordWrap(true);
  m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(m_summary);

  auto* splitter = new QSplitter(Qt::Vertical, this);
  splitter->setObjectName(QStringLiteral("liveSplitter"));
  auto* top = new QWidget(splitter);
  auto* topLayout = new QVBoxLayout(top);
  topLayout->setContentsMargins(0, 0, 0, 0);
  auto* tables = new QSplitter(Qt::Horizontal, top);
  tables->setObjectName(QStringLiteral("liveTableSplitter"));
  tables->setChildrenCollapsible(false);
  m_table = new QTableWidget(0, ColumnCount, tables);
  m_table->setObjectName(QStringLiteral("liveNodeTable"));
  m_table->setHorizontalHeaderLabels({tr("Node"), tr("State"), tr("Parallel"), tr("Iterations"), tr("Batch (share)"),
                                      tr("Samples/s"), tr("Mean wait (ms)"), tr("Mean staleness"), tr("Refused"),
                                      tr("Score"), tr("Last loss")});
  m_table->horizontalHeaderItem(Batch)->setToolTip(
      tr("The node's batch at the end of the per-node bars' window and its share of the cluster's (DASP gives "
         "faster nodes larger batches)"));
  m_table->horizontalHeaderItem(SamplesPerS)->setToolTip(
      tr("Training samples a second over the per-node bars' window: iterations × their batches"));
  m_table->horizontalHeaderItem(Score)->setToolTip(
      tr("Straggler score, 0..1: the lower of the node's throughput relative to the fastest node and to its own "
         "best, over the per-node bars' window; the lowest score below 0.75 is the straggler (red)"));
  m_table->horizontalHeaderItem(Refused)->setToolTip(
      tr("Pushes the server refused and did not apply (NaN or Inf, or outside strategy.gradient_guard); the worker "
         "went on from fresh parameters"));
  m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_table->setSelectionMode(QAbstractItemView::SingleSelection);
  m_table->verticalHeader()->hide();
  m_table->horizontalHeader()->setStretchLastSection(true);
  m_events = new QTableWidget(0, EventColumnCount, tables);
  m_events->setObjectName(QStringLiteral("liveEvents"));
  m_events->setHorizontalHeaderLabels({tr("t (s)"), tr("Event"), tr("Node"), tr("Detail")});
  m_events->setToolTip(tr("The run's events: nodes joining and going down, live actions, fault drills, "
                          "the server's recovery (periodic checkpoints are left out), process exits"));
  m_events->setEditTriggers(QAbstractItemView::NoEditTriggers);
  m_events->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_events->verticalHeader()->hide();
  m_events->verticalHeader()->setDefaultSectionSize(m_table->verticalHeader()->defaultSectionSize());
  m_events->horizontalHeader()->setStretchLastSection(true);
  m_events->setWordWrap(false);
  tables->addWidget(m_table);
  tables->addWidget(m_events);
  tables->setStretchFactor(0, 3);
  tables->setStretchFactor(1, 2);
  topLayout->addWidget(tables, 1);

  auto* actions = new QHBoxLayout;
  m_factor = new QDoubleSpinBox(top);
  m_factor->setObjectName(QStringLiteral("slowFactor"));
  m_factor->setRange(1.1, 100.0);
  m_factor->setDecimals(1);
  m_factor->setValue(3.0);
  m_factor->setPrefix(QStringLiteral("×"));
  m_factor->setToolTip(tr("Slow the node to k times its own slowdown."));
  auto button = [&](const QString& text, const char* name, const QString& tip) {
    auto* b = new QPushButton(text, top);
    b->setObjectName(QLatin1String(name));
    b->setToolTip(tip);
    actions->addWidget(b);
    return b;
  };
  auto* slow = button(tr("Slow"), "slowButton", tr("Slow the selected worker by the factor"));
  actions->addWidget(m_factor);
  auto* restore = button(tr("Restore"), "restoreButton", tr("Back to the worker's own speed profile"));
  auto* pause = button(tr("Pause"), "pauseButton", tr("Stop the selected node's process (SIGSTOP)"));
  auto* resume = button(tr("Resume"), "resumeButton", tr("Continue a paused node (SIGCONT)"));
  auto* kill = button(tr("Kill"), "killButton", tr("Kill the selected node's process"));
  m_restart = button(tr("Restart"), "restartButton",
                     tr("Start a killed node again: a server resumes as the spec's recovery mode says, a chain "
                        "replica rejoins at the tail, a worker rejoins with its rank"));
  actions->addStretch(1);
  m_killServer = button(tr("Kill server"), "killServerButton",
                        tr("Kill the parameter server's process (a chain's current head)"));
  m_workerButtons = {slow, restore};
  m_nodeButtons = {pause, resume, kill};
  topLayout->addLayout(actions);

  auto* charts = new QWidget(splitter);
  charts->setObjectName(QStringLiteral("chartArea"));
  m_chartArea = new QVBoxLayout(charts);
  m_chartArea->setContentsMargins(0, 0, 0, 0);
  m_charts = new LiveCharts(charts);
  m_charts->setObjectName(QStringLiteral("liveCharts"));
  m_chartArea->addWidget(m_charts, 1);
  splitter->addWidget(top);
  splitter->addWidget(charts);
  splitter->setStretchFactor(0, 1);
  splitter->setStretchFactor(1, 3);
  layout->addWidget(splitter, 1);
  // Compact rows; the table is as tall as its rows (up to kVisibleRows, then it scrolls:
  // fitTable()) and the charts get the rest of the dock.
  const int rowH = fontMetrics().height() + 4;
  for (QTableWidget* t : {m_table, m_events}) {
    t->verticalHeader()->setMinimumSectionSize(rowH);
    t->verticalHeader()->setDefaultSectionSize(rowH);
  }
  top->setMinimumHeight(0);
  splitter->setStretchFactor(0, 0);
  fitTable();

  connect(this, &LivePanel::refreshed, m_charts, &LiveCharts::refresh);
  connect(m_charts, &LiveCharts::cursorMoved, this, [this](double t) {
    if (!m_replay) return;
    m_cursor = t;
    refresh();
  });

  connect(slow, &QPushButton::clicked, this, [this] { m_controller->slowDown(selectedNode(), slowFactor()); });
  connect(restore, &QPushButton::clicked, this, [this] { m_controller->restore(selectedNode()); });
  connect(pause, &QPushButton::clicked, this, [this] { m_controller->pause(selectedNode()); });
  connect(resume, &QPushButton::clicked, this, [this] { m_controller->resume(selectedNode()); });
  connect(kill, &QPushButton::clicked, this, [this] { m_controller->kill(selectedNode()); });
  connect(m_restart, &QPushButton::clicked, this, [this] { m_controller->restart(selectedNode()); });
  connect(m_killServer, &QPushButton::clicked, m_controller, &RunController::killServer);
  connect(m_table->selectionModel(), &QItemSelectionModel::selectionChanged, this, &LivePanel::updateActions);
  updateActions();
}

void LivePanel::setRun(const RunData* run) {
  m_data = run;
  resetStats();
}

void LivePanel::showLive(const RunData* run) {
  m_replay = false;
  setRun(run);
  m_charts->showLive(run);
  refresh();
}

void LivePanel::showReplay(const RunData* run) {
  m_replay = true;
  setRun(run);
  m_cursor = run != nullptr && std::isfinite(run->endT) ? run->endT : 0.0;
  m_charts->showReplay(run);  // emits cursorMoved(end): refreshes the table
  refresh();
}

void LivePanel::fitTable() {
  // Room for every row up to kVisibleRows (16 workers, the server and the evaluator), at
  // least kMinRows, plus the header, the frame and a horizontal scroll bar when shown.
  const int rows = std::clamp(m_table->rowCount(), kMinRows, kVisibleRows);
  const int headerH = m_table->horizontalHeader()->sizeHint().height();
  const QScrollBar* hbar = m_table->horizontalScrollBar();
  const int barH = hbar->isVisible() ? hbar->height() : 0;
  const int h = headerH + rows * m_table->verticalHeader()->defaultSectionSize() + 2 * m_table->frameWidth() + barH;
  if (m_table->minimumHeight() != h || m_table->maximumHeight() != h) m_table->setFixedHeight(h);
}

void LivePanel::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  fitTable();  // a narrower dock may bring the horizontal scroll bar
}

void LivePanel::setRunning(bool running) {
  m_running = running;
  updateActions();
}

QString LivePanel::selectedNode() const {
  const QModelIndexList rows = m_table->selectionModel()->selectedRows(Node);
  return rows.isEmpty() ? QString() : rows.front().data().toString();
}

double LivePanel::slowFactor() const { return m_factor->value(); }

bool LivePanel::showsSimRun() const {
  return (m_data != nullptr && m_data->engine == QLatin1String("sim")) ||
         (!m_replay && m_controller != nullptr && m_controller->currentRunIsSim());
}

void LivePanel::updateActions() {
  // The actions act on the live run: not while another run is replayed in this view, and
  // never on a simulated run (one process, virtual time: no node process to act on).
  const bool live = m_running && !m_replay && !showsSimRun();
  const QString selected = selectedNode();
  const bool node = live && !selected.isEmpty();
  const bool worker = node && !m_services.contains(selected);
  for (QPushButton* b : m_nodeButtons) b->setEnabled(node);
  for (QPushButton* b : m_workerButtons) b->setEnabled(worker);
  m_factor->setEnabled(worker);
  const NodeStatus* status = m_status.find(selected.toStdString());
  m_restart->setEnabled(node && status != nullptr && status->condition == NodeCondition::Down);
  m_killServer->setEnabled(live);
}

void LivePanel::updateTimeWording(const RunData& run) {
  // A sim run's times are virtual seconds: the convergence chart's time axis says so.
  QComboBox* axis = m_charts->xAxisCombo();
  const int index = axis->findData(static_cast<int>(ConvergenceChart::XAxis::Time));
  if (index < 0) return;
  const QString text = run.engine == QLatin1String("sim") ? tr("against virtual time") : tr("against wall time");
  if (axis->itemText(index) != text) axis->setItemText(index, text);
}

void LivePanel::resetStats() {
  m_stats.clear();
  m_eventsSeen = 0;
  m_shownRunId = -1;
  m_services.clear();
  m_chain = false;
  m_servicesKnown = false;
  m_status = NodeStatusTracker();
  m_appliedT = 0;
  m_replayStatus = NodeStatusTracker();
  m_eventRows = 0;
  m_eventRowTimes.clear();
  m_events->setRowCount(0);
}

void LivePanel::setupServices(const RunData& run) {
  if (run.specJson.isEmpty()) return;  // a live run's spec comes with its first records
  m_servicesKnown = true;
  m_services.clear();
  m_chain = false;
  if (run.kind == QLatin1String("train")) return;  // a single-node run: no server
  const QJsonObject spec = QJsonDocument::fromJson(run.specJson.toUtf8()).object();
  const QJsonObject recovery = spec.value(QLatin1String("recovery")).toObject();
  m_chain = recovery.value(QLatin1String("mode")).toString() == QLatin1String("CHAIN");
  if (m_chain) {
    int replicas = recovery.value(QLatin1String("replicas")).toInt(3);
    replicas = std::clamp(replicas, 1, 16);
    for (int i = 0; i < replicas; ++i) m_services << QStringLiteral("server-%1").arg(i);
  } else {
    m_services << QStringLiteral("server");
  }
  m_services << QStringLiteral("evaluator");
  // Events applied before the services were known: applied again with them.
  m_eventsSeen = run.events.size();
  m_status = statusAt(run, std::numeric_limits<double>::infinity());
}

NodeStatusTracker LivePanel::statusAt(const RunData& run, double until) const {
  std::vector<std::size_t> order(run.events.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto key = [&](std::size_t i) {
    const double t = run.events[i].t;
    return std::isnan(t) ? std::numeric_limits<double>::infinity() : t;
  };
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return key(a) < key(b); });
  NodeStatusTracker status = initialStatus();
  for (std::size_t i : order) {
    if (!(run.events[i].t <= until)) break;
    status.apply(rowFromEvent(run.events[i]));
  }
  return status;
}

NodeStatusTracker LivePanel::initialStatus() const {
  std::vector<std::string> services;
  for (const QString& name : m_services) services.push_back(name.toStdString());
  return NodeStatusTracker(services, m_chain);
}

void LivePanel::refreshEventList(const RunData& run) {
  // New events are appended (a live run only grows); the replay cursor hides later ones.
  QScrollBar* bar = m_events->verticalScrollBar();
  const bool atEnd = bar->value() >= bar->maximum() - 2;
  bool added = false;
  for (; m_eventRows < run.events.size(); ++m_eventRows) {
    const Event& e = run.events[m_eventRows];
    if (!listedEvent(e)) continue;
    const int row = m_events->rowCount();
    m_events->insertRow(row);
    auto* t = new QTableWidgetItem(QString::number(e.t, 'f', 2));
    t->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    m_events->setItem(row, EventT, t);
    m_events->setItem(row, EventKind, new QTableWidgetItem(e.kindName()));
    m_events->setItem(row, EventNode, new QTableWidgetItem(e.node));
    auto* detail = new QTableWidgetItem(e.detail);
    detail->setToolTip(e.detail);
    m_events->setItem(row, EventDetail, detail);
    m_eventRowTimes.push_back(e.t);
    added = true;
  }
  if (added && m_events->rowCount() > 0 && m_eventRowTimes.size() <= 40) {
    m_events->resizeColumnToContents(EventKind);
    m_events->resizeColumnToContents(EventNode);
  }
  if (m_replay) {
    for (int row = 0; row < m_events->rowCount(); ++row) {
      const bool hide = m_eventRowTimes[static_cast<std::size_t>(row)] > m_cursor;
      if (m_events->isRowHidden(row) != hide) m_events->setRowHidden(row, hide);
    }
  } else if (added && atEnd) {
    m_events->scrollToBottom();
  }
}

LivePanel::RowFigures LivePanel::serviceFigures(const QString& node, const NodeStatus& status, const RunData& run) const {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  RowFigures f;
  f.state = QLatin1String(toString(status.condition));  // UP while running
  f.stateTip = tipOf(status);
  f.parallel = QLatin1String(toString(status.role));
  f.iterations = -1;
  f.meanWait = f.meanStaleness = f.lastLoss = kNaN;
  const bool replayCut = m_replay;
  if (node == QLatin1String("evaluator")) {
    std::int64_t count = 0;
    const Evaluation* last = nullptr;
    for (const Evaluation& e : run.evaluations) {
      if (replayCut && e.t > m_cursor) continue;
      ++count;
      if (last == nullptr || e.t >= last->t) last = &e;
    }
    f.iterations = count;
    if (last != nullptr) f.lastLoss = last->loss;
    return f;
  }
  // The model version, on the server that holds it (the head of a chain).
  if (!m_chain || status.role == ChainRole::Head) {
    std::int64_t version = 0;
    if (!replayCut) {
      if (auto it = run.summary.find(QStringLiteral("updates")); it != run.summary.end()) {
        version = static_cast<std::int64_t>(it->second);
      }
    }
    for (const Evaluation& e : run.evaluations) {
      if (!replayCut || e.t <= m_cursor) version = std::max(version, e.version);
    }
    f.iterations = version;
  }
  return f;
}

void LivePanel::setCell(int row, int column, const QString& text, const QString& tip) {
  QTableWidgetItem* item = m_table->item(row, column);
  if (item == nullptr) {
    item = new QTableWidgetItem(text);
    if (column != Node && column != State && column != Parallel) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    m_table->setItem(row, column, item);
  } else if (item->text() != text) {
    item->setText(text);
  }
  if (item->toolTip() != tip) item->setToolTip(tip);
}

void LivePanel::setRow(int row, const QString& node, const RowFigures& f) {
  auto number = [](double v, int decimals) { return std::isfinite(v) ? QString::number(v, 'f', decimals) : QString(); };
  setCell(row, Node, node);
  setCell(row, State, f.state, f.stateTip);
  setCell(row, Parallel, f.parallel);
  setCell(row, Iterations, f.iterations >= 0 ? QString::number(f.iterations) : QString());
  setCell(row, Batch, f.batch);
  setCell(row, SamplesPerS, number(f.samplesPerS, 0));
  setCell(row, MeanWait, number(1000.0 * f.meanWait, 1));
  setCell(row, MeanStaleness, number(f.meanStaleness, 2));
  setCell(row, Refused, f.refused >= 0 ? QString::number(f.refused) : QString());
  const QString scoreTip = std::isfinite(f.score) ? tr("relative to the fastest node %1, to its own best %2")
                                                        .arg(f.relativeScore, 0, 'f', 2)
                                                        .arg(f.individualScore, 0, 'f', 2)
                                                  : QString();
  setCell(row, Score, std::isfinite(f.score) ? number(f.score, 2) + (f.straggler ? tr(" straggler") : QString()) : QString(),
          scoreTip);
  QTableWidgetItem* score = m_table->item(row, Score);
  const QBrush brush = f.straggler ? QBrush(QColor(0xD0, 0x10, 0x10)) : QBrush();
  if (score->foreground() != brush) score->setForeground(brush);
  setCell(row, LastLoss, number(f.lastLoss, 4));
}

LivePanel::RowFigures LivePanel::liveFigures(const NodeData& n) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  NodeStats& s = m_stats[n.name];
  for (; s.waitSeen < n.wait.size(); ++s.waitSeen) s.waitSum += n.wait[s.waitSeen].value;
  for (; s.stalenessSeen < n.staleness.size(); ++s.stalenessSeen) s.stalenessSum += n.staleness[s.stalenessSeen].value;
  RowFigures f;
  f.state = tr("starting");
  if (!n.intervals.empty()) {
    f.state = QLatin1String(toString(n.intervals.back().state));
    f.parallel = QLatin1String(toString(n.intervals.back().parallel));
  }
  f.iterations = n.iterations;
  f.meanWait = s.waitSeen ? s.waitSum / static_cast<double>(s.waitSeen) : kNaN;
  f.meanStaleness = s.stalenessSeen ? s.stalenessSum / static_cast<double>(s.stalenessSeen) : kNaN;
  f.lastLoss = n.trainLoss.empty() ? kNaN : n.trainLoss.back().value;
  return f;
}

LivePanel::RowFigures LivePanel::figuresAt(const NodeData& n, const RunData& /*run*/, double t) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  // Series are in time order (the store and the feed append them so): binary searches.
  auto upTo = [t](const std::vector<Point>& v) {
    return static_cast<std::size_t>(
        std::partition_point(v.begin(), v.end(), [t](const Point& p) { return p.t <= t; }) - v.begin());
  };
  auto mean = [](const std::vector<Point>& v, std::size_t count) {
    double sum = 0;
    std::size_t finite = 0;
    for (std::size_t i = 0; i < count; ++i) {
      if (!std::isfinite(v[i].value)) continue;
      sum += v[i].value;
      ++finite;
    }
    return finite > 0 ? sum / static_cast<double>(finite) : kNaN;
  };
  RowFigures f;
  const auto it = std::partition_point(n.intervals.begin(), n.intervals.end(),
                                       [t](const Interval& i) { return i.t0 <= t; });
  if (it == n.intervals.begin()) {
    f.state = tr("not started");
  } else {
    const Interval& last = *(it - 1);
    // Between two intervals (the server had not heard from the node yet): IDLE.
    f.state = QLatin1String(toString(last.t1 >= t ? last.state : NodeState::Idle));
    f.parallel = QLatin1String(toString(last.parallel));
  }
  const std::size_t waits = upTo(n.wait);
  f.iterations = static_cast<std::int64_t>(n.wait.empty() ? upTo(n.trainLoss) : waits);
  f.meanWait = mean(n.wait, waits);
  f.meanStaleness = mean(n.staleness, upTo(n.staleness));
  const std::size_t losses = upTo(n.trainLoss);
  f.lastLoss = losses > 0 ? n.trainLoss[losses - 1].value : kNaN;
  return f;
}

void LivePanel::refresh() {
  // Before the runner has created the run (id 0) there is nothing to describe: no run
  // number, strategy or status yet.
  if (m_data == nullptr || m_data->runId <= 0) {
    m_table->setRowCount(0);
    fitTable();
    m_divergenceBanner->hide();
    m_summary->setText(m_replay    ? tr("No run to replay.")
                       : m_running ? tr("Starting the run…")
                                   : tr("No run yet: design an experiment and Launch it."));
    updateActions();
    Q_EMIT refreshed();
    return;
  }
  const RunData& d = *m_data;
  if (d.runId != m_shownRunId) {  // a new run (the next of a suite): start over
    resetStats();
    m_shownRunId = d.runId;
  }
  updateTimeWording(d);
  if (!m_servicesKnown) setupServices(d);
  // Node states from the events: incrementally while live (all over again, in time order,
  // when events older than those applied were merged); up to the cursor in a replay.
  bool inOrder = true;
  for (std::size_t i = m_eventsSeen; i < d.events.size() && inOrder; ++i) inOrder = !(d.events[i].t < m_appliedT);
  if (inOrder) {
    for (; m_eventsSeen < d.events.size(); ++m_eventsSeen) {
      m_status.apply(rowFromEvent(d.events[m_eventsSeen]));
      if (std::isfinite(d.events[m_eventsSeen].t)) m_appliedT = std::max(m_appliedT, d.events[m_eventsSeen].t);
    }
  } else {
    m_status = statusAt(d, std::numeric_limits<double>::infinity());
    for (; m_eventsSeen < d.events.size(); ++m_eventsSeen) {
      if (std::isfinite(d.events[m_eventsSeen].t)) m_appliedT = std::max(m_appliedT, d.events[m_eventsSeen].t);
    }
  }
  if (m_replay) m_replayStatus = statusAt(d, m_cursor);
  const NodeStatusTracker& status = m_replay ? m_replayStatus : m_status;
  const QString selected = selectedNode();
  // The scores as the bars show them (their window, their last refresh).
  std::map<QString, const dasp::ui::NodeStats*> scores;
  for (const dasp::ui::NodeStats& s : m_charts->bars()->stats()) scores[s.name] = &s;
  m_table->setRowCount(static_cast<int>(d.nodes.size()) + static_cast<int>(m_services.size()));
  fitTable();
  for (std::size_t i = 0; i < d.nodes.size(); ++i) {
    const NodeData& n = d.nodes[i];
    RowFigures f = m_replay ? figuresAt(n, d, m_cursor) : liveFigures(n);
    if (const NodeStatus* st = status.find(n.name.toStdString())) {
      if (st->condition != NodeCondition::Running) f.state = QLatin1String(toString(st->condition));
      f.stateTip = tipOf(*st);
      f.refused = st->refused;
    } else {
      f.refused = 0;
    }
    if (const auto it = scores.find(n.name); it != scores.end()) {
      f.score = it->second->score;
      f.relativeScore = it->second->relativeScore;
      f.individualScore = it->second->individualScore;
      f.straggler = it->second->straggler;
      f.batch = batchText(*it->second);
      f.samplesPerS = it->second->samplesPerS;
    }
    setRow(static_cast<int>(i), n.name, f);
  }
  for (qsizetype k = 0; k < m_services.size(); ++k) {
    const QString& name = m_services[k];
    const NodeStatus* found = status.find(name.toStdString());
    const NodeStatus st = found != nullptr ? *found : NodeStatus{};
    const int row = static_cast<int>(d.nodes.size() + static_cast<std::size_t>(k));
    setRow(row, name, serviceFigures(name, st, d));
  }
  refreshEventList(d);
  if (!selected.isEmpty() && selectedNode() != selected) {  // a lane inserted above: keep the node
    for (int row = 0; row < m_table->rowCount(); ++row) {
      if (m_table->item(row, Node)->text() == selected) m_table->selectRow(row);
    }
  }

  double version = 0;
  if (auto it = d.summary.find(QStringLiteral("updates")); it != d.summary.end()) version = it->second;
  // Replay: the last evaluation made by the cursor time; live: the latest.
  const Evaluation* eval = nullptr;
  for (auto it = d.evaluations.rbegin(); it != d.evaluations.rend() && eval == nullptr; ++it) {
    if (!m_replay || it->t <= m_cursor) eval = &*it;
  }
  if (m_replay) version = eval != nullptr ? static_cast<double>(eval->version) : 0;
  const bool sim = d.engine == QLatin1String("sim");
  QString text = tr("%1 %2 · %3 · seed %4 · %5 · %6 = %7 s · version %8")
                     .arg(m_replay ? tr("Replay of run") : tr("Run"))
                     .arg(d.runId)
                     .arg(d.displayStrategy().isEmpty() ? tr("?") : d.displayStrategy())
                     .arg(d.seed)
                     .arg(d.status.isEmpty() ? tr("running") : d.status)
                     .arg(sim ? tr("virtual t") : QStringLiteral("t"))
                     .arg(m_replay ? QStringLiteral("%1 / %2").arg(m_cursor, 0, 'f', 1).arg(d.endT, 0, 'f', 1)
                                   : QString::number(d.endT, 'f', 1))
                     .arg(static_cast<qint64>(version));
  if (eval != nullptr) {
    text += tr(" · accuracy %1 (loss %2, version %3)").arg(eval->accuracy, 0, 'f', 4).arg(eval->loss, 0, 'f', 4).arg(eval->version);
  }
  if (sim && m_running && !m_replay) text += tr(" · simulated: the live actions do not apply");
  m_summary->setText(text);
  const bool diverged = d.status == QLatin1String(toString(RunStatus::Diverged));
  if (diverged) {
    m_divergenceBanner->setText(tr("Run %1 diverged: %2. It was ended there; its time to target reads \"not reached "
                                   "(diverged)\".")
                                    .arg(d.runId)
                                    .arg(d.divergence.isEmpty() ? tr("the loss left training") : d.divergence));
  }
  m_divergenceBanner->setVisible(diverged);
  updateActions();
  Q_EMIT refreshed();
}

}  // namespace dasp::ui
