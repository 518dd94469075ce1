// SPDX-License-Identifier: MIT
#include "ui/charts/chart_export.h"
#include "ui/charts/report.h"

#include <QBuffer>
#include <QContextMenuEvent>
#include <QCoreApplication>
#include <QDir>
#include <QFileDialog>
#include <QMenu>
#include <QMessageBox>
#include <QPainter>
#include <QResizeEvent>
#include <QSvgGenerator>
#include <QWidget>

#include <algorithm>

namespace dasp::ui {

namespace {

Status writeError(const QString& path, const QString& why) {
  return Status::error(path.toStdString() + ": cannot write the image: " + why.toStdString());
}

QSize totalSize(const std::vector<ChartPart>& parts) {
  QSize total(0, 0);
  for (const ChartPart& p : parts) {
    total.setWidth(std::max(total.width(), p.size.width()));
    total.setHeight(total.height() + p.size.height());
  }
  return total;
}

// Paints every part below the previous one (the parts are prepared already).
void paintParts(QPainter& painter, const std::vector<ChartPart>& parts) {
  int y = 0;
  for (const ChartPart& p : parts) {
    p.widget->render(&painter, QPoint(0, y));
    y += p.size.height();
  }
}

// Context menus of charts that have none of their own.
class ExportMenuFilter : public QObject {
 public:
  ExportMenuFilter(QWidget* chart, QString baseName) : QObject(chart), m_chart(chart), m_baseName(std::move(baseName)) {}

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override {
    if (watched != m_chart || event->type() != QEvent::ContextMenu) return false;
    QMenu menu(m_chart);
    addExportActions(&menu, m_chart, m_baseName);
    menu.exec(static_cast<QContextMenuEvent*>(event)->globalPos());
    return true;
  }

 private:
  QWidget* m_chart;
  QString m_baseName;
};

}  // namespace

std::optional<ImageFormat> imageFormatFor(const QString& path) {
  const QString p = path.toLower();
  if (p.endsWith(QLatin1String(".png"))) return ImageFormat::Png;
  if (p.endsWith(QLatin1String(".svg"))) return ImageFormat::Svg;
  return std::nullopt;
}

void prepareWidget(QWidget& w, const QSize& size, const std::function<void()>& settle) {
  w.resize(size);
  // A hidden widget gets its resize event only when shown or rendered; a chart needs it
  // (and its layout) before render(), so deliver it now.
  QResizeEvent resize(size, QSize());
  QCoreApplication::sendEvent(&w, &resize);
  if (settle) settle();
}

QImage renderWidget(QWidget& w, const QSize& size, const std::function<void()>& settle) {
  prepareWidget(w, size, settle);
  QImage image(size, QImage::Format_ARGB32_Premultiplied);
  image.fill(Qt::white);
  w.render(&image);
  return image;
}

Status writeChartImage(const std::vector<ChartPart>& parts, const QString& path, const QString& title) {
  const std::optional<ImageFormat> format = imageFormatFor(path);
  if (!format) return writeError(path, QStringLiteral("unknown image format (use .png or .svg)"));
  for (const ChartPart& p : parts) {
    if (p.widget == nullptr || p.size.isEmpty()) return writeError(path, QStringLiteral("nothing to draw"));
    prepareWidget(*p.widget, p.size, p.settle);
  }
  const QSize size = totalSize(parts);
  if (size.isEmpty()) return writeError(path, QStringLiteral("nothing to draw"));
  QByteArray bytes;
  QBuffer buffer(&bytes);
  buffer.open(QIODevice::WriteOnly);
  if (*format == ImageFormat::Png) {
    QImage image(size, QImage::Format_ARGB32_Premultiplied);
    image.fill(Qt::white);
    {
      QPainter painter(&image);
      paintParts(painter, parts);
    }
    if (!image.save(&buffer, "PNG")) return writeError(path, QStringLiteral("the PNG encoder failed"));
  } else {
    QSvgGenerator svg;
    svg.setOutputDevice(&buffer);
    svg.setSize(size);
    svg.setResolution(96);  // width and height in mm that a browser shows at `size` pixels
    svg.setViewBox(QRect(QPoint(0, 0), size));
    svg.setTitle(title);
    svg.setDescription(QStringLiteral("DASP Workbench chart"));
    {
      QPainter painter(&svg);
      painter.fillRect(QRect(QPoint(0, 0), size), Qt::white);
      paintParts(painter, parts);
    }
    if (bytes.isEmpty()) return writeError(path, QStringLiteral("the SVG generator produced no output"));
  }
  return saveFileBytes(path, bytes);
}

void addExportActions(QMenu* menu, QWidget* chart, const QString& baseName) {
  auto exportAs = [chart, baseName](const QString& ext, const QString& filter) {
    const QString suggested = QDir::home().filePath(baseName + ext);
    const QString path = QFileDialog::getSaveFileName(chart, QObject::tr("Export chart"), suggested, filter);
    if (path.isEmpty()) return;
    const Status written = writeChartImage({ChartPart{chart, chart->size(), {}}}, path, baseName);
    if (!written) QMessageBox::warning(chart, QObject::tr("Export chart"), QString::fromStdString(written.message()));
  };
  QObject::connect(menu->addAction(QObject::tr("Export as PNG…")), &QAction::triggered, chart,
                   [exportAs] { exportAs(QStringLiteral(".png"), QObject::tr("PNG image (*.png)")); });
  QObject::connect(menu->addAction(QObject::tr("Export as SVG…")), &QAction::triggered, chart,
                   [exportAs] { exportAs(QStringLiteral(".svg"), QObject::tr("SVG image (*.svg)")); });
}

void installExportMenu(QWidget* chart, const QString& baseName) {
  chart->installEventFilter(new ExportMenuFilter(chart, baseName));
}

}  // namespace dasp::ui
