// SPDX-License-Identifier: MIT
// dasp-workbench: the GUI. Picks the run store (--db FILE, else $DASP_DB, else the default
// store file), opens the main window and loads a spec into the designer: --spec FILE, else
// experiments/default.json (the presets directory: $DASP_EXPERIMENTS_DIR, else the source
// tree's experiments/ next to build/bin, else ./experiments). --launch runs the loaded spec
// as soon as the window is up (demos, screenshots); --compare IDS opens stored runs in the
// compare view and --replay ID one run in the live view, as the Runs dock's buttons do;
// --predict ID opens "Predict Other Strategies on This Cluster…" for a run and starts it.
// Links no LibTorch (see docs: layers).

#include "core/store/run_store.h"
#include "ui/main_window.h"
#include "ui/designer/spec_designer.h"
#include "ui/runs/predict_dialog.h"

#include <QApplication>
#include <QCommandLineOption>
#include <QCommandLineParser>
#include <QDir>
#include <QFileInfo>
#include <QString>
#include <QTimer>

#include <iostream>
#include <optional>

namespace {

// "3,5,7" or "all" (every run in the store: an empty list) as run ids; nullopt (after
// saying which value is wrong) for anything else.
std::optional<QList<qint64>> runIdsOf(const QString& option, const QString& text) {
  QList<qint64> ids;
  if (text == QLatin1String("all")) return ids;
  for (const QString& part : text.split(QLatin1Char(','))) {
    bool ok = false;
    const qint64 id = part.trimmed().toLongLong(&ok);
    if (!ok || id <= 0) {
      std::cerr << "dasp-workbench: --" << option.toStdString() << ": '" << part.toStdString()
                << "' is not a run id (a positive number; a list: 3,5,7" << (option == "compare" ? "; or all" : "")
                << ")\n";
      return std::nullopt;
    }
    ids.append(id);
  }
  return ids;
}

}  // namespace

