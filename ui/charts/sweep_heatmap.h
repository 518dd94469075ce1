// SPDX-License-Identifier: MIT
#pragma once
// Time to target over a parameter sweep (`dasp run --grid a=1,2 --grid b=x,y`): which spec
// fields differ between a set of runs, the runs grouped by those fields' values, and a
// heatmap of the mean time to target per combination, one heatmap per strategy.
//
// SweepTable reads only what the store keeps with every run (its resolved spec as JSON,
// its evaluations and summary), so any set of runs works, not only one `dasp run`: the
// axes are whatever differs. chooseAxes picks the heatmap's two axes, renderSweepHeatmap
// draws one with QPainter into a QImage (offscreen, no widgets). The report
// (ui/charts/report.h) adds a "Sweep: time to target" section from these.
//
// Threading: SweepTable, chooseAxes and sweepHeatmaps are plain computations, callable
// from any thread. Rendering paints a QImage, which needs a QGuiApplication (fonts) but no
// widgets; do it from one thread at a time (the GUI or the report tool's thread).

#include "core/common/result.h"
#include "ui/charts/run_data.h"

#include <QColor>
#include <QImage>
#include <QRect>
#include <QSize>
#include <QString>
#include <QStringList>

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

namespace dasp::ui {

// One spec field (a dotted path such as "strategy.dasp.delta") whose value differs
// between the runs.
struct SweepAxis {
  QString path;
  // The distinct values, as flattened: numbers in their shortest form, arrays
  // comma-joined, "" for a run whose spec lacks the field. Sorted by value when numeric,
  // else by text.
  std::vector<QString> values;
  bool numeric = false;       // every present value reads as a number
  // Varies only from one strategy to another (a suite entry's own knob, such as
  // strategy.barrier_timeout_s): part of what the strategy is, not a swept field.
  bool strategyKnob = false;
};

// One run as the sweep sees it.
struct SweepRun {
  std::int64_t runId = 0;
  QString strategy;                   // the spec's strategy.name (RunData::strategy without one)
  QString label;                      // as the views name it (RunData::displayStrategy: dasp-r)
  QString engine;                     // "real" or "sim"
  std::map<QString, QString> values;  // the run's value of every varying path ("" when absent)
  std::optional<double> target;       // stop.target_accuracy, when > 0
  // The summary's time_to_target_s, else the time of the first evaluation at or above the
  // target; none when the target is 0 or was never reached.
  std::optional<double> timeToTarget;
};

// The runs with the same value of every swept path and the same strategy: the seeds of
// one grid point.
struct SweepRow {
  std::vector<QString> values;  // aligned with SweepTable::sweepPaths
  QString strategy;             // its runs' label (RunData::displayStrategy)
  int runs = 0;
  int reached = 0;              // runs with a time to target
  std::optional<double> mean;   // of the time to target over the runs that reached it
  std::optional<double> stddev; // their sample standard deviation (needs two runs)
  QStringList engines;          // distinct, sorted
};

// The sweep a set of runs forms.
struct SweepTable {
  // Spec paths never treated as sweep axes: they differ between the runs of one grid
  // point (seed), name the experiment, list what was expanded (seeds, suite), or are
  // measured per run (sim.compute_ms). A path under one of these is skipped too.
  static const QStringList& ignoredPaths();

  // Every varying path, strategy.name and strategy knobs included, sorted by path.
  std::vector<SweepAxis> axes;
  // The swept paths: the axes other than strategy.name and the strategy knobs.
  QStringList sweepPaths;
  std::vector<SweepRun> runs;  // the input runs that have a readable spec, in input order
  // One per combination of swept values and strategy: by strategy, then by the swept
  // paths' value order.
  std::vector<SweepRow> rows;

