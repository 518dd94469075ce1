// SPDX-License-Identifier: MIT
#include "ui/runs/sweep_view.h"

#include "ui/charts/sweep_heatmap.h"
#include "ui/charts/sweep_parallel.h"

#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

namespace dasp::ui {

namespace {

QTableWidgetItem* cell(const QString& text, bool number = false) {
  auto* item = new QTableWidgetItem(text);
  if (number) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
  return item;
}

QString timeText(const SweepRow& row) {
  if (!row.mean) return QObject::tr("not reached");
  QString text = QString::number(*row.mean, 'f', 2);
  if (row.stddev) text += QStringLiteral(" ± ") + QString::number(*row.stddev, 'f', 2);
  return text;
}

}  // namespace

SweepView::SweepView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  m_note = new QLabel(this);
  m_note->setObjectName(QStringLiteral("sweepNote"));
  m_note->setWordWrap(true);
  layout->addWidget(m_note);
  auto* splitter = new QSplitter(Qt::Vertical, this);
  m_table = new QTableWidget(0, 0, splitter);
  m_table->setObjectName(QStringLiteral("sweepTable"));
  m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_table->setSelectionMode(QAbstractItemView::SingleSelection);
  m_table->verticalHeader()->hide();
  m_table->horizontalHeader()->setStretchLastSection(true);
  m_chart = new SweepParallelChart(splitter);
  splitter->addWidget(m_table);
  splitter->addWidget(m_chart);
  splitter->setStretchFactor(0, 1);
  splitter->setStretchFactor(1, 2);
  layout->addWidget(splitter, 1);
  connect(m_table, &QTableWidget::currentCellChanged, this,
          [this](int row, int, int, int) { m_chart->setHighlighted(row); });
  setRuns({});
}

void SweepView::setRuns(const std::vector<RunData>& runs) {
  const SweepTable sweep = SweepTable::fromRuns(runs);
  m_table->clear();
  m_table->setRowCount(0);
  m_chart->setView(sweepParallelOf(sweep));
  if (!sweep.isSweep()) {
    m_note->setText(runs.empty() ? tr("No runs to compare.")
                                 : tr("Not a sweep: no spec field other than the strategy differs between these runs."));
    m_table->setColumnCount(0);
    return;
  }
  m_note->setText(tr("%1 grid points over %2; time to target at each run's own target, mean ± std over the runs "
                     "that reached it. Choose a row to highlight its line.")
                      .arg(sweep.rows.size())
                      .arg(sweep.sweepPaths.join(QStringLiteral(", "))));
  QStringList headers = sweep.sweepPaths;
  headers << tr("Strategy") << tr("Runs") << tr("Reached") << tr("Time to target (s)");
  m_table->setColumnCount(static_cast<int>(headers.size()));
  m_table->setHorizontalHeaderLabels(headers);
  m_table->setRowCount(static_cast<int>(sweep.rows.size()));
  for (int r = 0; r < static_cast<int>(sweep.rows.size()); ++r) {
    const SweepRow& row = sweep.rows[static_cast<std::size_t>(r)];
    int c = 0;
    for (const QString& value : row.values) m_table->setItem(r, c++, cell(value.isEmpty() ? tr("(absent)") : value));
    m_table->setItem(r, c++, cell(row.strategy));
    m_table->setItem(r, c++, cell(QString::number(row.runs), true));
    m_table->setItem(r, c++, cell(QString::number(row.reached), true));
    m_table->setItem(r, c++, cell(timeText(row), true));
  }
  m_table->resizeColumnsToContents();
}

int SweepView::gridPoints() const { return m_table->rowCount(); }

}  // namespace dasp::ui
