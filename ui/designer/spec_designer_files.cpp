// SPDX-License-Identifier: MIT
// The designer's files: where the presets are (the source tree, the installed share/, or
// compiled in), loading a spec or preset, saving one.
#include "ui/designer/spec_designer.h"

#include "resources/resources.h"

#include <QComboBox>
#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QSaveFile>
#include <QSignalBlocker>

namespace dasp::ui {
namespace {

// A spec file, or an embedded preset (":/presets/…", which only Qt can open).
Result<ExperimentSpec> readSpec(const QString& path) {
  if (!path.startsWith(QLatin1String(":/"))) return loadSpecFile(path.toStdString());
  QFile file(path);
  if (!file.open(QIODevice::ReadOnly)) return Status::error(path.toStdString() + ": " + file.errorString().toStdString());
  return parseSpecJson(file.readAll().toStdString(), path.toStdString());
}

}  // namespace

QString SpecDesigner::experimentsDir() {
  const QString fromEnv = qEnvironmentVariable("DASP_EXPERIMENTS_DIR");
  if (!fromEnv.isEmpty()) return fromEnv;
  const QString bin = QCoreApplication::applicationDirPath();
  // The source tree beside build/bin, the installed share/ beside PREFIX/bin, ./experiments,
  // else the presets compiled into the workbench (read-only).
  for (const QString& dir : {QDir::cleanPath(bin + QStringLiteral("/../../experiments")),
                             QDir::cleanPath(bin + QStringLiteral("/../share/dasp-workbench/experiments")),
                             QDir::current().absoluteFilePath(QStringLiteral("experiments"))}) {
    if (QFileInfo(dir).isDir()) return dir;
  }
  resources::initResources();
  return resources::embeddedPresetsDir();
}

void SpecDesigner::reloadPresets() {
  const QSignalBlocker block(m_presets);
  m_presets->clear();
  const QDir dir(experimentsDir());
  const QFileInfoList files = dir.entryInfoList({QStringLiteral("*.json")}, QDir::Files, QDir::Name);
  m_presets->addItem(files.isEmpty() ? tr("(no presets in %1)").arg(dir.path()) : tr("Choose a preset…"), QString());
  for (const QFileInfo& file : files) m_presets->addItem(file.completeBaseName(), file.absoluteFilePath());
}

bool SpecDesigner::loadFile(const QString& path) {
  auto loaded = readSpec(path);
  if (!loaded) {
    QString text = QString::fromStdString(loaded.message());
    if (!text.contains(path) && !text.contains(QFileInfo(path).fileName())) text = path + QStringLiteral(": ") + text;
    showMessage(tr("Cannot load the preset: %1").arg(text), true);
    return false;
  }
  setSpec(loaded.value());
  m_currentFile = path;
  if (validate()) showMessage(tr("Loaded %1.").arg(QDir::toNativeSeparators(path)), false);
  Q_EMIT specLoaded(path);
  return true;
}

bool SpecDesigner::saveFile(const QString& path) {
  auto built = buildSpec();
  Status st = built ? validateSpec(built.value()) : built.status();
  if (!st) {
    showMessage(tr("Not saved: %1").arg(QString::fromStdString(st.message())), true);
    return false;
  }
  QSaveFile file(path);  // written whole or not at all
  const QByteArray json = QByteArray::fromStdString(specToJson(built.value())) + '\n';
  if (!file.open(QIODevice::WriteOnly) || file.write(json) != json.size() || !file.commit()) {
    showMessage(tr("Cannot save %1: %2").arg(path, file.errorString()), true);
    return false;
  }
  m_currentFile = path;
  showMessage(tr("Saved %1.").arg(QDir::toNativeSeparators(path)), false);
  if (QFileInfo(path).absoluteDir() == QDir(experimentsDir())) reloadPresets();
  return true;
}

void SpecDesigner::openFile() {
  const QString start = m_currentFile.isEmpty() ? experimentsDir() : QFileInfo(m_currentFile).absolutePath();
  const QString path = QFileDialog::getOpenFileName(this, tr("Open Experiment"), start, tr("Experiments (*.json);;All files (*)"));
  if (!path.isEmpty()) loadFile(path);
}

void SpecDesigner::saveFileAs() {
  const QString start = m_currentFile.isEmpty() ? experimentsDir() : m_currentFile;
  QString path = QFileDialog::getSaveFileName(this, tr("Save Experiment As"), start, tr("Experiments (*.json)"));
  if (path.isEmpty()) return;
  if (QFileInfo(path).suffix().isEmpty()) path += QStringLiteral(".json");
  saveFile(path);
}

}  // namespace dasp::ui
