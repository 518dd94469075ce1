// SPDX-License-Identifier: MIT
#pragma once
// The colour of the i-th curve (a run, or a group of runs) in the convergence charts, and
// of the same group's time-to-target bar, so that a strategy reads in one colour across
// them: Okabe-Ito, without its yellow (too pale for a thin line on white).
// Threading: a plain function; any thread.

#include <QColor>

#include <cstddef>

namespace dasp::ui {

inline QColor seriesColor(int i) {
  static const QColor colors[] = {QColor(0x00, 0x72, 0xB2), QColor(0xD5, 0x5E, 0x00), QColor(0x00, 0x9E, 0x73),
                                  QColor(0xCC, 0x79, 0xA7), QColor(0xE6, 0x9F, 0x00), QColor(0x56, 0xB4, 0xE9),
                                  QColor(0x00, 0x00, 0x00)};
  return colors[static_cast<std::size_t>(i) % (sizeof colors / sizeof colors[0])];
}

}  // namespace dasp::ui
