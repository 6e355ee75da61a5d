// The library of mistakes people make implementing attention, each computed from a correct trace:
// the stage the mistake changes, as the mistaken code computes it, and the output of a pipeline
// that continues correctly from there. The Pitfalls lesson shows them beside the right pipeline;
// the practice check names one only when a learner's tensor equals what it computes here.
//
// The continuation follows a plain PyTorch implementation, not the engine: a row whose keys are all
// blocked gets NaN weights (softmax of −inf everywhere), as torch.softmax gives; the engine's
// forward gives such a row weights 0 by design.
#pragma once

#include <optional>
#include <vector>

#include "attention/trace.hpp"

namespace mhascope {

enum class Mistake {
  ScaleBySqrtDModel,      // scores / √d_model
  NoScaling,              // no division at all
  ScaleByDk,              // scores / d_k
  SplitWithoutTranspose,  // view(B, h, T, d_k) straight from (B, T, d_model)
  ViewOnTransposed,       // .view on a transposed tensor: an exception, not a tensor
  MaskIgnored,            // the mask argument never applied: the masked scores are the scaled ones
  MaskInverted,           // True taken as "keep"
  MaskedWithZero,         // blocked scores set to 0 instead of −inf
  CausalHidesDiagonal,    // the causal mask also blocks each token's own key
  CausalWrongDirection,   // blocks the past instead of the future
  MaskAfterSoftmax,       // blocked weights zeroed after the softmax: rows no longer sum to 1
  SoftmaxOverQueries,     // softmax over T_q: columns sum to 1
  NoMaxSubtraction,       // exp without the row maximum subtracted: overflow, inf / inf = NaN
  SumHeads,               // heads added instead of put side by side
  MergeWithoutTranspose,  // (B, h, T, d_k) reshaped to (B, T, d_model) with no transpose back
  NoOutputProjection,     // W_o skipped
  ProjectionTransposed,   // x Wᵀ instead of x W
  KvHeadsTiled,           // grouped K/V heads repeated as a tile: head i reads K/V head i mod N
  RopeInterleaved,        // RoPE on pairs (2i, 2i + 1) instead of (i, i + d_k/2)
  RopeOnQueriesOnly,      // q rotated, k not: the "rotated" keys are the keys
  CacheNotKept,           // each decoding step attends to its own token only
  NoDivisibilityCheck,    // d_model not divisible by h accepted: a test case, not a tensor
};

struct MistakeInfo {
  Mistake id;
  const char* key;    // "scale_by_sqrt_d_model": the JSON report's and the fixtures' name
  const char* title;  // "Scaled by √d_model"
  StageId stage;      // where it first shows
  bool computed;      // false: recognised from an exception or a test case, not from a tensor
};
const std::vector<MistakeInfo>& allMistakes();
const MistakeInfo& mistakeInfo(Mistake m);
std::optional<Mistake> mistakeFromKey(std::string_view key);

struct MistakeOutcome {
  Tensor stage;   // the mistaken stage, in that stage's shape (SumHeads: (B, T_q, d_k))
  Tensor output;  // (B, T_q, d_model) the pipeline continued correctly from it
  // (B, h, T_q, T_k) the weights it leads to, for the mistakes of the scores, the mask and the
  // softmax; empty for the others.
  Tensor weights;
  // Tensors the mistaken code makes on the mistaken line itself, before the stage: a causal mask
  // built wrong (T_q, T_k) in either polarity (1 = blocked, 1 = kept), the exponentials of a softmax
  // without its maximum, RoPE's features taken in interleaved pairs.
  std::vector<Tensor> earlier;
};
// What mistake `m` computes on the inputs and weights of the correct trace `t` (every stage
// recorded, the weights held). nullopt when it does not apply there: no blocked cell to mishandle,
// no causal mask, N = h for the tiling, no RoPE, h = 1 for the merges, or not a computed mistake.
std::optional<MistakeOutcome> computeMistake(const Trace& t, Mistake m);

// The pipeline from the heads on, as a plain PyTorch implementation computes it (used by the
// mistakes; exposed for the tests that hold it against the engine). q (B, h, T_q, d_k); k, v
// (B, h, T_k, d_k), already one per query head; blocked(b, q, k) from `t` unless given.
Tensor scoresFromHeads(const Tensor& q, const Tensor& k);              // (B, h, T_q, T_k) Q Kᵀ
Tensor softmaxRowsTorch(const Tensor& masked);                          // over T_k; all −inf → NaN
Tensor headOutputsFrom(const Tensor& weights, const Tensor& v);         // (B, h, T_q, d_k)
// K/V heads (B, N, T, d_k) as h query heads read them: interleaved (head i reads i // (h/N)), or
// tiled (i mod N), the mistake.
Tensor expandKvHeads(const Tensor& kv, int h, bool tiled);

}  // namespace mhascope
