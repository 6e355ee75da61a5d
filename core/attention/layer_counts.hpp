// One attention layer's counts from its sizes alone: the parameters of each matrix and in total,
// the FLOPs of its projections and of its attention matmuls, its score memory and its KV-cache bytes
// per token. Every such number the app prints — the Params, Cost and GQA lessons, the quiz, the
// status line, `mhascope info` — comes from layerCounts(), so no two of them can disagree.
// Pure core: std only.
#pragma once

#include <cstdint>
#include <string>

namespace mhascope {

struct Trace;

// What an attention layer's counts depend on.
struct LayerSizes {
  std::int64_t dModel = 0;   // d_model
  std::int64_t heads = 0;    // h query heads
  std::int64_t kvHeads = 0;  // N K/V heads; 0 means N = h (multi-head attention)
  std::int64_t dk = 0;       // d_k per head; 0 means d_model / h
  bool bias = true;          // b_q, b_k, b_v, b_o
};
// The sizes the trace's pass used (its N, d_k and biases).
LayerSizes layerSizesOf(const Trace& t);

// FLOPs of one forward (multiply-add = 2): projections and attention separately.
struct FlopCount {
  double projections = 0;  // Q, K, V and output projections
  double attention = 0;    // Q K^T and A V
  double total() const { return projections + attention; }
};

struct LayerCounts {
  std::int64_t dModel = 0, heads = 0, kvHeads = 0, dk = 0;  // N and d_k filled in
  bool bias = true;
  // Entries of the weight matrices, (in, out) as the app stores them: W_q (d_model, h·d_k),
  // W_k and W_v (d_model, N·d_k), W_o (h·d_k, d_model). Fewer K/V heads shrink W_k and W_v only.
  std::int64_t wq = 0, wk = 0, wv = 0, wo = 0;
  // Bias entries, one per output feature: h·d_k, N·d_k, N·d_k, d_model (counted whether or not
  // the layer has them; params() says what it holds).
  std::int64_t bq = 0, bk = 0, bv = 0, bo = 0;
  std::int64_t weights() const { return wq + wk + wv + wo; }
  std::int64_t biases() const { return bq + bk + bv + bo; }
  std::int64_t withBias() const { return weights() + biases(); }
  std::int64_t params() const { return bias ? withBias() : weights(); }  // what the layer holds

  // One forward over B batch items, T_q queries and T_k keys: every query token goes through W_q
  // and W_o (2·d_model·h·d_k FLOPs each), every key token through W_k and W_v (2·d_model·N·d_k
  // each); Q K^T and A V cost 2·B·h·T_q·T_k·d_k each. Biases add no multiplies and are left out.
  FlopCount flops(std::int64_t batch, std::int64_t tq, std::int64_t tk) const;
  // B·h·T_q·T_k: how many scores scale, mask, exp and softmax each touch.
  std::int64_t scoreCount(std::int64_t batch, std::int64_t tq, std::int64_t tk) const;
  double scoreBytes(std::int64_t batch, std::int64_t tq, std::int64_t tk) const;  // one float table of them
  // 2 (K and V) · N · d_k · bytesPerNumber: what a decoder's cache grows by per token in this layer.
  std::int64_t kvCacheBytesPerToken(int bytesPerNumber = 4) const;
  // One sequence of `tokens` through `layers` such layers: the cache exists in every layer, so
  // layers · tokens · kvCacheBytesPerToken(bytesPerNumber).
  std::int64_t kvCacheBytesPerSequence(std::int64_t layers, std::int64_t tokens, int bytesPerNumber = 4) const {
    return layers * tokens * kvCacheBytesPerToken(bytesPerNumber);
  }
};
// The one function. The sizes must be valid (d_model, h >= 1; N >= 1 dividing h or 0): the
// callers hold a computed trace or have checked them (parameterTable in model.hpp does).
LayerCounts layerCounts(const LayerSizes& s);

// The formula of params() in the symbols, e.g. "4·d_model² + 4·d_model", or with N K/V heads
// "2·d_model² + 2·d_model·N·d_k + 2·d_model + 2·N·d_k".
std::string parameterFormula(const LayerCounts& c);
// The status line's words: "one attention layer's parameters 2,640 (2·d_model² + 2·d_model·N·d_k + …)".
std::string parameterText(const LayerCounts& c);

}  // namespace mhascope
