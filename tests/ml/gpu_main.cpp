// SPDX-License-Identifier: MIT
// The `gpu` tests as a plain program, for the Qt-free build of a GPU host that has no
// Qt 6 Test (DASP_BUILD_GUI=OFF; tools/gpu-check.sh). The same checks as tst_gpu.cpp.
// Exit status: 0 all passed (some may be skipped), 1 one failed, 77 all skipped.
#include "tests/ml/gpu_checks.h"

#include <cstdio>

int main() {
  using dasp::gputest::Outcome;
  int passed = 0, skipped = 0, failed = 0;
  for (const auto& check : dasp::gputest::allChecks()) {
    const Outcome o = check.run();
    switch (o.kind) {
      case Outcome::Pass:
        ++passed;
        std::printf("PASS   : %s\n", check.name.c_str());
        break;
      case Outcome::Skip:
        ++skipped;
        // The tag of tests/support/skips.h (DASP_SKIP_TAG_NO_GPU): ./test.sh allows this skip.
        std::printf("SKIP   : %s [allowed-skip:no-gpu] %s\n", check.name.c_str(), o.message.c_str());
        break;
      case Outcome::Fail:
        ++failed;
        std::printf("FAIL!  : %s %s\n", check.name.c_str(), o.message.c_str());
        break;
    }
  }
  std::printf("Totals: %d passed, %d failed, %d skipped\n", passed, failed, skipped);
  if (failed > 0) return 1;
  return passed == 0 ? 77 : 0;
}
