// SPDX-License-Identifier: MIT
// `dasp tables [--check] [--root DIR]`: regenerates every results table in README.md and
// docs/*.md from the committed results/ files (JSON Lines of `dasp run --json`). A table
// is a block
//   <!-- dasp-tables suite results/matrix-sim/hetero-4.jsonl -->
//   <!-- dasp-tables matrix NAME=FILE NAME=FILE ... -->
//   <!-- dasp-tables diagnosis NAME=FILE NAME=FILE ... -->
//   <!-- dasp-tables validation REAL.jsonl SIM.jsonl -->
//   <!-- dasp-tables prediction REAL.jsonl PREDICTED.jsonl MEASURED.jsonl -->
//   <!-- dasp-tables recovery FILE FILE ... -->  (the fault drills' recovery table; NAME=FILE
//                                                   for a table of cases)
//   <!-- dasp-tables paper PAPER.jsonl TWO-KILLS.jsonl -->  (the two-kill suite against
//                                                   'Training Through Failure')
//   <!-- dasp-tables setup-timings results/fresh-clone/timings.jsonl -->
//   ... generated ...
//   <!-- /dasp-tables -->
// with paths relative to the root. --check changes nothing and exits 1 when a table differs
// from what the results give (the CI test `docs.tables`).
#include "app/cli/cli.h"

#include "core/results/paper_table.h"
#include "core/results/results_table.h"

#include <algorithm>
#include <filesystem>
#include <memory>
#include <fstream>
#include <iostream>
#include <sstream>

namespace dasp::cli {
namespace {

namespace fs = std::filesystem;

Result<std::string> readText(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::error(path.string() + ": cannot read");
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

Result<std::vector<v1::RunResult>> loadResults(const fs::path& root, const std::string& file) {
  auto text = readText(root / file);
  if (!text) return text.status();
  return parseResultLines(text.value(), file);
}

// Every file of `args`, in order.
Result<std::vector<std::vector<v1::RunResult>>> loadEach(const fs::path& root, const std::vector<std::string>& args) {
  std::vector<std::vector<v1::RunResult>> files;
  for (const auto& a : args) {
    auto runs = loadResults(root, a);
    if (!runs) return runs.status();
    files.push_back(std::move(runs).value());
  }
  return files;
}

Result<std::string> generate(const fs::path& root, const std::string& kind, const std::vector<std::string>& args) {
  if (kind == "suite") {
    if (args.size() != 1) return Status::error("suite needs one results file");
    auto runs = loadResults(root, args[0]);
    if (!runs) return runs.status();
    return suiteTableMarkdown(runs.value());
  }
  if (kind == "matrix" || kind == "diagnosis" || kind == "shards") {
    std::vector<MatrixCase> cases;
    for (const auto& a : args) {
      const auto eq = a.find('=');
      if (eq == std::string::npos) return Status::error(kind + ": expected NAME=FILE, got '" + a + "'");
      auto runs = loadResults(root, a.substr(eq + 1));
      if (!runs) return runs.status();
      cases.push_back({a.substr(0, eq), std::move(runs).value()});
    }
    if (kind == "shards") return shardsTableMarkdown(cases);
    return kind == "matrix" ? matrixTableMarkdown(cases) : diagnosisTableMarkdown(cases);
  }
  if (kind == "validation") {
    if (args.size() != 2) return Status::error("validation needs REAL.jsonl SIM.jsonl");
    auto real = loadResults(root, args[0]);
    if (!real) return real.status();
    auto sim = loadResults(root, args[1]);
    if (!sim) return sim.status();
    return validationTableMarkdown(real.value(), sim.value());
  }
  if (kind == "prediction") {
    if (args.size() != 3) return Status::error("prediction needs REAL.jsonl PREDICTED.jsonl MEASURED.jsonl");
    auto files = loadEach(root, args);
    if (!files) return files.status();
    return predictionTableMarkdown(files.value()[0], files.value()[1], files.value()[2]);
  }
  if (kind == "recovery") {
    if (args.empty()) return Status::error("recovery needs one or more results files");
    std::vector<RunFaults> all;
    for (const auto& a : args) {
      // FILE, or NAME=FILE: a case of several (the table's first column).
      const auto eq = a.find('=');
      const std::string file = eq == std::string::npos ? a : a.substr(eq + 1);
      auto runs = loadResults(root, file);
      if (!runs) return runs.status();
      auto faults = runFaultsOf(runs.value());
      for (auto& f : faults) f.caseName = eq == std::string::npos ? std::string() : a.substr(0, eq);
      all.insert(all.end(), faults.begin(), faults.end());
    }
    return recoveryTableMarkdown(all);
  }
  if (kind == "paper") {
    if (args.size() != 2) return Status::error("paper needs PAPER.jsonl TWO-KILLS.jsonl");
    auto files = loadEach(root, args);
    if (!files) return files.status();
    return paperComparisonMarkdown(files.value()[0], files.value()[1]);
  }
  if (kind == "setup-timings") {
    if (args.size() != 1) return Status::error("setup-timings needs one timings file");
    auto text = readText(root / args[0]);
    if (!text) return text.status();
    auto timings = parseSetupTimingLines(text.value(), args[0]);
    if (!timings) return timings.status();
    return setupTimingTableMarkdown(timings.value());
  }
  return Status::error("unknown table kind '" + kind +
                       "' (known: suite, matrix, diagnosis, shards, validation, prediction, recovery, paper, setup-timings)");
}

int tablesCommand(const fs::path& root, bool check) {
  std::vector<fs::path> docs{root / "README.md"};
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root / "docs", ec)) {
    if (entry.path().extension() == ".md") docs.push_back(entry.path());
  }
  std::sort(docs.begin() + 1, docs.end());
  int stale = 0;
  for (const auto& doc : docs) {
    auto text = readText(doc);
    if (!text) return fail(text.message());
    auto regenerated = regenerateBlocks(text.value(), [&](const std::string& kind, const std::vector<std::string>& a) {
      return generate(root, kind, a);
    });
    if (!regenerated) return fail(doc.string() + ": " + regenerated.message());
    if (regenerated.value() == text.value()) continue;
    ++stale;
    if (check) {
      std::cerr << "dasp: " << fs::relative(doc, root).string()
                << ": its tables differ from what results/ gives (run `dasp tables` to regenerate them)\n";
      continue;
    }
    std::ofstream out(doc, std::ios::binary | std::ios::trunc);
    out << regenerated.value();
    if (!out) return fail(doc.string() + ": cannot write", 1);
    std::cout << "regenerated " << fs::relative(doc, root).string() << "\n";
  }
  if (check && stale > 0) return 1;
  if (check) std::cout << "tables: " << docs.size() << " files match results/\n";
  return 0;
}

}  // namespace

void addTablesCommand(CLI::App& dasp, int& exitCode) {
  struct Flags {
    std::string root = ".";
    bool check = false;
  };
  auto flags = std::make_shared<Flags>();
  auto* tables = dasp.add_subcommand(
      "tables", "regenerate the results tables of README.md and docs/*.md from results/: each block marked with a "
                "dasp-tables comment (docs/EXPERIMENTS.md, \"Measured experiments\")");
  tables->add_flag("--check", flags->check, "change nothing; exit 1 when a table differs from what results/ gives");
  tables->add_option("--root", flags->root, "the project's root")->capture_default_str()->check(CLI::ExistingDirectory);
  tables->callback([flags, &exitCode] { exitCode = tablesCommand(flags->root, flags->check); });
}

}  // namespace dasp::cli
