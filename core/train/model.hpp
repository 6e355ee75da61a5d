// Forward and backward of the whole model:
//   x = emb[tokens] + pos[t]
//   L times: x = x + MHA(LN1(x)) (causal; the engine's forward, trace kept for backward)
//            [x = x + W2 GELU(W1 LN2(x) + b1) + b2]
//   logits = LNf(x) out^T + out_b;  loss = mean cross-entropy over the predictable positions.
#pragma once

#include <vector>

#include "attention/engine.hpp"
#include "train/ops.hpp"
#include "train/params.hpp"

namespace mhascope::train {

// One batch: tokens (B, T) and the target of every position (-1 = not predictable, not counted).
struct Batch {
  int batch = 0;  // B
  int seq = 0;    // T
  std::vector<int> tokens;   // B*T, row-major
  std::vector<int> targets;  // B*T
};

// Everything forward keeps for backward (one per layer), reused between steps.
struct LayerCache {
  LayerNormCache ln1;
  Trace attn;            // the engine's recorded stages of this layer's MHA
  RowMatrix xMid;        // residual after attention (input of LN2)
  LayerNormCache ln2;
  RowMatrix ln2Out, pre, act;  // LN2 output, W1 x + b1, GELU of it
};
// Buffers reused from step to step (no allocation, no page faults in the training loop).
struct Workspace {
  AttentionInputs attnIn;
  RowMatrix x, a, y;                                         // forward
  RowMatrix dLogits, dx, tmp, dAct, dPre, dLn, dA;           // backward
  RowMatrix dConcat, dQKV, dScoresA, dScores;                // MHA backward
};
struct ForwardCache {
  std::vector<LayerCache> layers;
  LayerNormCache lnf;
  RowMatrix lnfOut;   // (B*T, d)
  RowMatrix logits;   // (B*T, V)
  bool hasDLogits = false;  // work.dLogits holds d loss / d logits of this forward (one softmax pass)
  Workspace work;
  // The engine's memory budget for each layer's attention (the trainer passes its own budget, so
  // `--memory-budget` reaches every forward and no fixed figure is quoted back to the user).
  std::uint64_t memoryBudgetBytes = kDefaultMemoryBudget;
};

struct LossResult {
  double loss = 0;
  int count = 0;
  int correct = 0;
};

// The engine options of the model's attention variant: N K/V heads, RoPE (rotate-half pairing,
// positions 0 .. T-1) or ALiBi. Every forward of the model and its layers' pipeline view use it.
void applyVariants(const GptConfig& cfg, AttentionOptions& opt);
// Checks the batch fits the model (T <= T_max, tokens < V) before anything runs.
Status validateBatch(const GptParams& p, const Batch& batch);
// `readCuts` (evaluation only; backward() must not follow such a forward): one bit set per
// (layer, head), index layer * heads + head, of kReadQuery / kReadKey / kReadValue. A set bit
// takes that head's term of its layer's attention output, O_i W_o^(i)T, out of what every LATER
// layer's query / key / value projection reads (before their LN1). The residual stream itself,
// the MLPs and the logits still carry it: only that one path is cut.
inline constexpr std::uint8_t kReadQuery = 1, kReadKey = 2, kReadValue = 4;
Result<LossResult> forward(const GptParams& p, const Batch& batch, ForwardCache& cache,
                           const std::vector<std::uint8_t>* readCuts = nullptr);
// Gradients of the loss of the last forward(), written into grads (zeroed first; same shapes as p).
// `cache` is non-const only for its scratch buffers (cache.work).
void backward(const GptParams& p, const Batch& batch, ForwardCache& cache, GptParams& grads);

}  // namespace mhascope::train
