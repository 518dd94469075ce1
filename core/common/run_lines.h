// SPDX-License-Identifier: MIT
#pragma once
// The lines `dasp` writes on stderr for a parent process that follows it (the workbench's
// sim runs and its prediction), each a prefix and its fields: written and read only
// through these, so the two sides cannot drift apart.
//   dasp-run-created ID           a run is in the store
//   dasp-run-progress DONE TOTAL  runs finished of the plan (before the first, after each)
//   dasp: MESSAGE                 an error
// Threading: constants.

namespace dasp {

inline constexpr char kRunCreatedPrefix[] = "dasp-run-created ";
inline constexpr char kRunProgressPrefix[] = "dasp-run-progress ";
inline constexpr char kErrorPrefix[] = "dasp: ";

}  // namespace dasp
