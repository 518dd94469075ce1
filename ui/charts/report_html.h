// SPDX-License-Identifier: MIT
#pragma once
// Internal to the report exports (ui/charts/report*.cpp): the HTML of a report, from which
// writeHtmlReport and writePdfReport make their files. Needs a QApplication (it renders
// the charts). Threading: the GUI thread.

#include "ui/charts/report.h"
#include "ui/charts/sweep_heatmap.h"

#include <QImage>
#include <QString>

#include <functional>
#include <vector>

namespace dasp::ui {

// Turns a rendered chart into an <img> source: a data: URI (HTML) or a document resource (PDF).
using ImageSink = std::function<QString(const QString& name, const QImage& image)>;

QString buildReportHtml(const std::vector<RunData>& runs, bool forPdf, const SweepTable& sweep,
                        const SweepAxes& sweepAxes, const ImageSink& image);

}  // namespace dasp::ui
