// SPDX-License-Identifier: MIT
// `dasp runs [--db FILE] [--strategy S] [--status S] [--tag T] [--limit N] [--json]`
#include "app/cli/cli.h"

#include "core/run_store.h"

#include <cstdio>
#include <ctime>
#include <iostream>

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

}  // namespace

int cmdRuns(int argc, char** argv) {
  Args args(argc, argv, 2, {"--json", "--help"});
  const char* usage = "usage: dasp runs [--db FILE] [--strategy S] [--status S] [--tag T] [--limit N] [--json]\n";
  if (args.has("--help")) {
    std::cout << usage;
    return 0;
  }
  if (auto u = args.unknown({"--db", "--strategy", "--status", "--tag", "--limit", "--json", "--help"});
      !u.empty()) {
    return fail("unknown option " + u.front() + "\n" + usage);
  }
  if (!args.missingValue().empty()) return fail(args.missingValue() + " needs a value");
  const std::string dbPath = args.value("--db").value_or(defaultStorePath());
  auto store = RunStore::open(dbPath);
  if (!store) return fail(store.message());
  RunFilter filter;
  filter.strategy = args.value("--strategy").value_or("");
  filter.status = args.value("--status").value_or("");
  filter.tag = args.value("--tag").value_or("");
  if (auto limit = args.value("--limit")) {
    try {
      filter.limit = std::stoi(*limit);
    } catch (const std::exception&) {
      return fail("--limit " + *limit + ": not a number");
    }
  }
  auto runs = store.value()->listRuns(filter);
  if (!runs) return fail(runs.message(), 1);

  if (args.has("--json")) {
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

}  // namespace dasp::cli
