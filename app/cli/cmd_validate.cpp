// SPDX-License-Identifier: MIT
// `dasp validate SPEC.json [--set path=value]... [--print]`: checks a spec, prints it
// resolved with every default when asked.
#include "app/cli/cli.h"

#include <iostream>

namespace dasp::cli {

int cmdValidate(int argc, char** argv) {
  Args args(argc, argv, 2, {"--print"});
  if (args.positional().size() != 1) return fail("usage: dasp validate SPEC.json [--set path=value]... [--print]");
  auto known = specFlags();
  known.push_back("--print");
  if (auto u = args.unknown(known); !u.empty()) return fail("unknown option " + u.front());
  auto spec = specFromArgs(args, args.positional().front());
  if (!spec) return fail(spec.message());
  if (args.has("--print")) {
    std::cout << specToJson(spec.value()) << "\n";
  } else {
    std::cout << args.positional().front() << ": ok\n";
  }
  return 0;
}

}  // namespace dasp::cli
