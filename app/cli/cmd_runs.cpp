// SPDX-License-Identifier: MIT
// `dasp runs [--db FILE] [--strategy S] [--status S] [--tag T] [--limit N] [--json]`: the store's runs.
#include "app/cli/cli.h"

#include "core/store/run_store.h"

#include <cstdio>
#include <ctime>
#include <iostream>
#include <memory>

namespace dasp::cli {
namespace {

std::string localTime(double unixSeconds) {
  const std::time_t t = static_cast<std::time_t>(unixSeconds);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

int runsCommand(const std::string& dbPath, const RunFilter& filter, bool json) {
  auto store = RunStore::open(dbPath);
  if (!store) return fail(store.message());
  auto runs = store.value()->listRuns(filter);
  if (!runs) return fail(runs.message(), 1);

  if (json) {
    for (const auto& r : runs.value()) {
      std::cout << "{\"run_id\":" << r.id << ",\"kind\":" << jsonString(r.kind)
                << ",\"name\":" << jsonString(r.name) << ",\"model\":" << jsonString(r.model)
                << ",\"dataset\":" << jsonString(r.dataset) << ",\"strategy\":" << jsonString(r.strategy)
                << ",\"recovery\":" << jsonString(r.recovery) << ",\"engine\":" << jsonString(r.engine)
                << ",\"seed\":" << r.seed << ",\"status\":" << jsonString(toString(r.status))
                << ",\"host\":" << jsonString(r.host) << ",\"started_at\":" << jsonNumber(r.startedAt)
                << ",\"ended_at\":" << (r.endedAt ? jsonNumber(*r.endedAt) : "null")
                << ",\"tags\":" << jsonString(r.tags) << ",\"code_version\":" << jsonString(r.codeVersion)
                << "}\n";
    }
    return 0;
  }
  std::printf("%-6s %-20s %-12s %-8s %-14s %-9s %5s %-12s %s\n", "RUN", "STARTED", "NAME", "KIND",
              "MODEL", "STRATEGY", "SEED", "STATUS", "TAGS");
  for (const auto& r : runs.value()) {
    std::printf("%-6lld %-20s %-12.12s %-8s %-14.14s %-9s %5lld %-12s %s\n", static_cast<long long>(r.id),
                localTime(r.startedAt).c_str(), r.name.c_str(), r.kind.c_str(), r.model.c_str(),
                r.strategy.empty() ? "-" : r.strategy.c_str(), static_cast<long long>(r.seed),
                toString(r.status), r.tags.c_str());
  }
  std::printf("%zu run(s) in %s\n", runs->size(), dbPath.c_str());
  return 0;
}

}  // namespace

void addRunsCommand(CLI::App& dasp, int& exitCode) {
  struct Flags {
    std::string db = defaultStorePath();
    RunFilter filter;
    bool json = false;
  };
  auto flags = std::make_shared<Flags>();
  auto* runs = dasp.add_subcommand("runs", "list the runs in the store, newest first");
  runs->add_option("--db", flags->db, "the run store (SQLite)")->capture_default_str();
  runs->add_option("--strategy", flags->filter.strategy, "only runs of this strategy");
  runs->add_option("--status", flags->filter.status, "only runs with this status")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            return runStatusFromString(text) ? std::string() : "'" + text + "' is not a run status";
          },
          "", "run-status"));
  runs->add_option("--tag", flags->filter.tag, "only runs with this tag");
  runs->add_option("--limit", flags->filter.limit, "at most this many runs")->check(integerIn(1, 1 << 30));
  runs->add_flag("--json", flags->json, "one JSON object per run");
  runs->callback([flags, &exitCode] { exitCode = runsCommand(flags->db, flags->filter, flags->json); });
}

}  // namespace dasp::cli
