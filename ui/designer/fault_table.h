// SPDX-License-Identifier: MIT
#pragma once
// FaultTable: the experiment designer's editor of the fault drills (ExperimentSpec.faults)
// — one row per drill: the node (an editable list of "server", the chain's replicas,
// "evaluator" and the cluster's workers; any name may be typed), the action (kill or
// pause), the run time of the fault and the delay after which the node is restarted
// (kill) or resumed (pause), empty for never; buttons add and remove drills.
//
// faults() parses the cells; a cell that is not a number gives an error naming the field
// as the CLI does ("faults[1].at_s: 'soon' is not a number"). The values themselves
// (negative times, unknown node names) are checked by validateSpec, like every field.
//
// Threading: GUI thread only.

#include "core/common/result.h"
#include "dasp/v1/experiment.pb.h"

#include <QStringList>
#include <QWidget>

#include <vector>

class QPushButton;
class QTableWidget;

namespace dasp::ui {

class FaultTable : public QWidget {
  Q_OBJECT

 public:
  enum Column { Node, Action, AtS, RestartAfterS, ColumnCount };

  explicit FaultTable(QWidget* parent = nullptr);

  void setFaults(const google::protobuf::RepeatedPtrField<v1::FaultSpec>& faults);
  // The drills as the table shows them, in row order.
  Result<std::vector<v1::FaultSpec>> faults() const;
  int faultCount() const;
  QTableWidget* table() const { return m_table; }

  // The names the node column offers (the table keeps names typed by hand).
  void setNodeNames(const QStringList& names);
  const QStringList& nodeNames() const { return m_nodeNames; }

 public Q_SLOTS:
  // Appends a drill: kill the server 10 s after the last drill (or at 10 s), restart 5 s later.
  void addFault();
  void removeSelectedFaults();

 Q_SIGNALS:
  void changed();

 private:
  void appendRow(const v1::FaultSpec& fault);

  QTableWidget* m_table = nullptr;
  QPushButton* m_remove = nullptr;
  QStringList m_nodeNames;
};

}  // namespace dasp::ui
