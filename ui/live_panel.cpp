// SPDX-License-Identifier: MIT
#include "ui/live_panel.h"

#include "ui/live_charts.h"
#include "ui/run_controller.h"
#include "ui/run_data.h"

#include <QDoubleSpinBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QPushButton>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <limits>

namespace dasp::ui {

LivePanel::LivePanel(RunController* controller, QWidget* parent) : QWidget(parent), m_controller(controller) {
  auto* layout = new QVBoxLayout(this);
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
  m_table = new QTableWidget(0, ColumnCount, top);
  m_table->setObjectName(QStringLiteral("liveNodeTable"));
  m_table->setHorizontalHeaderLabels({tr("Node"), tr("State"), tr("Parallel"), tr("Iterations"), tr("Mean wait (ms)"),
                                      tr("Mean staleness"), tr("Last loss")});
  m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_table->setSelectionMode(QAbstractItemView::SingleSelection);
  m_table->verticalHeader()->hide();
  m_table->horizontalHeader()->setStretchLastSection(true);
  topLayout->addWidget(m_table, 1);

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
  actions->addStretch(1);
  m_killServer = button(tr("Kill server"), "killServerButton", tr("Kill the parameter server's process"));
  m_nodeButtons = {slow, restore, pause, resume, kill};
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
  // The table needs only a few rows visible; the charts get the rest of the dock.
  m_table->setMinimumHeight(m_table->verticalHeader()->defaultSectionSize() * 3);
  top->setMinimumHeight(0);
  splitter->setSizes({1, 3});

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

void LivePanel::setRunning(bool running) {
  m_running = running;
  updateActions();
}

QString LivePanel::selectedNode() const {
  const QModelIndexList rows = m_table->selectionModel()->selectedRows(Node);
  return rows.isEmpty() ? QString() : rows.front().data().toString();
}

double LivePanel::slowFactor() const { return m_factor->value(); }

void LivePanel::updateActions() {
  // The actions act on the live run: not while another run is replayed in this view.
  const bool live = m_running && !m_replay;
  const bool node = live && !selectedNode().isEmpty();
  for (QPushButton* b : m_nodeButtons) b->setEnabled(node);
  m_factor->setEnabled(node);
  m_killServer->setEnabled(live);
}

void LivePanel::resetStats() {
  m_stats.clear();
  m_eventsSeen = 0;
  m_shownRunId = -1;
}

void LivePanel::setCell(int row, int column, const QString& text) {
  QTableWidgetItem* item = m_table->item(row, column);
  if (item == nullptr) {
    item = new QTableWidgetItem(text);
    if (column != Node && column != State && column != Parallel) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    m_table->setItem(row, column, item);
  } else if (item->text() != text) {
    item->setText(text);
  }
}

void LivePanel::setRow(int row, const QString& node, const RowFigures& f) {
  auto number = [](double v, int decimals) { return std::isfinite(v) ? QString::number(v, 'f', decimals) : QString(); };
  setCell(row, Node, node);
  setCell(row, State, f.state);
  setCell(row, Parallel, f.parallel);
  setCell(row, Iterations, QString::number(f.iterations));
  setCell(row, MeanWait, number(1000.0 * f.meanWait, 1));
  setCell(row, MeanStaleness, number(f.meanStaleness, 2));
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
  if (s.down) f.state = QStringLiteral("DOWN");
  f.iterations = n.iterations;
  f.meanWait = s.waitSeen ? s.waitSum / static_cast<double>(s.waitSeen) : kNaN;
  f.meanStaleness = s.stalenessSeen ? s.stalenessSum / static_cast<double>(s.stalenessSeen) : kNaN;
  f.lastLoss = n.trainLoss.empty() ? kNaN : n.trainLoss.back().value;
  return f;
}

LivePanel::RowFigures LivePanel::figuresAt(const NodeData& n, const RunData& run, double t) {
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
  // The node's last state event by t says whether it was down (as the live table does).
  bool down = false;
  for (const Event& e : run.events) {
    if (e.t <= t && e.kind == QLatin1String("node") && e.node == n.name) down = e.detail.startsWith(QLatin1String("DOWN"));
  }
  if (down) f.state = QStringLiteral("DOWN");
  const std::size_t waits = upTo(n.wait);
  f.iterations = static_cast<std::int64_t>(n.wait.empty() ? upTo(n.trainLoss) : waits);
  f.meanWait = mean(n.wait, waits);
  f.meanStaleness = mean(n.staleness, upTo(n.staleness));
  const std::size_t losses = upTo(n.trainLoss);
  f.lastLoss = losses > 0 ? n.trainLoss[losses - 1].value : kNaN;
  return f;
}

void LivePanel::refresh() {
  if (m_data == nullptr) {
    m_table->setRowCount(0);
    m_summary->setText(m_replay ? tr("No run to replay.") : tr("No run yet: design an experiment and Launch it."));
    updateActions();
    Q_EMIT refreshed();
    return;
  }
  const RunData& d = *m_data;
  if (d.runId != m_shownRunId) {  // a new run (the next of a suite): start over
    resetStats();
    m_shownRunId = d.runId;
  }
  if (!m_replay) {
    for (; m_eventsSeen < d.events.size(); ++m_eventsSeen) {
      const Event& e = d.events[m_eventsSeen];
      if (e.kind == QLatin1String("node")) m_stats[e.node].down = e.detail.startsWith(QLatin1String("DOWN"));
    }
  }
  const QString selected = selectedNode();
  m_table->setRowCount(static_cast<int>(d.nodes.size()));
  for (std::size_t i = 0; i < d.nodes.size(); ++i) {
    const NodeData& n = d.nodes[i];
    setRow(static_cast<int>(i), n.name, m_replay ? figuresAt(n, d, m_cursor) : liveFigures(n));
  }
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
  QString text = tr("%1 %2 · %3 · seed %4 · %5 · t = %6 s · version %7")
                     .arg(m_replay ? tr("Replay of run") : tr("Run"))
                     .arg(d.runId)
                     .arg(d.strategy.isEmpty() ? tr("?") : d.strategy)
                     .arg(d.seed)
                     .arg(d.status.isEmpty() ? tr("running") : d.status)
                     .arg(m_replay ? QStringLiteral("%1 / %2").arg(m_cursor, 0, 'f', 1).arg(d.endT, 0, 'f', 1)
                                   : QString::number(d.endT, 'f', 1))
                     .arg(static_cast<qint64>(version));
  if (eval != nullptr) {
    text += tr(" · accuracy %1 (loss %2, version %3)").arg(eval->accuracy, 0, 'f', 4).arg(eval->loss, 0, 'f', 4).arg(eval->version);
  }
  m_summary->setText(text);
  updateActions();
  Q_EMIT refreshed();
}

}  // namespace dasp::ui
