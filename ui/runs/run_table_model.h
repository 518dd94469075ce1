// SPDX-License-Identifier: MIT
#pragma once
// RunTableModel: the runs of a RunStore as a Qt table (one row per run), for the runs
// table of the workbench. reload() re-reads the store and updates the rows in place
// (removed runs are removed, changed runs emit dataChanged, new runs are appended), so a
// view keeps its selection, scroll position and open editor across the periodic reloads.
// The Tags and Notes cells are editable and write through to the store. The Strategy
// column labels a run as the charts and tables do (ssp(3), dasp-r, reference: from its
// spec), not with the store's bare strategy name.
//
// Sorting and filtering belong to a QSortFilterProxyModel on top: SortRole gives numbers
// for the numeric columns (Run, Seed, Started, Duration) and text for the others.
//
// Threading: GUI thread only (a QAbstractItemModel), and the RunStore it reads is used on
// that thread too. The model keeps a pointer to the store passed to reload() for edits:
// call clear() before that store is destroyed.

#include "core/common/result.h"
#include "core/store/run_store.h"

#include <QAbstractTableModel>
#include <QString>

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace dasp::ui {

class RunTableModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column {
    Run,
    Started,
    Name,
    Kind,
    Engine,  // "real" (processes, wall clock) or "sim" (the simulator, virtual time)
    Model,
    Dataset,
    Strategy,
    Seed,
    Status,
    Duration,
    Tags,
    Notes,
    ColumnCount
  };
  // Numbers for Run, Seed, Started (Unix seconds) and Duration (seconds), else the text.
  static constexpr int SortRole = Qt::UserRole + 1;

  explicit RunTableModel(QObject* parent = nullptr);

  // Re-reads every run from `store` and remembers it for edits. On failure the rows are
  // left as they were and the store's message is returned (the caller shows it).
  dasp::Status reload(dasp::RunStore& store);
  // Removes every row and forgets the store.
  void clear();

  // The run id of a (source) row, or -1 when the row is out of range.
  std::int64_t runIdAt(int row) const;
  // The run of a (source) row, or nullptr when the row is out of range.
  const dasp::RunRow* runAt(int row) const;
  // The source row of a run id, or -1.
  int rowOfRun(std::int64_t runId) const;

  int rowCount(const QModelIndex& parent = QModelIndex()) const override;
  int columnCount(const QModelIndex& parent = QModelIndex()) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;
  // Tags and Notes only: writes to the store; on failure emits editFailed and returns false.
  bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;

 Q_SIGNALS:
  // An edit of a Tags or Notes cell could not be written; `message` is for a person.
  void editFailed(const QString& message);

 private:
  QVariant displayData(const dasp::RunRow& run, int column) const;
  QVariant sortData(const dasp::RunRow& run, int column) const;

  // The Strategy column's label of `run`, parsed from its spec once per run id.
  const QString& strategyLabelOf(const dasp::RunRow& run) const;

  std::vector<dasp::RunRow> m_rows;
  dasp::RunStore* m_store = nullptr;
  mutable std::unordered_map<std::int64_t, QString> m_strategyLabels;  // by run id, this store's
};

}  // namespace dasp::ui
