// SPDX-License-Identifier: MIT
#pragma once
// Internal to the HTML and PDF reports (ui/charts/report_html.cpp, report_sections.cpp):
// the pieces every section uses — escaping, figures, the one table style and the numbered
// images — and the sections of report_sections.cpp. Threading: the GUI thread.

#include "ui/charts/report.h"
#include "ui/charts/report_html.h"

#include <QImage>
#include <QString>

#include <cmath>
#include <optional>
#include <vector>

namespace dasp::ui {

inline QString esc(const QString& s) { return s.toHtmlEscaped(); }

inline QString fig(const std::optional<double>& v, int decimals) {
  return v && std::isfinite(*v) ? QString::number(*v, 'f', decimals) : QStringLiteral("–");
}

// "mean ± std" of `v`; the mean alone for one value, "–" when empty.
QString pm(const std::vector<double>& v, int decimals);

// Opens an HTML table of class `cls` (the report's one table style).
inline QString tableStart(const QString& cls) {
  return QStringLiteral("<table class=\"%1\" border=\"1\" cellspacing=\"0\" cellpadding=\"3\">\n").arg(cls);
}

// The report's images, numbered in order, each an <img> at a width.
class ReportImages {
 public:
  ReportImages(const ImageSink& sink, int width) : m_sink(sink), m_width(width) {}
  int width() const { return m_width; }
  QString operator()(const QImage& im, const QString& alt, int width) {
    const QString src = m_sink(QStringLiteral("chart%1.png").arg(m_next++), im);
    return QStringLiteral("<img src=\"%1\" alt=\"%2\" width=\"%3\">").arg(src, esc(alt)).arg(width);
  }
  // A paragraph with the image at the report's width.
  QString operator()(const QImage& im, const QString& alt) { return QStringLiteral("<p>%1</p>\n").arg((*this)(im, alt, m_width)); }

 private:
  const ImageSink& m_sink;
  int m_width;
  int m_next = 0;
};

// The sections of report_sections.cpp, in the order the report has them.
// Time to target per group (the strategy, or `groupKey`'s values): the bar chart with ±
// std and the reference line.
QString targetSection(const std::vector<RunData>& runs, const std::vector<RunFigures>& figs, const QString& groupKey,
                      bool compact, ReportImages& img);
// What all runs share (name, engine, target, lr convention) in one line: the summary
// table then shows only the columns that differ between the runs.
struct SharedColumns {
  bool name = false, engine = false, shards = false, target = false, lrConvention = false;  // true: differs, a column
  QString line;  // "All runs: …" (empty when nothing is shared)
};
SharedColumns sharedColumns(const std::vector<RunFigures>& figs);
// Time to target against the homogeneous-equivalent reference, per group.
QString heterogeneitySection(const std::vector<RunData>& runs, const std::vector<RunFigures>& figs,
                             const QString& groupKey);
// Per run: policy decisions by kind, faults, other events.
QString activitySection(const std::vector<RunData>& runs);
// The first run's spec once (flattened to path = value), then what each run differs in.
QString specSection(const std::vector<RunData>& runs);
// Per run, two to a row: its node lanes and its staleness histogram (the PDF's compact
// form of the per-run sections).
QString runGrid(const std::vector<RunData>& runs, ReportImages& img);

}  // namespace dasp::ui