  static SweepTable fromRuns(const std::vector<RunData>& runs);
  // The runs form a sweep: at least one swept path (strategies alone are not a sweep).
  bool isSweep() const { return !sweepPaths.isEmpty(); }
  const SweepAxis* axis(const QString& path) const;  // nullptr when the path does not vary
  QStringList varyingPaths() const;                  // the paths of `axes`
};

// A spec's JSON as the sweep table reads it: dotted paths to their values (numbers in
// their shortest form, arrays comma-joined); nullopt when it is not a JSON object.
std::optional<std::map<QString, QString>> flatSpec(const QString& specJson);

// A heatmap's axes.
struct SweepAxes {
  QString x;           // the columns; empty: no heatmap (nothing swept)
  QString y;           // the rows; empty: a single row (1×N)
  // One heatmap per combination of these paths' values: strategy.name (when it varies
  // and is not an axis), then the swept paths that are not axes.
  QStringList facets;
  bool empty() const { return x.isEmpty(); }
};

// The axes for `table`. `requested` is "X,Y" (or one path, for a 1×N map), each a path
// that varies between the runs; empty: chosen automatically — numeric swept paths first,
// then those with more values, the one with more values across. strategy.name becomes a
// facet, never an automatic axis. No swept path: an empty SweepAxes (no heatmap). An
// unknown or malformed request is an error naming it and listing the varying paths.
Result<SweepAxes> chooseAxes(const SweepTable& table, const QString& requested = {});

// One heatmap cell: the runs of one grid point of one facet.
struct SweepCell {
  int runs = 0;
  int reached = 0;
  std::optional<double> mean;    // seconds, over the runs that reached the target
  std::optional<double> stddev;
};

// One heatmap's content, ready to draw.
struct SweepHeatmap {
  QString xPath, yPath;               // yPath empty: one row
  std::vector<QString> xValues;       // the values in this facet's runs, in axis order
  std::vector<QString> yValues;       // {""} for one row
  std::vector<SweepCell> cells;       // row-major: cells[row * xValues.size() + column]
  QString facet;                      // "strategy dasp, cluster.count=4"; "" for the only map
  QString target;                     // the target accuracy, "0.8" or "0.7–0.8" when it varies
  QStringList engines;                // distinct, sorted
  // The colour scale in seconds, shared by every heatmap of one sweep so that colours
  // compare across strategies; lo == hi when at most one value.
  double lo = 0, hi = 0;

  int columns() const { return static_cast<int>(xValues.size()); }
  int rows() const { return static_cast<int>(yValues.size()); }
  const SweepCell& cell(int column, int row) const {
    return cells[static_cast<std::size_t>(row) * xValues.size() + static_cast<std::size_t>(column)];
  }
};

// The heatmaps of `table` along `axes`, one per facet combination present in the runs
// (none when `axes` is empty).
std::vector<SweepHeatmap> sweepHeatmaps(const SweepTable& table, const SweepAxes& axes);

// The size renderSweepHeatmap uses by default: cells of a readable size, at most 960 wide
// unless there are too many columns to fit.
QSize sweepHeatmapSize(const SweepHeatmap& map);
// Where cell (column, row) lies in an image of `size` (row 0 at the top); the fill leaves
// a 1-pixel gap on each side.
QRect sweepCellRect(const SweepHeatmap& map, const QSize& size, int column, int row);
// The colour a cell is filled with: the colormap at its mean, the hatch background
// (sweepNotReachedColor) when no run reached the target, white when it has no runs.
QColor sweepCellColor(const SweepHeatmap& map, int column, int row);
QColor sweepNotReachedColor();
// Viridis (perceptually uniform, readable in grey and by colour-blind readers) at
// t in [0, 1], clamped: dark blue-violet at 0, yellow at 1.
QColor viridis(double t);

// Draws `map`: cells coloured by mean time to target (lower = darker; colour bar at the
// right), labelled "12.3 s" (and "n/m" when only n of m runs reached the target), hatched
// grey "not reached" cells, the axis paths as axis titles, a title with the facet, the
// target accuracy and the engines. `size` empty: sweepHeatmapSize(map).
QImage renderSweepHeatmap(const SweepHeatmap& map, QSize size = {});

}  // namespace dasp::ui
