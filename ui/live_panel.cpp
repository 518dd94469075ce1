// SPDX-License-Identifier: MIT
#include "ui/live_panel.h"

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
  splitter->addWidget(top);
  splitter->addWidget(charts);
  splitter->setStretchFactor(0, 1);
  splitter->setStretchFactor(1, 2);
  layout->addWidget(splitter, 1);

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
  const bool node = m_running && !selectedNode().isEmpty();
  for (QPushButton* b : m_nodeButtons) b->setEnabled(node);
  m_factor->setEnabled(node);
  m_killServer->setEnabled(m_running);
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

void LivePanel::refresh() {
  if (m_data == nullptr) {
    m_table->setRowCount(0);
    Q_EMIT refreshed();
    return;
  }
  const RunData& d = *m_data;
  if (d.runId != m_shownRunId) {  // a new run (the next of a suite): start over
    resetStats();
    m_shownRunId = d.runId;
  }
  for (; m_eventsSeen < d.events.size(); ++m_eventsSeen) {
    const Event& e = d.events[m_eventsSeen];
    if (e.kind == QLatin1String("node")) m_stats[e.node].down = e.detail.startsWith(QLatin1String("DOWN"));
  }
  const QString selected = selectedNode();
  m_table->setRowCount(static_cast<int>(d.nodes.size()));
  double version = 0;
  if (auto it = d.summary.find(QStringLiteral("updates")); it != d.summary.end()) version = it->second;
  for (std::size_t i = 0; i < d.nodes.size(); ++i) {
    const NodeData& n = d.nodes[i];
    NodeStats& s = m_stats[n.name];
    for (; s.waitSeen < n.wait.size(); ++s.waitSeen) s.waitSum += n.wait[s.waitSeen].value;
    for (; s.stalenessSeen < n.staleness.size(); ++s.stalenessSeen) s.stalenessSum += n.staleness[s.stalenessSeen].value;
    const int row = static_cast<int>(i);
    setCell(row, Node, n.name);
    QString state = tr("starting");
    QString parallel;
    if (!n.intervals.empty()) {
      state = QLatin1String(toString(n.intervals.back().state));
      parallel = QLatin1String(toString(n.intervals.back().parallel));
    }
    if (s.down) state = QStringLiteral("DOWN");
    setCell(row, State, state);
    setCell(row, Parallel, parallel);
    setCell(row, Iterations, QString::number(n.iterations));
    setCell(row, MeanWait, s.waitSeen ? QString::number(1000.0 * s.waitSum / static_cast<double>(s.waitSeen), 'f', 1) : QString());
    setCell(row, MeanStaleness,
            s.stalenessSeen ? QString::number(s.stalenessSum / static_cast<double>(s.stalenessSeen), 'f', 2) : QString());
    setCell(row, LastLoss, n.trainLoss.empty() ? QString() : QString::number(n.trainLoss.back().value, 'f', 4));
  }
  if (!selected.isEmpty() && selectedNode() != selected) {  // a lane inserted above: keep the node
    for (int row = 0; row < m_table->rowCount(); ++row) {
      if (m_table->item(row, Node)->text() == selected) m_table->selectRow(row);
    }
  }

  QString text = tr("Run %1 · %2 · seed %3 · %4 · t = %5 s · version %6")
                     .arg(d.runId)
                     .arg(d.strategy.isEmpty() ? tr("?") : d.strategy)
                     .arg(d.seed)
                     .arg(d.status.isEmpty() ? tr("running") : d.status)
                     .arg(d.endT, 0, 'f', 1)
                     .arg(static_cast<qint64>(version));
  if (!d.evaluations.empty()) {
    const Evaluation& e = d.evaluations.back();
    text += tr(" · accuracy %1 (loss %2, version %3)").arg(e.accuracy, 0, 'f', 4).arg(e.loss, 0, 'f', 4).arg(e.version);
  }
  m_summary->setText(text);
  updateActions();
  Q_EMIT refreshed();
}

}  // namespace dasp::ui
