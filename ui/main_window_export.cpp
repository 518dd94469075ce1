// SPDX-License-Identifier: MIT
// MainWindow's report export: File → Export Report's formats, the file chooser and the
// writers (ui/main_window.h; GUI thread only).
#include "ui/main_window.h"

#include "core/store/run_store.h"
#include "ui/runs/compare_panel.h"
#include "ui/runs/runs_panel.h"

#include <QAction>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QGuiApplication>
#include <QKeySequence>
#include <QMenu>
#include <QStatusBar>

namespace dasp::ui {

namespace {

struct ExportFormat {
  ReportFormat format;
  const char* menuText;
  const char* filter;
  const char* suffix;
  const char* defaultName;
};
// In ReportFormat order.
constexpr ExportFormat kExportFormats[] = {
    {ReportFormat::Html, QT_TRANSLATE_NOOP("MainWindow", "&HTML Report…"),
     QT_TRANSLATE_NOOP("MainWindow", "HTML report (*.html *.htm)"), "html", "report.html"},
    {ReportFormat::Pdf, QT_TRANSLATE_NOOP("MainWindow", "&PDF Report…"), QT_TRANSLATE_NOOP("MainWindow", "PDF report (*.pdf)"),
     "pdf", "report.pdf"},
    {ReportFormat::Csv, QT_TRANSLATE_NOOP("MainWindow", "&CSV of Every Series…"),
     QT_TRANSLATE_NOOP("MainWindow", "CSV (*.csv)"), "csv", "series.csv"},
    {ReportFormat::ChromeTrace, QT_TRANSLATE_NOOP("MainWindow", "Chrome &Trace of the Node Timeline…"),
     QT_TRANSLATE_NOOP("MainWindow", "Chrome trace (*.trace.json *.json)"), "json", "timeline.trace.json"},
};
static_assert(static_cast<int>(ReportFormat::ChromeTrace) == 3, "kExportFormats is indexed by ReportFormat");

QString translated(const char* text) { return QCoreApplication::translate("MainWindow", text); }

}  // namespace

void MainWindow::createExportMenu(QMenu* file) {
  QMenu* exportMenu = file->addMenu(tr("&Export Report"));
  exportMenu->setToolTipsVisible(true);
  for (const ExportFormat& f : kExportFormats) {
    QAction* a = exportMenu->addAction(translated(f.menuText));
    a->setToolTip(tr("The compared runs, else the runs selected in the Runs view"));
    const ReportFormat format = f.format;
    connect(a, &QAction::triggered, this, [this, format] { chooseExportFile(format); });
    m_exportActions[static_cast<int>(format)] = a;
  }
}

std::vector<RunData> MainWindow::loadSelectedRuns(QString* error) const {
  std::vector<RunData> runs;
  const std::vector<std::int64_t> ids = m_runs->selectedRunIds();
  if (ids.empty()) {
    *error = tr("Nothing to export: compare runs (Runs → Compare Selected) or select them in the Runs view.");
    return runs;
  }
  RunStore* store = m_runs->store();
  if (store == nullptr) {
    *error = tr("No run store is open: %1").arg(m_runs->lastError());
    return runs;
  }
  for (std::int64_t id : ids) {
    auto loaded = loadRunData(*store, id);
    if (!loaded) {
      *error = tr("Cannot read run %1: %2").arg(id).arg(QString::fromStdString(loaded.message()));
      return {};
    }
    runs.push_back(std::move(loaded).value());
  }
  return runs;
}

Status MainWindow::exportReport(ReportFormat format, const QString& path) {
  // The compared runs are already in memory; a selection is read from the store.
  std::vector<RunData> selected;
  const std::vector<RunData>* runs = &m_compare->runs();
  ReportOptions options;
  // The compared runs: grouped as the compare view groups them.
  if (!runs->empty()) options.groupBy = m_compare->groupKey();
  if (runs->empty()) {
    QString error;
    selected = loadSelectedRuns(&error);
    if (selected.empty()) {
      showError(tr("Export Report"), error);
      return Status::error(error.toStdString());
    }
    runs = &selected;
  }
  QGuiApplication::setOverrideCursor(Qt::WaitCursor);  // a PDF renders every chart
  Status status = Status::error("unknown report format");
  switch (format) {
    case ReportFormat::Html: status = writeHtmlReport(*runs, path, options); break;
    case ReportFormat::Pdf: status = writePdfReport(*runs, path, options); break;
    case ReportFormat::Csv: status = writeCsv(*runs, path); break;
    case ReportFormat::ChromeTrace: status = writeChromeTrace(*runs, path); break;
  }
  QGuiApplication::restoreOverrideCursor();
  if (!status) {
    showError(tr("Export Report"), tr("Export failed: %1").arg(QString::fromStdString(status.message())));
  } else {
    const QString line = tr("Exported %n run(s) to %1", nullptr, static_cast<int>(runs->size())).arg(path);
    statusBar()->showMessage(line, 8000);
    appendLog(line);
  }
  return status;
}

QFileDialog* MainWindow::chooseExportFile(ReportFormat format) {
  if (m_compare->runs().empty() && m_runs->selectedRunIds().empty()) {
    showError(tr("Export Report"),
              tr("Nothing to export: compare runs (Runs → Compare Selected) or select them in the Runs view."));
    return nullptr;
  }
  const ExportFormat& f = kExportFormats[static_cast<int>(format)];
  const QString dir = QFileInfo(storePath()).absolutePath();
  auto* dialog = new QFileDialog(this, tr("Export Report"), QDir(dir).filePath(QLatin1String(f.defaultName)),
                                 translated(f.filter));
  dialog->setObjectName(QStringLiteral("exportDialog"));
  dialog->setAttribute(Qt::WA_DeleteOnClose);
  dialog->setAcceptMode(QFileDialog::AcceptSave);
  dialog->setFileMode(QFileDialog::AnyFile);
  dialog->setDefaultSuffix(QLatin1String(f.suffix));
  dialog->setOption(QFileDialog::DontUseNativeDialog, !m_nativeDialogs);
  connect(dialog, &QFileDialog::fileSelected, this, [this, format](const QString& path) {
    if (!path.isEmpty()) exportReport(format, path);
  });
  dialog->open();  // non-modal: no nested event loop, the live view keeps drawing
  return dialog;
}

}  // namespace dasp::ui
