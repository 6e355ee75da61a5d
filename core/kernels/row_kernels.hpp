// The attention's per-row kernels: scale + mask in one pass, then the softmax. The forward
// (engine.cpp) runs them on one query row at a time while the row's scores are in cache.
#pragma once

#include <cstdint>
#include <limits>

namespace mhascope {

// A row's blocked keys: every key at or after `from` (none when from >= the row's length) and,
// when `bytes` is not null, every key j with bytes[j] != 0. The engine gives a row whose blocked
// keys are one run to its end (the causal mask, padding of the last keys, or both) as `from`
// alone, so the kernels compute which lanes are blocked instead of reading a byte per key; any
// other mask as bytes.
struct BlockedKeys {
  const std::uint8_t* bytes = nullptr;
  std::int64_t from = std::numeric_limits<std::int64_t>::max();
  bool any() const { return bytes != nullptr || from != std::numeric_limits<std::int64_t>::max(); }
  bool at(std::int64_t j) const { return j >= from || (bytes != nullptr && bytes[j] != 0); }
};

// One row of n scores s: scaled[k] = s[k] * factor; masked[k] = -inf where blocked[k] (blocked may
// be null: nothing blocked, and masked may then be null: not written). Returns the maximum of the masked row
// (-inf when every key is blocked). Element-wise, so scaled and masked may be s itself.
float scaleMaskRow(const float* s, float factor, const std::uint8_t* blocked, float* scaled, float* masked,
                   std::int64_t n);
// The same with the row's blocked keys as the kernels take them (a run to the row's end and/or
// bytes): the same numbers as the bytes of those keys give.
float scaleMaskRow(const float* s, float factor, const BlockedKeys& blocked, float* scaled, float* masked,
                   std::int64_t n);

// One row: out = softmax(x) over n keys, m = max of x (for stability; it cancels). allBlocked: out
// = 0 and returns false (a fully masked row gets weights 0, not 0/0 = NaN). m = -inf with keys
// visible (every visible score overflowed): out = NaN, like PyTorch. Blocked keys get exactly 0;
// x must hold -inf there (what the masking wrote). out may alias x.
bool softmaxRow(const float* x, float m, const BlockedKeys& blocked, bool allBlocked, float* out, std::int64_t n);
// The same row with a learned sink (gpt-oss): one more logit s joins the softmax as an extra column and is then
// dropped, out[k] = exp(x[k]) / (exp(s) + sum_j exp(x[j])), so the row sums to less than 1. Returns the sink's
// share exp(s) / (exp(s) + sum_j exp(x[j])) = 1 - sum_k out[k]. A row whose keys are all blocked (or whose
// visible scores are all -inf) puts everything on the sink: out = 0, share 1 (0 when s = -inf: no sink at all).
// s = -inf gives softmaxRow's numbers wherever a key is visible.
float softmaxRowWithSink(const float* x, float m, const BlockedKeys& blocked, bool allBlocked, float sink, float* out,
                         std::int64_t n);

}  // namespace mhascope
