// SPDX-License-Identifier: MIT
#include "ui/charts/run_groups.h"

#include "ui/charts/sweep_heatmap.h"

#include <cstdint>
#include <map>

namespace dasp::ui {

QStringList groupKeys(const std::vector<RunData>& runs) {
  QStringList keys{strategyGroupKey()};
  for (const QString& path : SweepTable::fromRuns(runs).varyingPaths()) {
    if (path != QLatin1String("strategy.name")) keys << path;
  }
  return keys;
}

Result<QString> checkedGroupKey(const std::vector<RunData>& runs, const QString& key) {
  if (key.isEmpty()) return strategyGroupKey();
  const QStringList keys = groupKeys(runs);
  if (keys.contains(key)) return key;
  return Status::error(QStringLiteral("%1: not a spec field that differs between these runs, so they cannot be grouped "
                                      "by it (use one of %2)")
                           .arg(key, keys.join(QStringLiteral(", ")))
                           .toStdString());
}

QStringList groupLabels(const std::vector<RunData>& runs, const QString& key) {
  QStringList labels;
  if (key == strategyGroupKey()) {
    for (const RunData& r : runs) labels << r.displayStrategy();
    return labels;
  }
  // The table keeps only the runs with a readable spec: find each run's row by its id.
  const SweepTable table = SweepTable::fromRuns(runs);
  std::map<std::int64_t, const SweepRun*> byId;
  for (const SweepRun& r : table.runs) byId.emplace(r.runId, &r);
  for (const RunData& run : runs) {
    const auto row = byId.find(run.runId);
    if (row == byId.end()) {
      labels << QStringLiteral("%1 unknown (no spec)").arg(key);
      continue;
    }
    const auto& values = row->second->values;
    const auto it = values.find(key);
    if (it == values.end()) {
      labels << key;  // the same for every run: one group
    } else {
      labels << (it->second.isEmpty() ? QStringLiteral("%1 unset").arg(key) : QStringLiteral("%1=%2").arg(key, it->second));
    }
  }
  return labels;
}

std::vector<RunGroup> groupByLabels(const QStringList& labels) {
  std::vector<RunGroup> groups;
  std::map<QString, std::size_t> index;
  for (qsizetype i = 0; i < labels.size(); ++i) {
    auto it = index.find(labels[i]);
    if (it == index.end()) {
      it = index.emplace(labels[i], groups.size()).first;
      groups.push_back(RunGroup{labels[i], {}});
    }
    groups[it->second].members.push_back(static_cast<std::size_t>(i));
  }
  return groups;
}

std::vector<RunGroup> groupRuns(const std::vector<RunData>& runs, const QString& key) {
  return groupByLabels(groupLabels(runs, key));
}

}  // namespace dasp::ui
