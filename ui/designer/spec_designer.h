// SPDX-License-Identifier: MIT
#pragma once
// SpecDesigner: the experiment designer — a form over ExperimentSpec (model, dataset,
// optimizer, the cluster's nodes and speed profiles, the strategy and its knobs, the
// parameter server's recovery mode and its knobs, the fault drills, stop condition,
// evaluation, seeds; a suite shown read-only), with presets from experiments/, Open…,
// Save As… (specToJson: proto field names) and validation that shows the CLI's own
// messages (validateSpec) in a message line under the form.
//
// The engine is real (processes, wall clock) or sim (the virtual-cluster engine); the
// simulator's knobs (spec.sim: gradients, compute time, server costs, restart and
// failover times) and the cluster's link (latency, bandwidth) are shown for sim only.
// The launcher is LOCAL, SSH or SLURM; for SLURM the job's settings (SlurmFields: partition,
// account, time limit, nodes, further flags) and the allocation wait are shown. Hosts and
// placement are kept from the spec (a SLURM spec without hosts runs on its job's nodes).
// As with the strategies, only the knobs of the chosen recovery mode are shown (the
// stateless learning-rate scale only for the SCALED_LR backlog rule, its clip only for
// CLIPPED_SUM); the reconnect
// timeout applies to every mode. The fault drills (FaultTable) are written to
// spec.faults as a whole; their node column offers the server (the chain's replicas in
// chain mode), the evaluator and the cluster's workers.
//
// Every text field is bound to a spec path and written with applyOverride, the parser of
// the CLI's `--set`: an empty field means "unset, the documented default" (shown as the
// placeholder), so a preset read back gives the same message. Fields the form does not
// show (lr decay, synthetic data parameters, ...) are kept from the spec last set.
//
// Bad input (a field that is not a number, an unreadable or malformed preset) is shown in
// the message line — never a crash, never a blocking dialog (only Open…/Save As… open a
// file chooser, and only when clicked).
//
// Threading: GUI thread only.

#include "core/common/result.h"
#include "core/spec/spec.h"

#include <QString>
#include <QWidget>

#include <string>
#include <vector>

class QComboBox;
class QVBoxLayout;
class QFormLayout;
class QGroupBox;
class QLabel;
class QLineEdit;
class QListWidget;

namespace dasp::ui {

class ClusterTable;
class FaultTable;
class SlurmFields;

class SpecDesigner : public QWidget {
  Q_OBJECT

 public:
  explicit SpecDesigner(QWidget* parent = nullptr);

  // The presets directory: $DASP_EXPERIMENTS_DIR, else <app dir>/../../experiments (the
  // source tree next to build/bin), else ./experiments.
  static QString experimentsDir();

  void setSpec(const ExperimentSpec& spec);
  // The form as a spec; fields that do not parse are left unset (validate() names them).
  ExperimentSpec spec() const;
  // The form as a spec, or the first field that does not parse.
  Result<ExperimentSpec> buildSpec() const;
  // buildSpec() + validateSpec(): the CLI's message, shown in red under the form; an ok
  // spec clears an earlier error.
  Status validate();

  // Loads a spec file into the form (errors go to the message line). Returns success.
  bool loadFile(const QString& path);
  // Validates and writes the form as JSON (proto field names). Returns success.
  bool saveFile(const QString& path);
  // The file last loaded or saved ("" for a spec set otherwise).
  QString currentFile() const { return m_currentFile; }

  // Re-lists experimentsDir()/*.json in the presets combo.
  void reloadPresets();

  // The message line: text and whether it is an error.
  QString message() const;
  bool hasError() const { return m_messageIsError; }
  void showMessage(const QString& text, bool isError);

  ClusterTable* clusterTable() const { return m_cluster; }
  FaultTable* faultTable() const { return m_faults; }
  QComboBox* presetCombo() const { return m_presets; }

 public Q_SLOTS:
  void openFile();    // Open… (file chooser)
  void saveFileAs();  // Save As… (file chooser)
  void clearSuite();  // so Launch runs just the form's strategy

 Q_SIGNALS:
  // A spec was put into the form (preset, file, a run's spec); `source` says from where.
  void specLoaded(const QString& source);

 private:
  struct Binding {
    QWidget* widget;   // QLineEdit or QComboBox (item data = the value, "" = default)
    std::string path;  // spec path for applyOverride, e.g. "optimizer.lr"
  };
  // A field's tooltip is its path and the proto comment that documents it (field_docs.h).
  QLineEdit* addText(QFormLayout* form, const QString& label, const std::string& path, const QString& placeholder);
  QComboBox* addChoice(QFormLayout* form, const QString& label, const std::string& path,
                       const QString& defaultText, const QStringList& values);
  QComboBox* addBool(QFormLayout* form, const QString& label, const std::string& path, bool defaultValue);
  QStringList enumValues(const std::string& path) const;
  QWidget* buildForm();
  void buildEngineSection(QWidget* page, QVBoxLayout* layout);
  void buildLaunchSection(QWidget* page, QVBoxLayout* layout);
  void buildModelSections(QWidget* page, QVBoxLayout* layout);
  void buildStrategySection(QWidget* page, QVBoxLayout* layout);
  void buildRecoverySection(QWidget* page, QVBoxLayout* layout);
  void buildRunSections(QWidget* page, QVBoxLayout* layout);
  void buildSuiteBox(QWidget* page, QVBoxLayout* layout);
  void updateEngineKnobs();
  void updateLaunchFields();
  void updateStrategyKnobs();
  void updateRecoveryKnobs();
  // Drops the empty sim / cluster.link / cluster / launch messages the form's bindings leave (those
  // the spec last set did not have).
  void dropEmptyParts(ExperimentSpec& spec) const;
  void updateFaultNodes();
  void updateSuite();
  void onEdited();

  std::vector<Binding> m_bindings;
  ExperimentSpec m_base;  // the spec last set: source of the fields the form does not show
  QString m_currentFile;
  bool m_messageIsError = false;
  bool m_filling = false;  // setSpec() is writing the form: not an edit

  QComboBox* m_presets = nullptr;
  QComboBox* m_engine = nullptr;
  QWidget* m_simKnobs = nullptr;  // shown for engine sim only
  QComboBox* m_launcher = nullptr;
  SlurmFields* m_slurm = nullptr;  // shown for the SLURM launcher only
  QComboBox* m_model = nullptr;
  QLineEdit* m_hidden = nullptr;
  QComboBox* m_strategy = nullptr;
  std::vector<std::pair<QString, QWidget*>> m_knobs;  // strategy name -> its knob group
  ClusterTable* m_cluster = nullptr;
  QComboBox* m_recoveryMode = nullptr;
  std::vector<std::pair<QString, QWidget*>> m_recoveryKnobs;  // mode name -> its knob group
  QLineEdit* m_replicas = nullptr;
  QComboBox* m_backlogRule = nullptr;
  std::vector<QLineEdit*> m_scaledLrKnobs;  // enabled for backlog_rule SCALED_LR only
  QLineEdit* m_clipKnob = nullptr;          // enabled for backlog_rule CLIPPED_SUM only
  FaultTable* m_faults = nullptr;
  QGroupBox* m_suiteBox = nullptr;
  QListWidget* m_suite = nullptr;
  QLabel* m_suiteNote = nullptr;
  QLabel* m_message = nullptr;
};

}  // namespace dasp::ui
