// SPDX-License-Identifier: MIT
#pragma once
// Report exports of one or more runs, all from RunData (no network, no store access):
// CSV at full resolution, a Chrome trace-event JSON of the node timelines (Perfetto,
// chrome://tracing), and an HTML or PDF report: the time to target per strategy (bars with
// ± std, ui/charts/time_to_target_bars.h) first, a summary table (the columns all runs
// share said once above it), per-strategy mean ± std (or per value of another spec
// field, ReportOptions::groupBy), the heterogeneity cost against the
// homogeneous-equivalent reference, policy decisions and faults per run, the fault drills'
// recovery table (when any run has faults), a heatmap of time to target over the swept spec
// fields (when the runs form a sweep, ui/charts/sweep_heatmap.h), the GUI's own charts
// rendered offscreen, the spec printed once with each run's differences from it, and each
// run's lanes, bars and events (the PDF: lanes and staleness of every run in a grid, on
// landscape A4 when the summary table is wide, so that six runs take at most six pages).
// Used by the workbench's export menu and by the `dasp-report` tool.
//
// Errors (an unwritable path, a full disk) come back as a Status naming the file; files
// are written through QSaveFile, so a failed export never leaves a truncated file behind.
//
// Threading: GUI thread (the HTML and PDF reports render widgets, which needs a
// QApplication; they fail with a Status without one). CSV and trace need only QtCore.

#include "core/common/result.h"
#include "ui/charts/run_data.h"

#include <QString>

#include <cstdint>
#include <optional>
#include <vector>

namespace dasp::ui {

enum class ReportFormat { Html, Pdf, Csv, ChromeTrace };
// From the file name: .html/.htm, .pdf, .csv, .json (e.g. run.trace.json); nullopt else.
std::optional<ReportFormat> reportFormatFor(const QString& path);

// Columns run_id,node,series,t_s,version,value: one row per sample (series wait_s,
// staleness, train_loss, compute_s per node), two per evaluation (accuracy and loss,
// node "evaluator") and one per present figure of each fault drill (series
// "fault.<idx>.<metric>", node = the faulted node, t_s = the fault time, version = the
// version before it), nothing thinned; numbers in their shortest exact form.
Status writeCsv(const std::vector<RunData>& runs, const QString& path);
// Complete events ("ph":"X", ts/dur in microseconds, pid = run id, tid = node lane,
// name = state, args.parallel = parallel state), decisions and events as instant events
// ("ph":"i"), accuracy as a counter; process and thread names as metadata.
Status writeChromeTrace(const std::vector<RunData>& runs, const QString& path);

// Choices for the HTML and PDF reports (CSV and traces have none).
struct ReportOptions {
  // The sweep heatmap's axes as chooseAxes takes them: "X,Y" spec paths, or one path for
  // a single row; empty: chosen automatically. A path that does not vary between the
  // runs fails the export with a Status naming it and listing the varying paths.
  QString sweepAxes;
  // What the time-to-target chart, the per-group table, the heterogeneity cost and the
  // convergence curves group by (run_groups.h): empty or "strategy", else a spec path
  // that differs between the runs; any other key fails the export with a Status naming
  // it and listing the choices.
  QString groupBy;
};

// A self-contained page: charts embedded as base64 PNG.
Status writeHtmlReport(const std::vector<RunData>& runs, const QString& path, const ReportOptions& options = {});
// The same content through QTextDocument and QPdfWriter, A4 (layoutPdfReport in
// report_html.h: the compact form, landscape when the summary table is wide).
Status writePdfReport(const std::vector<RunData>& runs, const QString& path, const ReportOptions& options = {});
// Writes `bytes` to `path` through QSaveFile: all of them or, on an error (a Status
// naming the file), nothing.
Status saveFileBytes(const QString& path, const QByteArray& bytes);
// Dispatches on reportFormatFor(path).
Status writeReport(const std::vector<RunData>& runs, const QString& path, const ReportOptions& options = {});

// One run's row of the summary table (also what the compare view shows). Figures come
// from the run's summary when the runner wrote one, else from its data.
struct RunFigures {
  std::int64_t runId = 0;
  QString name, strategy, status, lrConvention;
  QString engine;                      // "real" or "sim"
  std::int64_t seed = 0;
  int shards = 1;                      // the parameter server's shards (ps.shards)
  std::optional<double> target;        // the spec's target accuracy
  std::optional<double> timeToTarget;  // seconds
  std::optional<double> speedupVsBsp;  // mean BSP time to target / this run's
  // This run's time to target / the mean of its experiment's homogeneous-equivalent
  // reference runs (spec.reference_of), when they are among the runs and reached it.
  std::optional<double> heterogeneityCost;
  std::optional<double> finalAccuracy;
  std::optional<double> meanWait, meanStaleness, maxStaleness;
  std::optional<double> updates, dropped, lost;
  QString divergence;                  // status diverged: what was seen, when
};
// A run's time-to-target cell: the seconds, "not reached (diverged)" for a run that
// diverged before it, "–" for any other run that did not reach it.
QString timeToTargetText(const RunFigures& f, int decimals);
// The figures of every run, speedups against the mean of the BSP runs with the same
// experiment name (else of all BSP runs) that reached the target.
std::vector<RunFigures> runFigures(const std::vector<RunData>& runs);
// Sets speedupVsBsp and heterogeneityCost of `figs` (one per run of `runs`) from their
// times to target: what runFigures() does after it read the figures, and what a view
// that changes the target does again.
void fillRelativeFigures(std::vector<RunFigures>& figs, const std::vector<RunData>& runs);

// The runs that have fault drills, as the recovery table groups them (recovery mode,
// worker count from the spec, else the run's worker lanes).
std::vector<RunFaults> runFaults(const std::vector<RunData>& runs);

}  // namespace dasp::ui
