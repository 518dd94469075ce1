// SPDX-License-Identifier: MIT
#pragma once
// SlurmFields: the designer's Slurm job settings, in a researcher's terms: partition,
// account, time limit and node count, plus further salloc and srun flags. They are not
// fields of their own in the spec but launch.salloc_args (the job's options: salloc, or
// the #SBATCH lines of `dasp slurm-script`) and launch.srun_args (every node's step): the
// form reads them from those lists and writes them back in the same words
// ("--partition=gpu", ...). Flags are separated by blanks (a flag with a blank inside is
// not expressible here; edit the spec file for it).
// Threading: GUI thread only.

#include "core/spec/spec.h"

#include <QWidget>

#include <utility>
#include <vector>

class QFormLayout;
class QLineEdit;

namespace dasp::ui {

class SlurmFields : public QWidget {
  Q_OBJECT

 public:
  explicit SlurmFields(QWidget* parent = nullptr);
  // The form of the fields, for the designer to add rows bound to other launch fields.
  QFormLayout* form() const { return m_form; }
  // Fills the fields from launch.salloc_args and launch.srun_args.
  void set(const v1::LaunchSpec& launch);
  // Replaces launch.salloc_args and launch.srun_args with the fields' words.
  void apply(v1::LaunchSpec& launch) const;

 Q_SIGNALS:
  void edited();

 private:
  QLineEdit* addField(const QString& label, const QString& name, const QString& placeholder, const QString& tip);
  // The fields that show one salloc option each, with the option's prefix ("--time="), in
  // the order apply() writes them.
  std::vector<std::pair<const char*, QLineEdit*>> namedFields() const;

  QFormLayout* m_form = nullptr;
  QLineEdit* m_partition = nullptr;
  QLineEdit* m_account = nullptr;
  QLineEdit* m_time = nullptr;
  QLineEdit* m_nodes = nullptr;
  QLineEdit* m_sallocFlags = nullptr;
  QLineEdit* m_srunFlags = nullptr;
};

}  // namespace dasp::ui
