// SPDX-License-Identifier: MIT
#pragma once
// When the evaluator takes its next evaluation. Its regular one comes `everyS` after the
// last one ended; but where that one would still be running `beforeS` ahead of a fault the
// spec schedules, the evaluator takes one at that moment instead. The accuracy "before" a
// fault is then that of the version the fault found, not of one an evaluation interval
// older: early in training that interval alone is worth several points, which a jump at
// resume would otherwise be credited with. Pure; any thread.
#include <vector>

namespace dasp {

// How long the evaluator's next pull waits for a new version, at run time `nowS`, when an
// evaluation may take `evalS`; `faultTimesS` ascending (the spec's faults' at_s). A fault
// whose moment (at_s - beforeS) is passed, or less than 50 ms away, is left alone.
double evaluationWaitS(double nowS, double everyS, double evalS, const std::vector<double>& faultTimesS,
                       double beforeS);

}  // namespace dasp
