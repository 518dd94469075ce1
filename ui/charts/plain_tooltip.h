// SPDX-License-Identifier: MIT
#pragma once
// Shows multi-line plain text (decision reasons, event details) as a tooltip for a
// QEvent::ToolTip, or hides it when `text` is empty. Rich text with pre-wrap keeps the line
// breaks; the text is escaped because decisions contain "->" and reasons may contain '<'.
// Threading: GUI thread.
#include <QEvent>
#include <QHelpEvent>
#include <QString>
#include <QToolTip>
#include <QWidget>

namespace dasp::ui {

inline void showPlainToolTip(QEvent* event, const QString& text, QWidget* owner) {
  auto* help = static_cast<QHelpEvent*>(event);
  if (text.isEmpty()) {
    QToolTip::hideText();
    event->ignore();
    return;
  }
  QToolTip::showText(help->globalPos(),
                     QStringLiteral("<p style='white-space:pre'>") + text.toHtmlEscaped() + QStringLiteral("</p>"),
                     owner);
}

}  // namespace dasp::ui