int main(int argc, char** argv) {
  // Without a display Qt's xcb platform aborts; say what is wrong instead (and let --help
  // work anywhere).
  const bool haveDisplay = qEnvironmentVariableIsSet("DISPLAY") || qEnvironmentVariableIsSet("WAYLAND_DISPLAY") ||
                           qEnvironmentVariableIsSet("QT_QPA_PLATFORM");
  if (!haveDisplay) {
    bool help = false;
    for (int i = 1; i < argc; ++i) {
      const QString a = QString::fromLocal8Bit(argv[i]);
      help = help || a == QLatin1String("--help") || a == QLatin1String("-h");
    }
    if (!help) {
      std::cerr << "dasp-workbench: no display (DISPLAY and WAYLAND_DISPLAY are not set). Run it in a desktop "
                   "session or under xvfb-run, or set QT_QPA_PLATFORM=offscreen; ./run.sh --headless runs the "
                   "default experiment without a window.\n";
      return 2;
    }
    qputenv("QT_QPA_PLATFORM", "offscreen");
  }
  QApplication app(argc, argv);
  QApplication::setApplicationName(QStringLiteral("DASP Workbench"));
  QApplication::setOrganizationName(QStringLiteral("dasp"));
  // Wayland matches the window to resources/io.github.dasp_workbench.DaspWorkbench.desktop.
  QGuiApplication::setDesktopFileName(QStringLiteral("io.github.dasp_workbench.DaspWorkbench"));

  QCommandLineParser parser;
  parser.setApplicationDescription(QStringLiteral("DASP Workbench: runs, experiments and views."));
  parser.addHelpOption();
  const QCommandLineOption dbOption(
      QStringLiteral("db"), QStringLiteral("The run store FILE (default: $DASP_DB, else %1).")
                                .arg(QStringLiteral("~/.local/share/dasp/runs.sqlite")),
      QStringLiteral("FILE"));
  parser.addOption(dbOption);
  const QCommandLineOption specOption(
      QStringLiteral("spec"),
      QStringLiteral("Load the experiment spec FILE into the designer (default: the default.json preset)."),
      QStringLiteral("FILE"));
  parser.addOption(specOption);
  const QCommandLineOption launchOption(
      QStringLiteral("launch"), QStringLiteral("Launch the loaded spec at start-up, as the Launch button does."));
  parser.addOption(launchOption);
  const QCommandLineOption compareOption(
      QStringLiteral("compare"),
      QStringLiteral("Open the stored runs IDS (3,5,7, or all) in the compare view at start-up."),
      QStringLiteral("IDS"));
  parser.addOption(compareOption);
  const QCommandLineOption replayOption(
      QStringLiteral("replay"), QStringLiteral("Replay the stored run ID in the live view at start-up."),
      QStringLiteral("ID"));
  parser.addOption(replayOption);
  const QCommandLineOption predictOption(
      QStringLiteral("predict"),
      QStringLiteral("Predict other strategies on the stored run ID's measured cluster at start-up."),
      QStringLiteral("ID"));
  parser.addOption(predictOption);
  parser.process(app);
  std::optional<QList<qint64>> compareIds, replayId, predictId;
  if (parser.isSet(compareOption)) {
    compareIds = runIdsOf(QStringLiteral("compare"), parser.value(compareOption));
    if (!compareIds) return 2;
  }
  if (parser.isSet(replayOption)) {
    replayId = runIdsOf(QStringLiteral("replay"), parser.value(replayOption));
    if (!replayId || replayId->size() != 1) {
      if (replayId) std::cerr << "dasp-workbench: --replay: give one run id\n";
      return 2;
    }
  }

  if (parser.isSet(predictOption)) {
    predictId = runIdsOf(QStringLiteral("predict"), parser.value(predictOption));
    if (!predictId || predictId->size() != 1) {
      if (predictId) std::cerr << "dasp-workbench: --predict: give one run id\n";
      return 2;
    }
  }

  // defaultStorePath() already prefers $DASP_DB when it is set and not empty.
  const QString storePath = parser.isSet(dbOption)
                                ? parser.value(dbOption)
                                : QString::fromStdString(dasp::defaultStorePath());

  dasp::ui::MainWindow window(storePath);
  bool specLoaded = false;
  if (parser.isSet(specOption)) {
    // A bad --spec is an error on stderr and in the designer; the window still opens.
    specLoaded = window.designer()->loadFile(parser.value(specOption));
    if (!specLoaded) std::cerr << "dasp-workbench: " << window.designer()->message().toStdString() << "\n";
  } else {
    // A missing or malformed default preset is reported in the designer, never fatal.
    const QString preset = QDir(dasp::ui::SpecDesigner::experimentsDir()).filePath(QStringLiteral("default.json"));
    if (QFileInfo::exists(preset)) {
      specLoaded = window.designer()->loadFile(preset);
    } else {
      window.designer()->showMessage(
          QObject::tr("No default experiment at %1: choose a preset or open a spec.").arg(preset), false);
    }
  }
  window.show();
  if (parser.isSet(launchOption)) {
    // After the window is shown, from the event loop: as a click on Launch would.
    QTimer::singleShot(0, &window, [&window, specLoaded] {
      if (!specLoaded || !window.launch()) {
        std::cerr << "dasp-workbench: --launch: not launched: " << window.designer()->message().toStdString()
                  << "\n";
      }
    });
  }
  // From the event loop, once the window is up; a run that cannot be read is named in
  // the window (status bar, compare view), as from the Runs dock.
  if (replayId) {
    QTimer::singleShot(0, &window, [&window, id = replayId->front()] { window.openInLiveView(id); });
  }
  if (predictId) {
    QTimer::singleShot(0, &window, [&window, id = predictId->front()] { window.predictFrom(id)->start(); });
  }
  if (compareIds) {
    QTimer::singleShot(0, &window, [&window, ids = *compareIds] {
      if (window.compareRuns(ids.isEmpty() ? window.storedRunIds() : ids) == 0) {
        std::cerr << "dasp-workbench: --compare: no run could be loaded\n";
      }
    });
  }
  return QApplication::exec();
}
