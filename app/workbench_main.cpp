// SPDX-License-Identifier: MIT
// dasp-workbench: the GUI. Picks the run store (--db FILE, else $DASP_DB, else the default
// store file), opens the main window and loads experiments/default.json into the designer
// (the presets directory: $DASP_EXPERIMENTS_DIR, else the source tree's experiments/ next
// to build/bin, else ./experiments). Links no LibTorch (see docs: layers).

#include "core/run_store.h"
#include "ui/main_window.h"
#include "ui/spec_designer.h"

#include <QApplication>
#include <QCommandLineOption>
#include <QCommandLineParser>
#include <QDir>
#include <QFileInfo>
#include <QString>

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setApplicationName(QStringLiteral("DASP Workbench"));
  QApplication::setOrganizationName(QStringLiteral("dasp"));

  QCommandLineParser parser;
  parser.setApplicationDescription(QStringLiteral("DASP Workbench: runs, experiments and views."));
  parser.addHelpOption();
  const QCommandLineOption dbOption(
      QStringLiteral("db"), QStringLiteral("The run store FILE (default: $DASP_DB, else %1).")
                                .arg(QStringLiteral("~/.local/share/dasp/runs.sqlite")),
      QStringLiteral("FILE"));
  parser.addOption(dbOption);
  parser.process(app);

  // defaultStorePath() already prefers $DASP_DB when it is set and not empty.
  const QString storePath = parser.isSet(dbOption)
                                ? parser.value(dbOption)
                                : QString::fromStdString(dasp::defaultStorePath());

  dasp::ui::MainWindow window(storePath);
  // A missing or malformed default preset is reported in the designer, never fatal.
  const QString preset = QDir(dasp::ui::SpecDesigner::experimentsDir()).filePath(QStringLiteral("default.json"));
  if (QFileInfo::exists(preset)) {
    window.designer()->loadFile(preset);
  } else {
    window.designer()->showMessage(
        QObject::tr("No default experiment at %1: choose a preset or open a spec.").arg(preset), false);
  }
  window.show();
  return QApplication::exec();
}
