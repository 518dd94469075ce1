// SPDX-License-Identifier: MIT
#pragma once
// Internal to validateSpec (core/spec/spec_validate*.cpp): the checks of one part of a
// spec, each returning the first problem with its field's path.

#include "core/common/result.h"
#include "core/spec/spec.h"

namespace dasp::spec_validate {

// The recovery mode and every suite entry's (recovery.*).
Status validateRecoveries(const ExperimentSpec& spec);
// The fault drills (faults[*]): nodes of this run, times, actions.
Status validateFaults(const ExperimentSpec& spec);

}  // namespace dasp::spec_validate
