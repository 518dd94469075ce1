// SPDX-License-Identifier: MIT
// `dasp validate SPEC.json [--set path=value]... [--print]`: checks a spec, prints it
// resolved with every default when asked.
#include "app/cli/cli.h"

#include <iostream>
#include <memory>

namespace dasp::cli {

void addValidateCommand(CLI::App& dasp, int& exitCode) {
  struct Flags {
    std::string specPath;
    SpecFlags spec;
    bool print = false;
  };
  auto flags = std::make_shared<Flags>();
  auto* validate = dasp.add_subcommand("validate", "check a spec (--print shows it with every default)");
  validate->add_option("spec", flags->specPath, "the experiment spec (JSON)")->required();
  addSpecFlags(*validate, flags->spec);
  validate->add_flag("--print", flags->print, "print the spec resolved with every default");
  validate->callback([flags, &exitCode] {
    auto spec = specFromFlags(flags->spec, flags->specPath);
    if (!spec) {
      exitCode = fail(spec.message());
      return;
    }
    for (const auto& w : specWarnings(spec.value())) {
      std::cerr << "dasp: warning: " << flags->specPath << ": " << w << "\n";
    }
    if (flags->print) {
      std::cout << specToJson(spec.value()) << "\n";
    } else {
      std::cout << flags->specPath << ": ok\n";
    }
    exitCode = 0;
  });
}

}  // namespace dasp::cli
