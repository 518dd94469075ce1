// SPDX-License-Identifier: MIT
#pragma once
// Chart images: any chart widget of ui/charts (or a column of them) rendered offscreen into
// a PNG or an SVG file, and the "Export as PNG… / SVG…" entries of a chart's context menu.
// The workbench's context menus, the reports and `dasp-report --chart` draw through here,
// so an exported image is exactly what the widget paints.
//
// Errors (an unknown extension, an unwritable path) come back as a Status naming the file;
// files are written through QSaveFile, so a failed export leaves nothing behind.
//
// Threading: GUI thread only (it renders widgets).

#include "core/common/result.h"

#include <QImage>
#include <QSize>
#include <QString>

#include <functional>
#include <optional>
#include <vector>

class QMenu;
class QWidget;

namespace dasp::ui {

enum class ImageFormat { Png, Svg };
// From the file name: .png or .svg (any case); nullopt else.
std::optional<ImageFormat> imageFormatFor(const QString& path);

// Resizes `w` (never shown) to `size` and delivers the resize event a hidden widget would
// only get when shown, then runs `settle` (e.g. a chart's posted layout) before drawing.
void prepareWidget(QWidget& w, const QSize& size, const std::function<void()>& settle = {});
// `w` prepared at `size` and painted on white.
QImage renderWidget(QWidget& w, const QSize& size, const std::function<void()>& settle = {});

// One widget of an exported image, stacked top to bottom in the order given.
struct ChartPart {
  QWidget* widget = nullptr;
  QSize size;
  std::function<void()> settle;
};
// Writes the parts as one image: PNG (raster, 1:1 pixels) or SVG (vector, through
// QSvgGenerator), the format by the extension of `path`; `title` is the SVG's title.
Status writeChartImage(const std::vector<ChartPart>& parts, const QString& path, const QString& title = {});

// Adds "Export as PNG…" and "Export as SVG…" to `menu`: a file dialog, then the widget at
// its current size; a failure is shown in a message box, never thrown.
void addExportActions(QMenu* menu, QWidget* chart, const QString& baseName);
// Gives `chart` a context menu with only the export actions (for charts without one of
// their own).
void installExportMenu(QWidget* chart, const QString& baseName);

}  // namespace dasp::ui
