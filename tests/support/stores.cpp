// SPDX-License-Identifier: MIT
#include "tests/support/stores.h"

#include <QtGlobal>

namespace test_support {

std::unique_ptr<dasp::RunStore> openStore(const QString& path) {
  auto store = dasp::RunStore::open(path.toStdString());
  if (!store) qFatal("cannot open %s: %s", qPrintable(path), store.message().c_str());
  return std::move(store).value();
}

dasp::NewRun testRun(const std::string& name, const std::string& strategy, std::int64_t seed) {
  dasp::NewRun run;
  run.kind = "distributed";
  run.name = name;
  run.specJson = R"({"name":")" + name + R"("})";
  run.model = "mlp";
  run.dataset = "fashion-mnist";
  run.strategy = strategy;
  run.recovery = "none";
  run.seed = seed;
  run.codeVersion = "test";
  return run;
}

std::int64_t createRun(dasp::RunStore& store, const dasp::NewRun& run) {
  auto id = store.createRun(run);
  if (!id) qFatal("createRun: %s", id.message().c_str());
  return id.value();
}

}  // namespace test_support
