// SPDX-License-Identifier: MIT
#pragma once
// Test support: run stores with runs in them. Failures are fatal (qFatal): a fixture that
// cannot be made is no test. Threading: the test's thread.

#include "core/store/run_store.h"

#include <QString>

#include <cstdint>
#include <memory>
#include <string>

namespace test_support {

std::unique_ptr<dasp::RunStore> openStore(const QString& path);

// A distributed mlp run on fashion-mnist with `strategy`, seed `seed`, code version
// "test"; callers change what their test is about (spec JSON, engine, recovery, tags).
dasp::NewRun testRun(const std::string& name, const std::string& strategy = "bsp", std::int64_t seed = 1);

// Creates `run` in `store`; its id.
std::int64_t createRun(dasp::RunStore& store, const dasp::NewRun& run);

}  // namespace test_support
