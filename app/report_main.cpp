// SPDX-License-Identifier: MIT
// dasp-report: exports runs of a store as an HTML or PDF report, CSV or a Chrome trace,
// drawn with the workbench's own charts, from the command line and without a display.
//   dasp-report --db FILE --runs ID,ID|all --out report.{html,pdf,csv,trace.json}
//               [--sweep-axes X,Y] [--group-by KEY]
//   dasp-report --db FILE --runs ID,ID|all --chart NAME [--group-by KEY] --out chart.{png,svg}
// Exit status: 0 written, 2 bad input (usage, unknown run ids, unreadable store, unknown
// format or chart, a sweep axis that does not vary between the runs), 1 failure while
// reading the runs or drawing or writing the file.

#include "core/store/run_store.h"
#include "ui/charts/chart_export.h"
#include "ui/charts/chart_images.h"
#include "ui/charts/report.h"
#include "ui/charts/run_data.h"
#include "ui/charts/run_groups.h"
#include "ui/charts/sweep_heatmap.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QFileInfo>
#include <QStringList>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace {

int fail(int code, const QString& message) {
  std::fprintf(stderr, "dasp-report: %s\n", qPrintable(message));
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  // Headless unless told otherwise: the charts render offscreen, no window ever opens.
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM") && qEnvironmentVariableIsEmpty("DISPLAY") &&
      qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY")) {
    qputenv("QT_QPA_PLATFORM", "offscreen");
  }
  QApplication app(argc, argv);
  QApplication::setApplicationName(QStringLiteral("dasp-report"));

  QCommandLineParser parser;
  parser.setApplicationDescription(QStringLiteral(
      "Exports runs of a DASP run store: an HTML or PDF report (summary, charts, specs, events), "
      "CSV of every sample, or a Chrome/Perfetto trace of the node timelines. The format follows "
      "the extension of --out: .html, .pdf, .csv, .trace.json. With --chart, one chart as a PNG or SVG image."));
  parser.addHelpOption();
  const QCommandLineOption dbOpt(QStringLiteral("db"), QStringLiteral("The run store (default: $DASP_DB or the user's store)."),
                                 QStringLiteral("FILE"));
  const QCommandLineOption runsOpt(QStringLiteral("runs"), QStringLiteral("Run ids, comma-separated, or 'all'."),
                                   QStringLiteral("IDS"));
  const QCommandLineOption outOpt(QStringLiteral("out"), QStringLiteral("The file to write."), QStringLiteral("FILE"));
  const QCommandLineOption sweepOpt(
      QStringLiteral("sweep-axes"),
      QStringLiteral("The sweep heatmap's axes (HTML and PDF, and --chart sweep): two spec paths that vary between the runs, e.g. "
                     "strategy.dasp.delta,cluster.count (one path: a single row). Default: chosen from the swept "
                     "fields, numeric ones first, one map per strategy."),
      QStringLiteral("X,Y"));
  const QCommandLineOption chartOpt(
      QStringLiteral("chart"),
      QStringLiteral("Write one chart as an image instead of a report (--out FILE.png or FILE.svg): %1.")
          .arg(dasp::ui::chartNames().join(QStringLiteral(", "))),
      QStringLiteral("NAME"));
  parser.addOption(chartOpt);
  const QCommandLineOption groupOpt(
      QStringLiteral("group-by"),
      QStringLiteral("Group the runs by KEY, 'strategy' (the default) or a spec field that differs between them, "
                     "e.g. cluster.count: the time-to-target bars, the convergence curves and the per-group tables "
                     "of an HTML or PDF report, or a convergence, loss or time-to-target chart."),
      QStringLiteral("KEY"));
  parser.addOption(groupOpt);
  parser.addOption(dbOpt);
  parser.addOption(runsOpt);
  parser.addOption(outOpt);
  parser.addOption(sweepOpt);
  if (!parser.parse(QApplication::arguments())) return fail(2, parser.errorText());
  if (parser.isSet(QStringLiteral("help"))) {
    std::fputs(qPrintable(parser.helpText()), stdout);
    return 0;
  }
  if (!parser.positionalArguments().isEmpty()) {
    return fail(2, QStringLiteral("unexpected argument '%1' (see --help)").arg(parser.positionalArguments().first()));
  }
  if (!parser.isSet(runsOpt)) return fail(2, QStringLiteral("--runs is required (ids like 3,4 or 'all')"));
  if (!parser.isSet(outOpt)) return fail(2, QStringLiteral("--out is required (report.html, .pdf, .csv or .trace.json)"));
  const QString out = parser.value(outOpt);
  const QString chart = parser.value(chartOpt);
  const auto format = dasp::ui::reportFormatFor(out);
  if (parser.isSet(chartOpt)) {
    // Checked before the store is read: a typo is bad input, not a failed write.
    if (!dasp::ui::chartNames().contains(chart)) {
      return fail(2, QStringLiteral("--chart %1: unknown chart (use one of %2)")
                         .arg(chart, dasp::ui::chartNames().join(QStringLiteral(", "))));
    }
    if (!dasp::ui::imageFormatFor(out)) {
      return fail(2, QStringLiteral("%1: unknown image format for --chart (use .png or .svg)").arg(out));
    }
    if (parser.isSet(sweepOpt) && chart != QLatin1String("sweep")) {
      return fail(2, QStringLiteral("--sweep-axes is for reports and --chart sweep, not --chart %1").arg(chart));
    }
  } else if (!format) {
    return fail(2, QStringLiteral("%1: unknown report format (use .html, .pdf, .csv or .trace.json)").arg(out));
  } else if (parser.isSet(groupOpt) && *format != dasp::ui::ReportFormat::Html && *format != dasp::ui::ReportFormat::Pdf) {
    return fail(2, QStringLiteral("--group-by is for --chart and HTML or PDF reports, not %1").arg(out));
  }
  const QString db = parser.isSet(dbOpt) ? parser.value(dbOpt) : QString::fromStdString(dasp::defaultStorePath());
  // RunStore::open creates a missing file; a report of a store that is not there is a typo.
  if (!QFileInfo(db).isFile()) return fail(2, QStringLiteral("%1: no such run store").arg(db));
  auto store = dasp::RunStore::open(db.toStdString());
  if (!store) return fail(2, QString::fromStdString(store.message()));

  std::vector<std::int64_t> ids;
  const QString runsArg = parser.value(runsOpt).trimmed();
  if (runsArg.compare(QLatin1String("all"), Qt::CaseInsensitive) == 0) {
    auto rows = store.value()->listRuns();
    if (!rows) return fail(1, QString::fromStdString(rows.message()));
    for (const auto& r : rows.value()) ids.push_back(r.id);
    std::sort(ids.begin(), ids.end());
    if (ids.empty()) return fail(2, QStringLiteral("%1: the store has no runs").arg(db));
  } else {
    for (const QString& part : runsArg.split(QLatin1Char(','), Qt::SkipEmptyParts)) {
      bool ok = false;
      const qlonglong id = part.trimmed().toLongLong(&ok);
      if (!ok) return fail(2, QStringLiteral("--runs: '%1' is not a run id").arg(part.trimmed()));
      if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
    }
    if (ids.empty()) return fail(2, QStringLiteral("--runs: no run ids given"));
    QStringList unknown;
    for (std::int64_t id : ids) {
      if (!store.value()->run(id)) unknown << QString::number(id);
    }
    if (!unknown.isEmpty()) {
      return fail(2, QStringLiteral("%1: no run with id %2").arg(db, unknown.join(QStringLiteral(", "))));
    }
  }

  std::vector<dasp::ui::RunData> runs;
  for (std::int64_t id : ids) {
    auto data = dasp::ui::loadRunData(*store.value(), id);
    if (!data) return fail(1, QStringLiteral("run %1: %2").arg(id).arg(QString::fromStdString(data.message())));
    runs.push_back(std::move(data).value());
  }
  // Checked before anything is drawn: a key that does not vary is bad input, not a failed write.
  const auto groupKey = dasp::ui::checkedGroupKey(runs, parser.value(groupOpt));
  if (!groupKey) return fail(2, QStringLiteral("--group-by %1").arg(QString::fromStdString(groupKey.message())));
  if (parser.isSet(chartOpt)) {
    const dasp::Status drawn = dasp::ui::writeNamedChart(runs, chart, out, groupKey.value(), parser.value(sweepOpt));
    if (!drawn) return fail(1, QString::fromStdString(drawn.message()));
    std::printf("dasp-report: wrote %s (%s, %zu run%s)\n", qPrintable(out), qPrintable(chart), runs.size(),
                runs.size() == 1 ? "" : "s");
    return 0;
  }
  dasp::ui::ReportOptions options;
  options.groupBy = groupKey.value();
  if (parser.isSet(sweepOpt)) {
    // Checked here, before anything is drawn, so that a typo is bad input (exit 2) and
    // not a failed write.
    options.sweepAxes = parser.value(sweepOpt);
    const auto axes = dasp::ui::chooseAxes(dasp::ui::SweepTable::fromRuns(runs), options.sweepAxes);
    if (!axes) return fail(2, QStringLiteral("--sweep-axes: %1").arg(QString::fromStdString(axes.message())));
  }
  const dasp::Status written = dasp::ui::writeReport(runs, out, options);
  if (!written) return fail(1, QString::fromStdString(written.message()));
  std::printf("dasp-report: wrote %s (%zu run%s)\n", qPrintable(out), runs.size(), runs.size() == 1 ? "" : "s");
  return 0;
}
