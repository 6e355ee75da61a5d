// KV-cache decoding: how a causal model generates. The first P tokens (the prompt) go through the
// forward at once; then one token at a time: only its query, key and value rows are projected, its
// key and value are appended to the cache, and its one query row attends to every cached key. The
// outputs equal the full causal forward's (the same options) to float rounding; the cost per step
// grows with t instead of t^2.
#pragma once

#include <cstdint>
#include <vector>

#include "attention/engine.hpp"

namespace mhascope {

struct DecodeStep {
  std::int64_t first = 0, count = 0;  // the token positions this step made: [first, first + count)
  double cacheBytes = 0;              // K and V cached after the step: 2 * B * N * (first + count) * d_k * 4
  double flops = 0;                   // this step's FLOPs with the cache (multiply-add = 2)
  double recomputeFlops = 0;          // a full causal forward over the first + count tokens
};

struct DecodeResult {
  Tensor output;  // (B, T, d_model): the prefill's rows, then one row per step
  Tensor kCache;  // (B, N, T, d_k): the keys as cached (after RoPE)
  Tensor vCache;  // (B, N, T, d_k)
  std::vector<DecodeStep> steps;  // steps[0]: the prefill (P tokens); then T - P single tokens
};

// A decode in progress, for a stepper that shows each token's step: startDecode runs the prefill
// (result holds rows [0, P) and steps[0]); each decodeNext appends one token's row to the output and
// the caches and one DecodeStep. The tensors are sized for all T tokens; rows at or past `length`
// are not made yet.
struct DecodeSession {
  DecodeResult result;
  std::int64_t length = 0;  // tokens decoded so far: P after the prefill, + 1 per decodeNext
  // (B, h, length): the newest query row's weights against the cache (after the prefill, query
  // P - 1's row of the prefill's table) — the one row a step computes.
  Tensor lastWeights;
  AttentionOptions options;  // the options in use (the causal mask set)
};

// The prefill of decode(): the same checks and refusals, then the first P tokens through the
// forward at once.
Result<DecodeSession> startDecode(const AttentionInputs& in, const MhaWeights& w, const AttentionOptions& opt,
                                  std::int64_t prefill);
// One token more: position s.length of `in` (the inputs and weights startDecode had) is projected,
// rotated, appended to the cache, and its query row attends to the cached keys. An error once every
// token is decoded.
Status decodeNext(DecodeSession& s, const AttentionInputs& in, const MhaWeights& w);

// Self-attention with a causal mask (opt.causal is taken as true whatever it says); the key padding
// mask, N K/V heads, RoPE, ALiBi, the window, sinks and the learned sink as in forward(). 1 <= prefill <= T. Refused:
// cross-attention, an attention mask file, hand-set scores (they are made for the whole table).
Result<DecodeResult> decode(const AttentionInputs& in, const MhaWeights& w, const AttentionOptions& opt,
                            std::int64_t prefill);

}  // namespace mhascope
