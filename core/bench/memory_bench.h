// SPDX-License-Identifier: MIT
#pragma once
// The memory-bound anchors of `dasp bench ps`: a memcpy of the payload, and the server's
// apply step (ParameterStore::apply, the fused SGD-momentum pass) over the same number of
// floats. Both over buffers allocated and touched once before timing (a page fault costs
// ~11 µs, and first touches would be most of a cold pass).
// Threading: free functions over their own buffers; safe from any thread.

#include <cstdint>

namespace dasp {

struct MemoryBench {
  std::int64_t floats = 0;
  int rounds = 0;
  double seconds = 0;  // the median round
  double gbps = 0;     // bytes (as each function says) ÷ seconds ÷ 1e9
};

// memcpy of `floats` floats: the payload's bytes ÷ seconds, as push+pull rates count them.
MemoryBench benchMemcpy(std::int64_t floats, int rounds);
// ParameterStore::apply of one gradient over `floats` parameters with momentum and weight
// decay, on `threads` threads: the gradient read, θ and v read and written, 20 bytes per float.
MemoryBench benchApply(std::int64_t floats, int rounds, int threads = 1);

}  // namespace dasp
