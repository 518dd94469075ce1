// SPDX-License-Identifier: MIT
#pragma once
// Runs grouped by one key: the strategy (its results-table label, so that ssp(3) and
// ssp(10) stay apart) or any spec field that differs between the runs (a dotted path such
// as cluster.count, read from each run's resolved spec as the sweep table reads it,
// ui/charts/sweep_heatmap.h). The compare view's curves and time-to-target bars and the
// reports group through here.
// Threading: plain computations, any thread.

#include "core/common/result.h"
#include "ui/charts/run_data.h"

#include <QString>
#include <QStringList>

#include <cstddef>
#include <vector>

namespace dasp::ui {

// The key that groups by strategy.
inline const QString& strategyGroupKey() {
  static const QString key = QStringLiteral("strategy");
  return key;
}

struct RunGroup {
  QString label;                     // "dasp", "cluster.count=16"
  std::vector<std::size_t> members;  // indexes into the runs, in input order
};

// The keys a set of runs can be grouped by: "strategy", then every spec path that varies
// between them (strategy.name left out: "strategy" is it).
QStringList groupKeys(const std::vector<RunData>& runs);
// `key` if the runs can be grouped by it (empty: the strategy), else an error that starts
// with the key and lists groupKeys(runs).
Result<QString> checkedGroupKey(const std::vector<RunData>& runs, const QString& key);
// One label per run: the strategy label (else the strategy) for "strategy", else
// "PATH=VALUE" ("PATH unset" where a run's spec lacks the field). A key that is not a
// varying path gives every run the label KEY (one group).
QStringList groupLabels(const std::vector<RunData>& runs, const QString& key);
// The groups in first-seen order.
std::vector<RunGroup> groupRuns(const std::vector<RunData>& runs, const QString& key);
// The same from labels (one per run).
std::vector<RunGroup> groupByLabels(const QStringList& labels);

}  // namespace dasp::ui
