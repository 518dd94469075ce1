// SPDX-License-Identifier: MIT
#pragma once
// The named charts of `dasp-report --chart NAME --out FILE.png|FILE.svg`, drawn by the
// workbench's own widgets from runs of a store:
//   convergence     test accuracy against time, every run (mean ± std per strategy when a
//                   strategy has several runs), the target line when the runs share one
//   loss            test loss against time, log axis
//   time-to-target  the time-to-target bars per strategy (ui/charts/time_to_target_bars.h)
//   lanes           each run's node lanes over the whole run, one below the other
//   staleness       each run's staleness histogram, one below the other
// The reports set their convergence charts up the same way (showConvergence).
//
// Threading: GUI thread only (renders widgets; needs a QApplication).

#include "core/common/result.h"
#include "ui/charts/report.h"
#include "ui/charts/run_groups.h"
#include "ui/charts/run_data.h"

#include <QString>
#include <QStringList>

#include <vector>

namespace dasp::ui {

class ConvergenceChart;

// The names --chart takes, in the order above.
const QStringList& chartNames();
// Writes chart `name` of `runs` to `path` (.png or .svg). Errors name the problem: an
// unknown chart (listing the names), no runs, runs with nothing to draw for that chart,
// an unknown image format, an unwritable file.
// `groupKey` groups the convergence, loss and time-to-target charts ("strategy" or a spec
// path that varies between the runs, run_groups.h). `sweepAxes`: the sweep chart's axes
// (chooseAxes: empty chooses them), its heatmaps one under the other.
Status writeNamedChart(const std::vector<RunData>& runs, const QString& name, const QString& path,
                       const QString& groupKey = strategyGroupKey(), const QString& sweepAxes = {});

// Shows `runs` in `chart` as the reports do: grouped by `groupKey` (mean ± std) when a
// group has several runs, else one curve each; the target line when every run has the
// same target. `figs` is runFigures(runs).
void showConvergence(ConvergenceChart& chart, const std::vector<RunData>& runs, const std::vector<RunFigures>& figs,
                     const QString& groupKey = strategyGroupKey());

}  // namespace dasp::ui
