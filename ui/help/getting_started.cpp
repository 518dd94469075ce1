// SPDX-License-Identifier: MIT
#include "ui/help/getting_started.h"

#include <QAction>
#include <QDialogButtonBox>
#include <QKeySequence>
#include <QTextBrowser>
#include <QVBoxLayout>

namespace dasp::ui {

namespace {

// "Launch (Ctrl+R)" as the menu shows the action.
QString named(const QAction* a) {
  if (a == nullptr) return {};
  QString text = a->text();
  text.remove(QLatin1Char('&'));
  text.remove(QStringLiteral("…"));
  const QString keys = a->shortcut().toString(QKeySequence::NativeText);
  return keys.isEmpty() ? QStringLiteral("<b>%1</b>").arg(text.toHtmlEscaped())
                        : QStringLiteral("<b>%1</b> (%2)").arg(text.toHtmlEscaped(), keys.toHtmlEscaped());
}

}  // namespace

GettingStarted::GettingStarted(const Actions& actions, QWidget* parent) : QDialog(parent) {
  setObjectName(QStringLiteral("gettingStarted"));
  setWindowTitle(tr("Getting Started"));
  auto* layout = new QVBoxLayout(this);
  m_page = new QTextBrowser(this);
  m_page->setObjectName(QStringLiteral("gettingStartedPage"));
  m_page->setHtml(html(actions));
  layout->addWidget(m_page, 1);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::close);
  layout->addWidget(buttons);
  resize(640, 520);
}

QString GettingStarted::html(const Actions& a) {
  return tr("<h2>Your first experiment in four steps</h2>"
            "<ol>"
            "<li><p><b>Design.</b> The Designer dock holds an experiment: pick a preset (hetero-4: four workers "
            "with slowdowns 1, 1, 2, 4) or edit the form — model, data, the cluster table (one row per worker), "
            "the strategy and its knobs, the stop condition. Hover a field for what it means and its default. "
            "<b>Check</b> validates it with the CLI's messages.</p></li>"
            "<li><p><b>Launch.</b> %1 runs it (a suite: every entry and seed in turn); %2 ends it, every node "
            "shut down and the run recorded as stopped.</p></li>"
            "<li><p><b>Watch.</b> The Live dock shows one lane per node (compute, push, wait, pull; the "
            "SYNC/ASYNC strip above, triangles where the policy changed something), the test accuracy, and per "
            "node the wait, staleness, throughput and straggler score (red: the straggler). Hover or click a chart "
            "to move one time cursor over all of them.</p></li>"
            "<li><p><b>Compare and export.</b> The Runs dock lists every run in the store (%3 filters it); select "
            "several and %4 overlays their curves with a summary table; %5 writes a report of them.</p></li>"
            "</ol>")
      .arg(named(a.launch), named(a.stop), named(a.filter), named(a.compare), named(a.exportReport));
}

}  // namespace dasp::ui
