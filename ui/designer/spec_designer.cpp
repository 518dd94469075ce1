// SPDX-License-Identifier: MIT
#include "ui/designer/spec_designer.h"

#include "ui/designer/field_docs.h"

#include "ui/designer/cluster_table.h"
#include "ui/designer/fault_table.h"
#include "ui/designer/slurm_fields.h"

#include "core/params/gradient_guard.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <QComboBox>
#include <QCoreApplication>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QLocale>
#include <QPushButton>
#include <QSaveFile>
#include <QScrollArea>
#include <QVBoxLayout>

#include <algorithm>

namespace dasp::ui {

namespace pb = google::protobuf;

namespace {

// The leaf field of a dotted path and the message holding it; null when a message on the
// way is absent (nothing to read or clear there).
const pb::Message* walk(const pb::Message& root, const std::string& path, const pb::FieldDescriptor** leaf) {
  const pb::Message* m = &root;
  std::size_t start = 0;
  while (true) {
    const auto dot = path.find('.', start);
    const std::string name = path.substr(start, dot == std::string::npos ? dot : dot - start);
    const pb::FieldDescriptor* field = m->GetDescriptor()->FindFieldByName(name);
    if (field == nullptr) return nullptr;
    if (dot == std::string::npos) {
      *leaf = field;
      return m;
    }
    if (!m->GetReflection()->HasField(*m, field)) return nullptr;
    m = &m->GetReflection()->GetMessage(*m, field);
    start = dot + 1;
  }
}

QString number(double v) { return QString::number(v, 'g', QLocale::FloatingPointShortest); }

QString scalarText(const pb::Message& m, const pb::FieldDescriptor* f, int index) {
  const auto* r = m.GetReflection();
  const bool rep = f->is_repeated();
  switch (f->cpp_type()) {
    case pb::FieldDescriptor::CPPTYPE_INT32: return QString::number(rep ? r->GetRepeatedInt32(m, f, index) : r->GetInt32(m, f));
    case pb::FieldDescriptor::CPPTYPE_INT64:
      return QString::number(static_cast<qlonglong>(rep ? r->GetRepeatedInt64(m, f, index) : r->GetInt64(m, f)));
    case pb::FieldDescriptor::CPPTYPE_UINT32: return QString::number(rep ? r->GetRepeatedUInt32(m, f, index) : r->GetUInt32(m, f));
    case pb::FieldDescriptor::CPPTYPE_UINT64:
      return QString::number(static_cast<qulonglong>(rep ? r->GetRepeatedUInt64(m, f, index) : r->GetUInt64(m, f)));
    case pb::FieldDescriptor::CPPTYPE_DOUBLE: return number(rep ? r->GetRepeatedDouble(m, f, index) : r->GetDouble(m, f));
    case pb::FieldDescriptor::CPPTYPE_FLOAT: return number(rep ? r->GetRepeatedFloat(m, f, index) : r->GetFloat(m, f));
    case pb::FieldDescriptor::CPPTYPE_BOOL:
      return (rep ? r->GetRepeatedBool(m, f, index) : r->GetBool(m, f)) ? QStringLiteral("true") : QStringLiteral("false");
    case pb::FieldDescriptor::CPPTYPE_STRING:
      return QString::fromStdString(rep ? r->GetRepeatedString(m, f, index) : r->GetString(m, f));
    case pb::FieldDescriptor::CPPTYPE_ENUM:
      return QString::fromStdString(rep ? r->GetRepeatedEnum(m, f, index)->name() : r->GetEnum(m, f)->name());
    case pb::FieldDescriptor::CPPTYPE_MESSAGE: break;
  }
  return {};
}

// The field's value as the form shows it: "" when unset (or the zero value of a field
// without presence), lists comma-separated.
QString readPath(const ExperimentSpec& spec, const std::string& path) {
  const pb::FieldDescriptor* f = nullptr;
  const pb::Message* m = walk(spec, path, &f);
  if (m == nullptr || f == nullptr) return {};
  if (f->is_repeated()) {
    QStringList items;
    for (int i = 0; i < m->GetReflection()->FieldSize(*m, f); ++i) items << scalarText(*m, f, i);
    return items.join(QStringLiteral(", "));
  }
  if (!m->GetReflection()->HasField(*m, f)) return {};
  return scalarText(*m, f, 0);
}

void clearPath(ExperimentSpec& spec, const std::string& path) {
  const pb::FieldDescriptor* f = nullptr;
  const pb::Message* m = walk(spec, path, &f);
  // `m` is a sub-message of `spec` reached through present fields: safe to modify.
  if (m != nullptr && f != nullptr) m->GetReflection()->ClearField(const_cast<pb::Message*>(m), f);
}

QString widgetValue(QWidget* w) {
  if (auto* edit = qobject_cast<QLineEdit*>(w)) return edit->text().trimmed();
  if (auto* combo = qobject_cast<QComboBox*>(w)) return combo->currentData().toString();
  return {};
}

void setWidgetValue(QWidget* w, const QString& value) {
  if (auto* edit = qobject_cast<QLineEdit*>(w)) {
    edit->setText(value);
  } else if (auto* combo = qobject_cast<QComboBox*>(w)) {
    int index = combo->findData(value);
    if (index < 0) {  // a value this build does not offer: kept, so validation can name it
      combo->addItem(value, value);
      index = combo->count() - 1;
    }
    combo->setCurrentIndex(index);
  }
}

// A titled form section of the designer's page.
QFormLayout* addSection(QWidget* page, QVBoxLayout* layout, const QString& title) {
  auto* box = new QGroupBox(title, page);
  auto* form = new QFormLayout(box);
  form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  layout->addWidget(box);
  return form;
}

QStringList qtNames(const std::vector<std::string>& list) {
  QStringList out;
  for (const auto& s : list) out << QString::fromStdString(s);
  return out;
}

QString withoutSetPrefix(const std::string& message) {
  QString text = QString::fromStdString(message);
  if (text.startsWith(QLatin1String("--set "))) text.remove(0, 6);
  return text;
}

}  // namespace

SpecDesigner::SpecDesigner(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  auto* top = new QHBoxLayout;
  m_presets = new QComboBox(this);
  m_presets->setObjectName(QStringLiteral("presetCombo"));
  m_presets->setToolTip(tr("Presets from %1").arg(experimentsDir()));
  auto* open = new QPushButton(tr("Open…"), this);
  auto* saveAs = new QPushButton(tr("Save As…"), this);
  auto* check = new QPushButton(tr("Check"), this);
  check->setToolTip(tr("Validate the spec as `dasp validate` does."));
  top->addWidget(new QLabel(tr("Preset:"), this));
  top->addWidget(m_presets, 1);
  top->addWidget(open);
  top->addWidget(saveAs);
  top->addWidget(check);
  layout->addLayout(top);

  auto* scroll = new QScrollArea(this);
  scroll->setWidgetResizable(true);
  scroll->setWidget(buildForm());
  layout->addWidget(scroll, 1);

  m_message = new QLabel(this);
  m_message->setObjectName(QStringLiteral("specMessage"));
  m_message->setWordWrap(true);
  m_message->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(m_message);

  connect(m_presets, &QComboBox::activated, this, [this](int index) {
    const QString path = m_presets->itemData(index).toString();
    if (!path.isEmpty()) loadFile(path);
  });
  connect(open, &QPushButton::clicked, this, &SpecDesigner::openFile);
  connect(saveAs, &QPushButton::clicked, this, &SpecDesigner::saveFileAs);
  connect(check, &QPushButton::clicked, this, [this] {
    if (validate()) showMessage(tr("The spec is valid."), false);
  });
  connect(m_cluster, &ClusterTable::changed, this, &SpecDesigner::updateFaultNodes);
  connect(m_cluster, &ClusterTable::changed, this, &SpecDesigner::onEdited);
  connect(m_faults, &FaultTable::changed, this, &SpecDesigner::onEdited);
  reloadPresets();
  setSpec(ExperimentSpec());
}

QLineEdit* SpecDesigner::addText(QFormLayout* form, const QString& label, const std::string& path,
                                 const QString& placeholder) {
  auto* edit = new QLineEdit(form->parentWidget());
  edit->setObjectName(QStringLiteral("spec.") + QString::fromStdString(path));
  edit->setPlaceholderText(placeholder);
  edit->setToolTip(fieldToolTip(path));
  form->addRow(label, edit);
  m_bindings.push_back({edit, path});
  connect(edit, &QLineEdit::textEdited, this, &SpecDesigner::onEdited);
  return edit;
}

QComboBox* SpecDesigner::addChoice(QFormLayout* form, const QString& label, const std::string& path,
                                   const QString& defaultText, const QStringList& values) {
  auto* combo = new QComboBox(form->parentWidget());
  combo->setObjectName(QStringLiteral("spec.") + QString::fromStdString(path));
  combo->setToolTip(fieldToolTip(path));
  combo->addItem(tr("default (%1)").arg(defaultText), QString());
  for (const QString& v : values) combo->addItem(v, v);
  form->addRow(label, combo);
  m_bindings.push_back({combo, path});
  connect(combo, &QComboBox::activated, this, &SpecDesigner::onEdited);
  return combo;
}

QComboBox* SpecDesigner::addBool(QFormLayout* form, const QString& label, const std::string& path, bool defaultValue) {
  auto* combo = addChoice(form, label, path, defaultValue ? tr("yes") : tr("no"), {});
  combo->addItem(tr("yes"), QStringLiteral("true"));
  combo->addItem(tr("no"), QStringLiteral("false"));
  return combo;
}

// The names of an enum field's values other than 0 (0 is the documented default).
QStringList SpecDesigner::enumValues(const std::string& path) const {
  ExperimentSpec probe;
  std::size_t start = 0;
  const pb::Descriptor* d = probe.GetDescriptor();
  const pb::FieldDescriptor* f = nullptr;
  while (d != nullptr) {
    const auto dot = path.find('.', start);
    f = d->FindFieldByName(path.substr(start, dot == std::string::npos ? dot : dot - start));
    if (f == nullptr || dot == std::string::npos) break;
    d = f->message_type();
    start = dot + 1;
  }
  QStringList out;
  if (f == nullptr || f->enum_type() == nullptr) return out;
  for (int i = 0; i < f->enum_type()->value_count(); ++i) {
    if (f->enum_type()->value(i)->number() != 0) out << QString::fromStdString(f->enum_type()->value(i)->name());
  }
  return out;
}

QWidget* SpecDesigner::buildForm() {
  auto* page = new QWidget;
  auto* layout = new QVBoxLayout(page);
  auto section = [&](const QString& title) { return addSection(page, layout, title); };
  QFormLayout* f = section(tr("Experiment"));
  addText(f, tr("Name"), "name", tr("the file name"));
  addText(f, tr("Description"), "description", QString());
  addText(f, tr("Seed"), "seed", QStringLiteral("1"));
  addText(f, tr("Seeds"), "seeds", tr("= seed"));
  addBool(f, tr("With reference"), "with_reference", false);
  addText(f, tr("Device"), "device", QStringLiteral("auto"));
  addText(f, tr("Threads"), "threads", QStringLiteral("1"));
  buildEngineSection(page, layout);
  buildLaunchSection(page, layout);
  buildModelSections(page, layout);
  buildStrategySection(page, layout);
  buildRecoverySection(page, layout);
  buildRunSections(page, layout);
  buildSuiteBox(page, layout);
  layout->addStretch(1);
  return page;
}

// The engine and, for sim, its cost model.
void SpecDesigner::buildEngineSection(QWidget* page, QVBoxLayout* layout) {
  auto section = [&](const QString& title) { return addSection(page, layout, title); };
  QFormLayout* f = section(tr("Engine"));
  m_engine = addChoice(f, tr("Engine"), "engine", QStringLiteral("real"), {QStringLiteral("real"), QStringLiteral("sim")});
  m_simKnobs = new QWidget(f->parentWidget());
  m_simKnobs->setObjectName(QStringLiteral("simKnobs"));
  auto* sim = new QFormLayout(m_simKnobs);
  sim->setContentsMargins(16, 0, 0, 0);
  f->addRow(m_simKnobs);
  addChoice(sim, tr("Gradients"), "sim.gradients", QStringLiteral("REAL"), enumValues("sim.gradients"));
  addText(sim, tr("Compute (ms)"), "sim.compute_ms", tr("0 = measured on this machine"));
  addText(sim, tr("Push overhead (ms)"), "sim.push_overhead_ms", QStringLiteral("0.05"));
  addText(sim, tr("Apply cost (ns/parameter)"), "sim.apply_ns_per_param", QStringLiteral("1"));
  addText(sim, tr("Restart (ms)"), "sim.restart_ms", QStringLiteral("500"));
  addText(sim, tr("Failover (ms)"), "sim.failover_ms", QStringLiteral("250"));
  addText(sim, tr("Link latency (ms)"), "cluster.link.latency_ms", QStringLiteral("0.1"));
  addText(sim, tr("Link bandwidth (Mbit/s)"), "cluster.link.mbit", QStringLiteral("8000"));
  connect(m_engine, &QComboBox::currentIndexChanged, this, &SpecDesigner::updateEngineKnobs);
}

// Where the nodes run: the launcher and, for Slurm, the job's settings.
void SpecDesigner::buildLaunchSection(QWidget* page, QVBoxLayout* layout) {
  QFormLayout* f = addSection(page, layout, tr("Launch"));
  m_launcher = addChoice(f, tr("Launcher"), "launch.launcher", QStringLiteral("LOCAL"), enumValues("launch.launcher"));
  m_slurm = new SlurmFields(f->parentWidget());
  f->addRow(m_slurm);
  addText(m_slurm->form(), tr("Allocation wait (s)"), "launch.allocation_wait_s", QStringLiteral("300"));
  connect(m_slurm, &SlurmFields::edited, this, &SpecDesigner::onEdited);
  connect(m_launcher, &QComboBox::currentIndexChanged, this, &SpecDesigner::updateLaunchFields);
}

// Model and data, optimizer, and the cluster table.
void SpecDesigner::buildModelSections(QWidget* page, QVBoxLayout* layout) {
  auto section = [&](const QString& title) { return addSection(page, layout, title); };
  QFormLayout* f = section(tr("Model and data"));
  m_model = addChoice(f, tr("Model"), "model.name", QStringLiteral("mlp"), qtNames(knownModels()));
  m_hidden = addText(f, tr("Hidden width"), "model.hidden", QStringLiteral("128"));
  addChoice(f, tr("Dataset"), "dataset.name", QStringLiteral("fashion-mnist"), qtNames(knownDatasets()));
  addText(f, tr("Path"), "dataset.path", QStringLiteral("/usr/share/datasets/fashion-mnist"));
  addText(f, tr("Train limit"), "dataset.train_limit", tr("0 = all"));
  addText(f, tr("Test limit"), "dataset.test_limit", tr("0 = all"));
  addChoice(f, tr("Partition"), "dataset.partition", QStringLiteral("IID"), enumValues("dataset.partition"));
  addText(f, tr("Dirichlet α"), "dataset.dirichlet_alpha", QStringLiteral("0.5"));
  addBool(f, tr("Normalize"), "dataset.normalize", true);

  f = section(tr("Optimizer"));
  addText(f, tr("Learning rate"), "optimizer.lr", QStringLiteral("0.01"));
  addText(f, tr("Momentum"), "optimizer.momentum", QStringLiteral("0.9"));
  addText(f, tr("Weight decay"), "optimizer.weight_decay", QStringLiteral("0"));
  addChoice(f, tr("LR convention"), "optimizer.lr_convention", QStringLiteral("PER_GRADIENT"),
            enumValues("optimizer.lr_convention"));
  addText(f, tr("Batch size"), "batch_size", QStringLiteral("64"));
  addChoice(f, tr("Transport"), "cluster.transport", QStringLiteral("AUTO"), enumValues("cluster.transport"));

  auto* clusterBox = new QGroupBox(tr("Cluster (one row per worker)"), page);
  auto* clusterLayout = new QVBoxLayout(clusterBox);
  m_cluster = new ClusterTable(clusterBox);
  clusterLayout->addWidget(m_cluster);
  layout->addWidget(clusterBox);
}

// The strategy and each strategy's knobs (shown for the strategy chosen).
void SpecDesigner::buildStrategySection(QWidget* page, QVBoxLayout* layout) {
  auto section = [&](const QString& title) { return addSection(page, layout, title); };
  QFormLayout* f = section(tr("Strategy"));
  m_strategy = addChoice(f, tr("Strategy"), "strategy.name", QStringLiteral("bsp"), qtNames(knownStrategies()));
  auto knobGroup = [&](const QString& strategy) {
    auto* group = new QWidget(f->parentWidget());
    auto* form = new QFormLayout(group);
    form->setContentsMargins(16, 0, 0, 0);
    f->addRow(group);
    m_knobs.emplace_back(strategy, group);
    return form;
  };
  QFormLayout* k = knobGroup(QStringLiteral("ssp"));
  addText(k, tr("Staleness s"), "strategy.ssp.staleness", QStringLiteral("3"));
  k = knobGroup(QStringLiteral("dssp"));
  addText(k, tr("s_L"), "strategy.dssp.s_low", QStringLiteral("3"));
  addText(k, tr("s_H"), "strategy.dssp.s_high", QStringLiteral("15"));
  k = knobGroup(QStringLiteral("backup"));
  addText(k, tr("Backup workers b"), "strategy.backup.backup_workers", QStringLiteral("1"));
  k = knobGroup(QStringLiteral("dasp"));
  addChoice(k, tr("Rule"), "strategy.dasp.rule", QStringLiteral("ADAPTIVE"), enumValues("strategy.dasp.rule"));
  addText(k, tr("α (EMA)"), "strategy.dasp.alpha", QStringLiteral("0.2"));
  addText(k, tr("δ (SYNC band)"), "strategy.dasp.delta", QStringLiteral("0.3"));
  addText(k, tr("κ (barrier timeout)"), "strategy.dasp.kappa", QStringLiteral("1.5"));
  addText(k, tr("s_max (drop)"), "strategy.dasp.s_max", QStringLiteral("8"));
  addText(k, tr("s_H (lead cap)"), "strategy.dasp.s_high", QStringLiteral("15"));
  addBool(k, tr("Staleness scaling"), "strategy.dasp.staleness_scaling", true);
  addBool(k, tr("Lead cap"), "strategy.dasp.lead_cap", false);
  addText(k, tr("Hysteresis"), "strategy.dasp.hysteresis", QStringLiteral("2"));
  addBool(k, tr("Balance batches"), "strategy.dasp.balance_batches", true);
  addChoice(k, tr("Batch budget"), "strategy.dasp.batch_budget", QStringLiteral("FASTEST_AT_NOMINAL"),
            enumValues("strategy.dasp.batch_budget"));
  addText(k, tr("Min batch"), "strategy.dasp.min_batch", tr("batch size / 16"));
  addText(k, tr("Change band"), "strategy.dasp.change_band", QStringLiteral("0.5"));
  addBool(k, tr("Anytime batches"), "strategy.dasp.anytime", true);
  addText(f, tr("Barrier timeout (s)"), "strategy.barrier_timeout_s", QStringLiteral("10"));
  // The server's gradient guard (every strategy): core/params/gradient_guard.h.
  addChoice(f, tr("Gradient guard"), "strategy.gradient_guard.mode", QStringLiteral("REFUSE_OUTLIERS"),
            enumValues("strategy.gradient_guard.mode"));
  const auto guard = resolvedGuardSpec({});  // the placeholders are the defaults a run uses
  addText(f, tr("Outlier factor k"), "strategy.gradient_guard.outlier_factor", QString::number(guard.outlier_factor()));
  addText(f, tr("Median window"), "strategy.gradient_guard.window", QString::number(guard.window()));
  addText(f, tr("Warm-up"), "strategy.gradient_guard.warmup", QString::number(guard.warmup()));
  addText(f, tr("Clip norm"), "strategy.gradient_guard.clip_norm", QString::number(guard.clip_norm()));
  addText(f, tr("Hard cap"), "strategy.gradient_guard.max_norm", QString::number(guard.max_norm()));
  connect(m_strategy, &QComboBox::currentIndexChanged, this, &SpecDesigner::updateStrategyKnobs);
  connect(m_model, &QComboBox::currentIndexChanged, this, [this] {
    const QString model = m_model->currentData().toString();
    m_hidden->setEnabled(model.isEmpty() || model == QLatin1String("mlp"));
  });
}

// The recovery mode and each mode's knobs.
void SpecDesigner::buildRecoverySection(QWidget* page, QVBoxLayout* layout) {
  auto section = [&](const QString& title) { return addSection(page, layout, title); };
  QFormLayout* f = section(tr("Recovery"));
  m_recoveryMode = addChoice(f, tr("Mode"), "recovery.mode", QStringLiteral("NONE"), enumValues("recovery.mode"));
  auto recoveryGroup = [&](const QString& mode) {
    auto* group = new QWidget(f->parentWidget());
    group->setObjectName(QStringLiteral("recoveryKnobs.") + mode);
    auto* form = new QFormLayout(group);
    form->setContentsMargins(16, 0, 0, 0);
    f->addRow(group);
    m_recoveryKnobs.emplace_back(mode, group);
    return form;
  };
  QFormLayout* k = recoveryGroup(QStringLiteral("CHECKPOINT"));
  addText(k, tr("Every (updates)"), "recovery.checkpoint_every_updates", QStringLiteral("100"));
  addText(k, tr("Every (s)"), "recovery.checkpoint_every_s", tr("0 = by updates only"));
  addText(k, tr("Keep"), "recovery.checkpoint_keep", QStringLiteral("2"));
  addText(k, tr("Directory"), "recovery.checkpoint_dir", tr("the run's temporary directory"));
  k = recoveryGroup(QStringLiteral("CHAIN"));
  m_replicas = addText(k, tr("Replicas"), "recovery.replicas", QStringLiteral("3"));
  addText(k, tr("Forward every"), "recovery.forward_every", QStringLiteral("1"));
  addBool(k, tr("Local copies in failover"), "recovery.local_copies", false);
  k = recoveryGroup(QStringLiteral("STATELESS"));
  addText(k, tr("Backlog (gradients)"), "recovery.backlog_max_gradients", QStringLiteral("1000"));
  addText(k, tr("Backlog (MB)"), "recovery.backlog_max_mb", QStringLiteral("1024"));
  m_backlogRule = addChoice(k, tr("Backlog rule"), "recovery.backlog_rule", QStringLiteral("SUM"),
                            enumValues("recovery.backlog_rule"));
  m_scaledLrKnobs.push_back(addText(k, tr("Backlog lr scale"), "recovery.backlog_lr_scale", QStringLiteral("0.1")));
  m_scaledLrKnobs.push_back(addText(k, tr("Backlog lr threshold"), "recovery.backlog_lr_threshold",
                                    QStringLiteral("50")));
  m_clipKnob = addText(k, tr("Backlog clip (gradients)"), "recovery.backlog_clip_gradients", QStringLiteral("10"));
  k = recoveryGroup(QStringLiteral("LOCAL"));
  addText(k, tr("Local steps (most)"), "recovery.local_max_steps", QStringLiteral("1000"));
  addText(f, tr("Reconnect timeout (s)"), "recovery.reconnect_timeout_s", QStringLiteral("120"));
  connect(m_recoveryMode, &QComboBox::currentIndexChanged, this, &SpecDesigner::updateRecoveryKnobs);
  connect(m_backlogRule, &QComboBox::currentIndexChanged, this, &SpecDesigner::updateRecoveryKnobs);
  connect(m_replicas, &QLineEdit::textChanged, this, &SpecDesigner::updateFaultNodes);
}

// Fault drills, the stop condition and the evaluation schedule.
void SpecDesigner::buildRunSections(QWidget* page, QVBoxLayout* layout) {
  auto section = [&](const QString& title) { return addSection(page, layout, title); };
  auto* faultBox = new QGroupBox(tr("Fault drills"), page);
  faultBox->setToolTip(tr("Kill or pause a node at a run time and restart or resume it later; the run records "
                          "each drill's detection, downtime, lost updates and accuracy dip."));
  auto* faultLayout = new QVBoxLayout(faultBox);
  m_faults = new FaultTable(faultBox);
  faultLayout->addWidget(m_faults);
  layout->addWidget(faultBox);

  QFormLayout* f = section(tr("Stop condition"));
  addText(f, tr("Target accuracy"), "stop.target_accuracy", tr("0 = none"));
  addBool(f, tr("Stop at target"), "stop.stop_at_target", true);
  addText(f, tr("Max seconds"), "stop.max_seconds", tr("0 = no limit"));
  addText(f, tr("Epochs"), "stop.epochs", tr("1 when nothing else is set"));
  addText(f, tr("Max updates"), "stop.max_updates", tr("0 = no limit"));
  addText(f, tr("Diverged above (× initial loss)"), "stop.divergence.loss_factor", QStringLiteral("10"));
  addText(f, tr("Divergence window (s)"), "stop.divergence.window_s", QStringLiteral("2"));

  f = section(tr("Evaluation"));
  addText(f, tr("Every (s)"), "evaluation.every_s", tr("0 = by steps only"));
  addText(f, tr("Every (steps)"), "evaluation.every_steps", QStringLiteral("200"));
  addText(f, tr("Test subset"), "evaluation.test_subset", tr("0 = the whole test set"));
}

// The suite the spec runs (strategies x seeds), read-only here.
void SpecDesigner::buildSuiteBox(QWidget* page, QVBoxLayout* layout) {
  m_suiteBox = new QGroupBox(tr("Suite"), page);
  auto* suiteLayout = new QVBoxLayout(m_suiteBox);
  m_suite = new QListWidget(m_suiteBox);
  m_suite->setObjectName(QStringLiteral("suiteList"));
  m_suite->setMaximumHeight(140);
  m_suiteNote = new QLabel(m_suiteBox);
  m_suiteNote->setWordWrap(true);
  auto* clear = new QPushButton(tr("Clear suite (run only the strategy above)"), m_suiteBox);
  connect(clear, &QPushButton::clicked, this, &SpecDesigner::clearSuite);
  suiteLayout->addWidget(m_suiteNote);
  suiteLayout->addWidget(m_suite);
  suiteLayout->addWidget(clear, 0, Qt::AlignLeft);
  layout->addWidget(m_suiteBox);
}

void SpecDesigner::setSpec(const ExperimentSpec& spec) {
  m_base = spec;
  m_filling = true;
  for (const Binding& b : m_bindings) setWidgetValue(b.widget, readPath(spec, b.path));
  m_cluster->setCluster(spec.cluster());
  m_faults->setFaults(spec.faults());
  m_slurm->set(spec.launch());
  m_filling = false;
  updateEngineKnobs();
  updateLaunchFields();
  updateStrategyKnobs();
  updateRecoveryKnobs();
  updateSuite();
}

Result<ExperimentSpec> SpecDesigner::buildSpec() const {
  ExperimentSpec s = m_base;
  // The cluster table first: the form's link fields (cluster.link.*) go over its cluster.
  auto cluster = m_cluster->cluster();
  if (!cluster) return cluster.status();
  if (m_base.has_cluster() || cluster->ByteSizeLong() > 0) {
    *s.mutable_cluster() = cluster.value();
  } else {
    s.clear_cluster();  // not `"cluster": {}` for a spec that had none
  }
  for (const Binding& b : m_bindings) {
    clearPath(s, b.path);
    const QString value = widgetValue(b.widget);
    if (value.isEmpty()) continue;
    if (auto st = applyOverride(s, b.path + "=" + value.toStdString()); !st) {
      return Status::error(withoutSetPrefix(st.message()).toStdString());
    }
  }
  m_slurm->apply(*s.mutable_launch());
  dropEmptyParts(s);
  auto faults = m_faults->faults();
  if (!faults) return faults.status();
  s.clear_faults();
  for (const auto& f : faults.value()) *s.add_faults() = f;
  return s;
}

ExperimentSpec SpecDesigner::spec() const {
  ExperimentSpec s = m_base;
  if (auto cluster = m_cluster->cluster(); cluster && (m_base.has_cluster() || cluster->ByteSizeLong() > 0)) {
    *s.mutable_cluster() = cluster.value();
  }
  for (const Binding& b : m_bindings) {
    clearPath(s, b.path);
    const QString value = widgetValue(b.widget);
    if (!value.isEmpty()) {
      ExperimentSpec trial = s;
      if (applyOverride(trial, b.path + "=" + value.toStdString())) s = std::move(trial);
    }
  }
  m_slurm->apply(*s.mutable_launch());
  dropEmptyParts(s);
  if (auto faults = m_faults->faults()) {
    s.clear_faults();
    for (const auto& f : faults.value()) *s.add_faults() = f;
  }
  return s;
}

void SpecDesigner::dropEmptyParts(ExperimentSpec& s) const {
  // Fields set and cleared again in the form leave empty messages behind: dropped, unless
  // the spec last set had them (a preset read back gives the same message).
  if (s.cluster().has_link() && s.cluster().link().ByteSizeLong() == 0 && !m_base.cluster().has_link()) {
    s.mutable_cluster()->clear_link();
  }
  if (s.has_cluster() && s.cluster().ByteSizeLong() == 0 && !m_base.has_cluster()) s.clear_cluster();
  if (s.has_sim() && s.sim().ByteSizeLong() == 0 && !m_base.has_sim()) s.clear_sim();
  if (s.has_launch() && s.launch().ByteSizeLong() == 0 && !m_base.has_launch()) s.clear_launch();
}

Status SpecDesigner::validate() {
  auto built = buildSpec();
  Status st = built ? validateSpec(built.value()) : built.status();
  if (!st) {
    showMessage(QString::fromStdString(st.message()), true);
  } else if (m_messageIsError) {
    showMessage(QString(), false);
  }
  return st;
}

void SpecDesigner::clearSuite() {
  m_base.clear_suite();
  updateSuite();
  onEdited();
}

QString SpecDesigner::message() const { return m_message->text(); }

void SpecDesigner::showMessage(const QString& text, bool isError) {
  m_messageIsError = isError && !text.isEmpty();
  m_message->setText(text);
  m_message->setStyleSheet(m_messageIsError ? QStringLiteral("QLabel { color: #b00020; }") : QString());
}

void SpecDesigner::updateEngineKnobs() {
  m_simKnobs->setVisible(m_engine->currentData().toString() == QLatin1String("sim"));
}

void SpecDesigner::updateLaunchFields() {
  m_slurm->setVisible(m_launcher->currentData().toString() == QLatin1String("SLURM"));
}

void SpecDesigner::updateStrategyKnobs() {
  QString name = m_strategy->currentData().toString();
  if (name.isEmpty()) name = QStringLiteral("bsp");
  for (auto& [strategy, group] : m_knobs) group->setVisible(strategy == name);
}

void SpecDesigner::updateRecoveryKnobs() {
  QString mode = m_recoveryMode->currentData().toString();
  if (mode.isEmpty()) mode = QStringLiteral("NONE");
  for (auto& [name, group] : m_recoveryKnobs) group->setVisible(name == mode);
  const QString rule = m_backlogRule->currentData().toString();
  for (QLineEdit* edit : m_scaledLrKnobs) edit->setEnabled(rule == QLatin1String("SCALED_LR"));
  m_clipKnob->setEnabled(rule == QLatin1String("CLIPPED_SUM"));
  updateFaultNodes();
}

void SpecDesigner::updateFaultNodes() {
  QStringList names{QStringLiteral("server")};
  if (m_recoveryMode->currentData().toString() == QLatin1String("CHAIN")) {
    bool ok = false;
    int replicas = m_replicas->text().trimmed().toInt(&ok);
    if (!ok || replicas < 2 || replicas > 16) replicas = 3;  // the default (a bad value is validate()'s)
    for (int i = 0; i < replicas; ++i) names << QStringLiteral("server-%1").arg(i);
  }
  names << QStringLiteral("evaluator") << m_cluster->workerNames();
  m_faults->setNodeNames(names);
}

void SpecDesigner::updateSuite() {
  m_suite->clear();
  for (int i = 0; i < m_base.suite_size(); ++i) {
    const auto& entry = m_base.suite(i);
    QString text = entry.has_strategy() ? QString::fromStdString(entry.strategy().name()) : tr("(the strategy above)");
    v1::StrategySpec knobs = entry.strategy();
    knobs.clear_name();
    if (knobs.ByteSizeLong() > 0) text += QStringLiteral("  ") + QString::fromStdString(knobs.ShortDebugString());
    if (entry.has_recovery()) {
      text += tr("  recovery %1").arg(QString::fromStdString(v1::RecoverySpec::Mode_Name(entry.recovery().mode())));
    }
    if (entry.workers() > 0) text += tr("  %1 workers").arg(entry.workers());
    m_suite->addItem(QStringLiteral("%1. %2").arg(i + 1).arg(text));
  }
  const int seeds = std::max(1, spec().seeds_size());
  m_suiteNote->setText(tr("Launch runs each entry × %n seed(s) in turn (%1 runs), like `dasp run`.", nullptr, seeds)
                           .arg(m_base.suite_size() * seeds));
  m_suiteBox->setVisible(m_base.suite_size() > 0);
}

void SpecDesigner::onEdited() {
  if (m_filling) return;
  if (m_base.suite_size() > 0) updateSuite();  // the run count follows the seeds
  validate();  // the CLI's message as soon as a field goes wrong, cleared once it is right
}

}  // namespace dasp::ui
