// SPDX-License-Identifier: MIT
#include "ui/designer/slurm_fields.h"

#include <QFormLayout>
#include <QLineEdit>
#include <QRegularExpression>

#include <string>
#include <utility>
#include <vector>

namespace dasp::ui {
namespace {

QStringList words(const QLineEdit* edit) {
  return edit->text().split(QRegularExpression(QStringLiteral("\\s+")), Qt::SkipEmptyParts);
}

}  // namespace

SlurmFields::SlurmFields(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("slurmFields"));
  m_form = new QFormLayout(this);
  m_form->setContentsMargins(16, 0, 0, 0);
  m_partition = addField(tr("Partition"), QStringLiteral("slurm.partition"), tr("the cluster's default"),
                         tr("salloc/sbatch --partition"));
  m_account = addField(tr("Account"), QStringLiteral("slurm.account"), tr("your default"), tr("salloc/sbatch --account"));
  m_time = addField(tr("Time limit"), QStringLiteral("slurm.time"), tr("the partition's"),
                    tr("salloc/sbatch --time, e.g. 30 (minutes), 2:00:00 or 1-00:00:00"));
  m_nodes = addField(tr("Nodes"), QStringLiteral("slurm.nodes"), tr("2, or the hosts named in the spec"),
                     tr("salloc/sbatch --nodes for a spec without hosts: the first node runs the server and the "
                        "evaluator, the others the workers"));
  m_sallocFlags = addField(tr("More job flags"), QStringLiteral("slurm.sallocFlags"), QString(),
                           tr("further salloc/sbatch options, separated by blanks, e.g. --qos=short --mem=8G"));
  m_srunFlags = addField(tr("Step flags"), QStringLiteral("slurm.srunFlags"), QString(),
                         tr("options for every node's srun step, separated by blanks, e.g. --overlap"));
}

QLineEdit* SlurmFields::addField(const QString& label, const QString& name, const QString& placeholder,
                                 const QString& tip) {
  auto* edit = new QLineEdit(this);
  edit->setObjectName(name);
  edit->setPlaceholderText(placeholder);
  edit->setToolTip(tip);
  m_form->addRow(label, edit);
  connect(edit, &QLineEdit::textEdited, this, &SlurmFields::edited);
  return edit;
}

std::vector<std::pair<const char*, QLineEdit*>> SlurmFields::namedFields() const {
  return {{"--partition=", m_partition}, {"--account=", m_account}, {"--time=", m_time}, {"--nodes=", m_nodes}};
}

void SlurmFields::set(const v1::LaunchSpec& launch) {
  const auto named = namedFields();
  for (const auto& [option, field] : named) field->clear();
  QStringList rest;
  for (const auto& arg : launch.salloc_args()) {
    const QString text = QString::fromStdString(arg);
    bool shown = false;
    for (const auto& [option, field] : named) {
      const QLatin1String prefix(option);
      if (!shown && text.startsWith(prefix) && field->text().isEmpty()) {
        field->setText(text.mid(prefix.size()));
        shown = true;
      }
    }
    if (!shown) rest << text;
  }
  m_sallocFlags->setText(rest.join(QLatin1Char(' ')));
  QStringList steps;
  for (const auto& arg : launch.srun_args()) steps << QString::fromStdString(arg);
  m_srunFlags->setText(steps.join(QLatin1Char(' ')));
}

void SlurmFields::apply(v1::LaunchSpec& launch) const {
  launch.clear_salloc_args();
  for (const auto& [option, field] : namedFields()) {
    const QString value = field->text().trimmed();
    if (!value.isEmpty()) launch.add_salloc_args(option + value.toStdString());
  }
  for (const QString& w : words(m_sallocFlags)) launch.add_salloc_args(w.toStdString());
  launch.clear_srun_args();
  for (const QString& w : words(m_srunFlags)) launch.add_srun_args(w.toStdString());
}

}  // namespace dasp::ui
