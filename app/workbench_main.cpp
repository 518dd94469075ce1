// SPDX-License-Identifier: MIT
// dasp-workbench: the GUI. Picks the run store (--db FILE, else $DASP_DB, else the default
// store file) and opens the main window. Links no LibTorch (see docs: layers).

#include "core/run_store.h"
#include "ui/main_window.h"

#include <QApplication>
#include <QCommandLineOption>
#include <QCommandLineParser>
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
  window.show();
  return QApplication::exec();
}
