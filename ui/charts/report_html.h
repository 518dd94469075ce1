// SPDX-License-Identifier: MIT
#pragma once
// Internal to the report exports (ui/charts/report*.cpp): the HTML of a report, from which
// writeHtmlReport and writePdfReport make their files, and the PDF's page layout (what the
// page-count test measures). Needs a QApplication (it renders the charts). Threading: the
// GUI thread.

#include "ui/charts/report.h"
#include "ui/charts/sweep_heatmap.h"

#include <QImage>
#include <QString>
#include <QTextDocument>

#include <functional>
#include <memory>
#include <vector>

namespace dasp::ui {

// Turns a rendered chart into an <img> source: a data: URI (HTML) or a document resource (PDF).
using ImageSink = std::function<QString(const QString& name, const QImage& image)>;

// How the report is laid out: the HTML page (full-width charts, every run's lanes, bars,
// events), or the PDF's compact form (charts two to a row, the runs in a grid).
struct ReportPage {
  bool compact = false;
  int imageWidth = 960;  // pixels of the page's text width that a full-width chart takes
};

// `groupKey`: a key of groupKeys(runs) (ReportOptions::groupBy, checked).
QString buildReportHtml(const std::vector<RunData>& runs, const ReportPage& page, const SweepTable& sweep,
                        const SweepAxes& sweepAxes, const QString& groupKey, const ImageSink& image);

// The summary table's columns for these runs: the report's widest table.
int summaryColumnCount(const std::vector<RunFigures>& figs);

// A PDF report laid out on A4 (report.cpp): the document, paginated in 96-dpi pixels of
// the printable area, and its orientation. Landscape when the summary table has more than
// kPortraitColumns columns. pageCount() is the PDF's page count.
constexpr int kPortraitColumns = 9;
struct PdfLayout {
  std::unique_ptr<QTextDocument> doc;
  bool landscape = false;
  int pageCount() const;
};
Result<PdfLayout> layoutPdfReport(const std::vector<RunData>& runs, const ReportOptions& options = {});

}  // namespace dasp::ui
