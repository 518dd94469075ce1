// SPDX-License-Identifier: MIT
#pragma once
// MainWindow: the workbench's top-level window. For now it shows the runs of one run
// store in a sortable, filterable table (tags and notes editable, runs deletable), reloads
// the list every 2 s while visible so runs written by the CLI appear, and carries the
// menu structure the later views plug into.
//
// A store that cannot be opened (not SQLite, a newer schema, locked) never stops the
// window: it opens with an empty table, the error in a banner above the table, the status
// bar and a non-blocking message box, and the periodic reload retries the file (a new
// message box only when the error changes).
//
// Threading: GUI thread only. It owns its RunStore connection, used on that thread.

#include "core/run_store.h"

#include <QMainWindow>
#include <QString>

#include <cstdint>
#include <memory>
#include <vector>

class QAction;
class QCloseEvent;
class QLabel;
class QLineEdit;
class QSortFilterProxyModel;
class QTableView;
class QTimer;

namespace dasp::ui {

class RunTableModel;

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  explicit MainWindow(const QString& storePath, QWidget* parent = nullptr);
  ~MainWindow() override;

  // For tests and the later views.
  RunTableModel* runModel() const { return m_model; }
  QSortFilterProxyModel* proxyModel() const { return m_proxy; }
  QTableView* runTable() const { return m_table; }
  QString storePath() const { return m_storePath; }
  // The last error shown to the user ("" after a successful reload).
  QString lastError() const { return m_lastError; }

 public Q_SLOTS:
  // Re-reads the run list (or retries opening the store); shows any error.
  void reload();
  // Closes the current store and opens `path` (created when missing).
  void openStore(const QString& path);

 protected:
  void closeEvent(QCloseEvent* event) override;

 private:
  void createMenus();
  void createCentralWidget();
  bool tryOpenStore(bool announceFailure);
  void showError(const QString& message);
  // A non-blocking warning box (open(), deleted on close).
  void announce(const QString& title, const QString& message);
  void clearError();
  void updateActions();
  void updateCountLabel();
  void onTimer();
  void chooseStore();
  void editTags();
  void deleteRuns();
  void showAbout();
  std::vector<std::int64_t> selectedRunIds() const;
  void restoreSettings();
  void saveSettings() const;

  QString m_storePath;
  QString m_lastError;
  std::unique_ptr<RunStore> m_store;

  RunTableModel* m_model = nullptr;
  QSortFilterProxyModel* m_proxy = nullptr;
  QTableView* m_table = nullptr;
  QLineEdit* m_filter = nullptr;
  QLabel* m_banner = nullptr;
  QLabel* m_countLabel = nullptr;
  QTimer* m_reloadTimer = nullptr;
  bool m_columnsSized = false;  // column widths restored or fitted to the first runs

  QAction* m_editTagsAction = nullptr;
  QAction* m_deleteAction = nullptr;
  QAction* m_statusBarAction = nullptr;
};

}  // namespace dasp::ui
