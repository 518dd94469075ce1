// SPDX-License-Identifier: MIT
#pragma once
// GettingStarted: Help → Getting Started, the first experiment in four steps (design,
// launch, watch, compare and export). The shortcuts it names are read from the window's
// own actions, so the page says what the menus do.
// Threading: GUI thread only.

#include <QDialog>

class QAction;
class QTextBrowser;

namespace dasp::ui {

class GettingStarted : public QDialog {
  Q_OBJECT

 public:
  struct Actions {
    QAction* launch = nullptr;
    QAction* stop = nullptr;
    QAction* compare = nullptr;
    QAction* exportReport = nullptr;
    QAction* filter = nullptr;
  };
  GettingStarted(const Actions& actions, QWidget* parent = nullptr);

  QTextBrowser* page() const { return m_page; }
  // The page's HTML for these actions.
  static QString html(const Actions& actions);

 private:
  QTextBrowser* m_page = nullptr;
};

}  // namespace dasp::ui
