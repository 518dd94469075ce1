// SPDX-License-Identifier: MIT
#pragma once
// RunsPanel: the runs of one run store in a sortable, filterable table (tags and notes
// editable, runs deletable after a confirmation), reloaded every 2 s while the window is
// visible so runs written by the CLI or the workbench's own runner appear. Double-clicking
// a run (outside the editable cells) or "Open in Designer" asks for its spec in the
// designer (Launch then runs it again); "Open in Live View" asks for a replay of the run in
// the live view, "Compare Selected" for the selected runs in the compare view, "Predict
// Other Strategies on This Cluster…" for a prediction from the run (PredictDialog); "Logs…"
// opens a non-modal dialog with each node's exit status and log lines.
//
// A store that cannot be opened or read (not SQLite, a newer schema, locked) never stops
// the panel: the table stays empty, the error shows in a banner above it and once in a
// non-blocking message box (again only when the error changes), and the periodic reload
// retries the file.
//
// Threading: GUI thread only. It owns its RunStore connection, used on that thread.

#include "core/store/run_store.h"

#include <QList>
#include <QString>
#include <QWidget>

#include <cstdint>
#include <memory>
#include <vector>

class QAction;
class QDialog;
class QLabel;
class QLineEdit;
class QSortFilterProxyModel;
class QTableView;
class QTimer;

namespace dasp::ui {

class RunTableModel;

class RunsPanel : public QWidget {
  Q_OBJECT

 public:
  explicit RunsPanel(QWidget* parent = nullptr);
  ~RunsPanel() override;

  RunTableModel* model() const { return m_model; }
  QSortFilterProxyModel* proxy() const { return m_proxy; }
  QTableView* table() const { return m_table; }
  QString storePath() const { return m_storePath; }
  // The store connection (null while the file cannot be opened).
  RunStore* store() const { return m_store.get(); }
  // The last error shown ("" after a successful reload).
  QString lastError() const { return m_lastError; }
  // "3 runs in FILE (1 shown)".
  QString countText() const;

  QAction* editTagsAction() const { return m_editTagsAction; }
  QAction* deleteAction() const { return m_deleteAction; }
  QAction* logsAction() const { return m_logsAction; }
  QAction* openSpecAction() const { return m_openSpecAction; }
  QAction* replayAction() const { return m_replayAction; }
  QAction* compareAction() const { return m_compareAction; }
  QAction* predictAction() const { return m_predictAction; }

  std::vector<std::int64_t> selectedRunIds() const;
  // Rows the runs table shows at the window's default size.
  static constexpr int kVisibleRows = 8;
  // The panel's height that shows `rows` rows of the table.
  int heightForRows(int rows) const;
  // Puts the keyboard focus into the filter line, its text selected (Runs → Filter Runs).
  void focusFilter();
  QLineEdit* filterEdit() const { return m_filter; }
  // A non-modal dialog with the run's nodes (exit status, CPU, memory) and log lines;
  // null (and the message in lastError()) when the store cannot give them.
  QDialog* showLogs(std::int64_t runId);

  QByteArray headerState() const;
  void restoreHeaderState(const QByteArray& state);

 public Q_SLOTS:
  // Re-reads the run list (or retries opening the store); shows any error.
  void reload();
  // Closes the current store and opens `path` (created when missing).
  void openStore(const QString& path);
  void editTags();
  void deleteRuns();
  void showLogsOfSelection();
  void openSelectedSpec();

 Q_SIGNALS:
  // A run's stored spec, for the designer.
  void specRequested(qint64 runId, const QString& specJson);
  // "Open in Live View": replay the run.
  void replayRequested(qint64 runId);
  // "Compare Selected": the selected runs, in id order.
  void compareRequested(const QList<qint64>& runIds);
  // "Predict Other Strategies on This Cluster…": the selected run.
  void predictRequested(qint64 runId);
  void countTextChanged(const QString& text);
  void statusMessage(const QString& text, int timeoutMs);

 private:
  bool tryOpenStore(bool announceFailure);
  void showError(const QString& message);
  void announce(const QString& title, const QString& message);
  void clearError();
  void updateActions();
  void updateCount();
  void onTimer();
  void onDoubleClicked(const QModelIndex& proxyIndex);

  QString m_storePath;
  QString m_lastError;
  std::unique_ptr<RunStore> m_store;

  RunTableModel* m_model = nullptr;
  QSortFilterProxyModel* m_proxy = nullptr;
  QTableView* m_table = nullptr;
  QLineEdit* m_filter = nullptr;
  QLabel* m_banner = nullptr;
  QTimer* m_reloadTimer = nullptr;
  bool m_columnsSized = false;  // column widths restored or fitted to the first runs

  QAction* m_editTagsAction = nullptr;
  QAction* m_deleteAction = nullptr;
  QAction* m_logsAction = nullptr;
  QAction* m_openSpecAction = nullptr;
  QAction* m_replayAction = nullptr;
  QAction* m_compareAction = nullptr;
  QAction* m_predictAction = nullptr;
};

}  // namespace dasp::ui
