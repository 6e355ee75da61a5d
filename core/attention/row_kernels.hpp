// The attention's per-row kernels: scale + mask in one pass, softmax, and the copy that writes a
// recorded table without reading it first (non-temporal stores). The forward (engine.cpp) runs
// them on one query row at a time while the row's scores are in cache.
#pragma once

#include <cstdint>

namespace mhascope {

// One row of n scores s: scaled[k] = s[k] * factor; masked[k] = -inf where blocked[k] (blocked may
// be null: nothing blocked, and masked may then be null too: it would equal scaled). Returns the
// maximum of the masked row (-inf when every key is blocked). scaled/masked may not alias s.
float scaleMaskRow(const float* s, float factor, const std::uint8_t* blocked, float* scaled, float* masked,
                   std::int64_t n);

// One row: out = softmax(x) over n keys, m = max of x (for stability; it cancels). allBlocked: out
// = 0 and returns false (a fully masked row gets weights 0, not 0/0 = NaN). m = -inf with keys
// visible (every visible score overflowed): out = NaN, like PyTorch. Blocked keys get exactly 0.
// out may alias x.
bool softmaxRow(const float* x, float m, const std::uint8_t* blocked, bool allBlocked, float* out, std::int64_t n);

// dst[0, n) = src[0, n), with non-temporal (streaming) stores where the CPU has them: the
// destination's cache lines are neither read first nor kept, so writing a big recorded table costs
// one pass over memory instead of two and does not push the working rows out of cache. Call
// streamFence() before another thread reads what was written.
void streamCopy(float* dst, const float* src, std::int64_t n);
void streamFence();

}  // namespace mhascope
