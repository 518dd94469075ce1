// SPDX-License-Identifier: MIT
#include "ui/runs/faults_view.h"

#include "core/results/recovery_metrics.h"
#include "ui/charts/report.h"

#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

#include <cmath>
#include <optional>

namespace dasp::ui {

namespace {

const QString kNone = QStringLiteral("–");

QString fig(const std::optional<double>& v, int decimals) {
  return v && std::isfinite(*v) ? QString::number(*v, 'f', decimals) : kNone;
}

QString fig(const std::optional<std::int64_t>& v) { return v ? QString::number(*v) : kNone; }

QTableWidget* makeTable(const QString& name, QWidget* parent) {
  auto* t = new QTableWidget(0, 0, parent);
  t->setObjectName(name);
  t->setEditTriggers(QAbstractItemView::NoEditTriggers);
  t->setSelectionBehavior(QAbstractItemView::SelectRows);
  t->verticalHeader()->hide();
  t->horizontalHeader()->setStretchLastSection(true);
  t->setWordWrap(false);
  return t;
}

void setCell(QTableWidget* t, int row, int column, const QString& text, bool left, const QString& tip = {}) {
  auto* item = new QTableWidgetItem(text);
  item->setTextAlignment((left ? Qt::AlignLeft : Qt::AlignRight) | Qt::AlignVCenter);
  item->setToolTip(tip.isEmpty() ? text : tip);
  t->setItem(row, column, item);
}

}  // namespace

FaultsView::FaultsView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  m_empty = new QLabel(tr("None of these runs has fault drills (Designer → Fault drills, or kill the server "
                          "from the Live view)."),
                       this);
  m_empty->setObjectName(QStringLiteral("faultsEmpty"));
  m_empty->setWordWrap(true);
  layout->addWidget(m_empty);

  auto* splitter = new QSplitter(Qt::Vertical, this);
  splitter->setChildrenCollapsible(false);
  auto* top = new QWidget(splitter);
  auto* topLayout = new QVBoxLayout(top);
  topLayout->setContentsMargins(0, 0, 0, 0);
  m_recovery = makeTable(QStringLiteral("recoveryTable"), top);
  m_recovery->setToolTip(tr("Per recovery mode, worker count and fault index: mean ± std over the runs"));
  topLayout->addWidget(m_recovery, 1);
  m_note = new QLabel(top);
  m_note->setObjectName(QStringLiteral("recoveryNote"));
  m_note->setWordWrap(true);
  m_note->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_note->setStyleSheet(QStringLiteral("QLabel { color: palette(mid); }"));
  topLayout->addWidget(m_note);
  m_faults = makeTable(QStringLiteral("faultTable"), splitter);
  m_faults->setColumnCount(ColumnCount);
  m_faults->setHorizontalHeaderLabels({tr("Run"), tr("Recovery"), tr("Fault"), tr("At (s)"), tr("Restarted (s)"),
                                       tr("Detection (s)"), tr("Downtime (s)"), tr("Version before → after"),
                                       tr("Updates lost"), tr("Gradients in outage / dropped / discarded"),
                                       tr("Accuracy before → lowest"), tr("Back to pre-fault (s)"), tr("Change at resume"),
                                       tr("CPU-s"), tr("What recovery did")});
  splitter->addWidget(top);
  splitter->addWidget(m_faults);
  splitter->setStretchFactor(0, 1);
  splitter->setStretchFactor(1, 2);
  layout->addWidget(splitter, 1);
  setRuns({});
}

void FaultsView::setRuns(const std::vector<RunData>& runs) {
  const std::vector<RunFaults> drills = runFaults(runs);
  m_empty->setVisible(drills.empty());

  const RecoveryTable table = dasp::recoveryTable(drills);
  m_recovery->clear();
  m_recovery->setColumnCount(static_cast<int>(table.header.size()));
  QStringList header;
  for (const auto& h : table.header) header << QString::fromStdString(h);
  m_recovery->setHorizontalHeaderLabels(header);
  m_recovery->setRowCount(drills.empty() ? 0 : static_cast<int>(table.rows.size()));
  for (int r = 0; r < m_recovery->rowCount(); ++r) {
    const auto& row = table.rows[static_cast<std::size_t>(r)];
    for (std::size_t c = 0; c < row.size() && c < table.header.size(); ++c) {
      setCell(m_recovery, r, static_cast<int>(c), QString::fromStdString(row[c]), c < 3);
    }
  }
  m_recovery->resizeColumnsToContents();
  m_note->setText(drills.empty() ? QString() : QString::fromStdString(table.note));
  m_note->setVisible(!drills.empty());

  m_faults->setRowCount(0);
  for (const RunFaults& run : drills) {
    for (const RecoveryMetrics& m : run.faults) {
      const FaultRecord& f = m.fault;
      const int row = m_faults->rowCount();
      m_faults->insertRow(row);
      const QString what = QStringLiteral("%1: %2 %3")
                               .arg(f.index)
                               .arg(QString::fromStdString(f.action), QString::fromStdString(f.node));
      const QString back = m.recoverS ? fig(m.recoverS, 2) : (m.accuracyBefore ? tr("never") : kNone);
      setCell(m_faults, row, Run, QString::number(run.runId), false);
      setCell(m_faults, row, Recovery, QString::fromStdString(run.recovery), true);
      setCell(m_faults, row, Fault, what, true);
      setCell(m_faults, row, AtS, QString::number(f.atS, 'f', 2), false);
      setCell(m_faults, row, RestartS, fig(f.restartAtS, 2), false);
      setCell(m_faults, row, DetectionS, fig(m.detectionS, 2), false);
      setCell(m_faults, row, DowntimeS, fig(m.downtimeS, 2), false);
      setCell(m_faults, row, Versions,
              QStringLiteral("%1 → %2").arg(f.versionBefore).arg(f.versionAfter ? QString::number(*f.versionAfter) : kNone),
              false);
      setCell(m_faults, row, UpdatesLost, fig(m.updatesLost), false);
      setCell(m_faults, row, Gradients,
              QStringLiteral("%1 / %2 / %3").arg(f.gradientsDuringOutage).arg(f.gradientsDropped).arg(f.gradientsDiscarded),
              false);
      setCell(m_faults, row, Accuracy, QStringLiteral("%1 → %2").arg(fig(m.accuracyBefore, 4), fig(m.accuracyLowestAfter, 4)),
              false);
      setCell(m_faults, row, BackS, back, false);
      const bool change = m.accuracyJump && std::isfinite(*m.accuracyJump);
      setCell(m_faults, row, ChangeAtResume,
              change ? QStringLiteral("%1%2").arg(*m.accuracyJump >= 0 ? QStringLiteral("+") : QString())
                           .arg(*m.accuracyJump, 0, 'f', 4)
                     : kNone,
              false, tr("first evaluation after training resumed minus the accuracy before the fault"));
      setCell(m_faults, row, CpuS, QString::number(f.cpuS, 'f', 2), false);
      setCell(m_faults, row, Detail, QString::fromStdString(f.detail), true);
    }
  }
  m_faults->resizeColumnsToContents();
}

int FaultsView::faultCount() const { return m_faults->rowCount(); }

}  // namespace dasp::ui
