// SPDX-License-Identifier: MIT
#pragma once
// The workbench's compiled-in resources: the icons of workbench.qrc under :/icons and the
// presets of experiments/ under :/presets (the fallback of an installed workbench).
// Threading: call initResources() once on the main thread before the first QIcon.

#include <QString>

namespace dasp::resources {

// Registers the resources (idempotent).
void initResources();

// The embedded presets folder, ":/presets".
QString embeddedPresetsDir();

}  // namespace dasp::resources
