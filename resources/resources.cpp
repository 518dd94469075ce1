// SPDX-License-Identifier: MIT
#include "resources/resources.h"

#include <QtGlobal>

// Q_INIT_RESOURCE must be used outside a namespace.
static void registerCompiledResources() {
  Q_INIT_RESOURCE(workbench);
}

namespace dasp::resources {

void initResources() {
  static const bool once = [] {
    registerCompiledResources();
    return true;
  }();
  (void)once;
}

QString embeddedPresetsDir() { return QStringLiteral(":/presets"); }

}  // namespace dasp::resources
