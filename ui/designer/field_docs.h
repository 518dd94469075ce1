// SPDX-License-Identifier: MIT
#pragma once
// FieldDocs: the comment that documents each ExperimentSpec field in
// proto/dasp/v1/experiment.proto, for the designer's tooltips. protoc writes the proto's
// descriptor with its source comments at build time (ui/CMakeLists.txt), and it is
// compiled in; this reads it, so a tooltip is always the proto's own comment and cannot
// drift from it.
// Threading: any thread (the descriptors are built once, on first use, thread-safely).

#include <QString>

#include <string>

namespace dasp::ui {

// The comment of the field at `path` ("strategy.dasp.rule", "cluster.nodes.slowdown"),
// with the comment lines joined into one paragraph; "" when the path names no field or
// the field has no comment.
QString fieldDoc(const std::string& path);
// The designer's tooltip of the field at `path`: the path in bold over its comment (rich
// text, so Qt wraps it).
QString fieldToolTip(const std::string& path);

}  // namespace dasp::ui
