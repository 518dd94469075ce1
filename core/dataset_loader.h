// SPDX-License-Identifier: MIT
#pragma once
// Loads the train and test sets an ExperimentSpec names (resolved with withDefaults),
// applies its limits and normalisation. The one place that maps dataset names to readers.
// Threading: free function; safe from any thread.

#include "core/dataset.h"
#include "core/spec.h"

namespace dasp {

Result<TrainTest> loadDataset(const v1::DatasetSpec& spec, std::uint64_t seed);

}  // namespace dasp
