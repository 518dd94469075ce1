// SPDX-License-Identifier: MIT
#pragma once
// ClusterTable: the experiment designer's editor of the cluster — one row per worker with
// its name, slowdown, base iteration time, jitter and scheduled speed changes, plus
// buttons to add and remove workers.
//
// A cluster written as `count` + a slowdown pattern is shown expanded (expandWorkers), and
// stays in that compact form when read back as long as no row was edited, so presets
// round-trip unchanged; once edited, the cluster is written one entry per worker. Fields
// the table does not show (a node's device) are kept per row.
//
// Threading: GUI thread only.

#include "core/common/result.h"
#include "dasp/v1/experiment.pb.h"

#include <QStringList>
#include <QWidget>

class QLabel;
class QPushButton;
class QTableWidget;

namespace dasp::ui {

class ClusterTable : public QWidget {
  Q_OBJECT

 public:
  enum Column { Name, Slowdown, BaseMs, Jitter, Changes, ColumnCount };

  explicit ClusterTable(QWidget* parent = nullptr);

  void setCluster(const v1::ClusterSpec& cluster);
  // The cluster as the table shows it. A cell that is not a number gives an error naming
  // the field ("cluster.workers[2].speed.slowdown: 'x' is not a number").
  Result<v1::ClusterSpec> cluster() const;
  int workerCount() const;
  // The workers' names as the table shows them, in row order (empty names left out).
  QStringList workerNames() const;
  QTableWidget* table() const { return m_table; }

 public Q_SLOTS:
  void addWorker();
  void removeSelectedWorkers();

 Q_SIGNALS:
  void changed();

 private:
  void appendRow(const v1::NodeSpec& node);
  void markEdited();
  void updateNote();

  QTableWidget* m_table = nullptr;
  QLabel* m_note = nullptr;
  QPushButton* m_remove = nullptr;
  v1::ClusterSpec m_original;  // as set; returned unchanged while nothing was edited
  bool m_edited = false;
};

}  // namespace dasp::ui
