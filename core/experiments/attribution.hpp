// Direct logit attribution: how much each component that writes the residual stream adds, directly, to the
// logit difference at the final position t = T − 1. The final stream there is a sum of what each component
// wrote at t (experiments/stream_terms.hpp, shared with the QK score decomposition):
//   x = e_tok + e_pos + Σ_l ( Σ_i o_{l,i} W_o^{(l,i)} + b_o^{(l)} + mlp_l )
// (e_pos: a family with learned positions; o_{l,i} W_o^{(l,i)}: head i's A V, with the values' bias, times its
// d_k rows of W_o). The final norm is made linear by freezing its scale at the run's own value for that row:
// LayerNorm: n(v) = (v − mean(v)) / σ ⊙ w, σ = sqrt(var(x) + eps) of the whole final row x (its centring is
// linear and applied to each term; its bias b is a term of its own); RMSNorm: n(v) = v / rms(x) ⊙ w. Each term's
// attribution is n(v) · u, u = E[right] − E[wrong] the answer direction (the unembedding rows' difference);
// the terms sum to the model's own logit difference (up to float rounding). accumulated[l] is the sum of the
// embeddings', the final norm bias' and every term of layers 0 .. l: the logit lens of the logit difference with
// the final scale frozen, its last entry the whole.
//
// Defined for the models whose blocks add their sublayers' outputs to the stream as they are and whose logits are
// not softcapped (a norm after each sublayer, or a final softcap, is not linear with one frozen scale): other
// families are refused with a message saying why.
#pragma once

#include <cstdint>
#include <vector>

#include "attention/engine.hpp"
#include "model/model_folder.hpp"
#include "util/result.hpp"

namespace mhascope::experiments {

struct LogitAttribution {
  int layers = 0, heads = 0;
  int right = 0, wrong = 0;
  std::vector<double> head;         // (L, h) head i of layer l's term
  std::vector<double> outputBias;   // (L) b_o's term (0 without a bias)
  std::vector<double> mlp;          // (L) the MLP's output with its biases (a mixture: its routed sum)
  std::vector<double> accumulated;  // (L) the sum through layer l (see above)
  double tokenEmbedding = 0, positionEmbedding = 0, finalNormBias = 0;
  double sum = 0;                   // every term
  double modelLogitDiff = 0;        // the forward's own logits[T − 1][right] − logits[T − 1][wrong]
  double finalScale = 0;            // 1/σ (LayerNorm) or 1/rms (RMSNorm) of the final row: the frozen scale
  double headAt(int l, int i) const { return head[static_cast<std::size_t>(l * heads + i)]; }
};

// The attribution on `tokens` (the clean run): one forward with read hooks. Ids are checked against the vocabulary.
Result<LogitAttribution> attributeLogits(const model::ModelFolder& model, const std::vector<int>& tokens, int right,
                                         int wrong, int threads = 1, std::uint64_t memoryBudgetBytes = kDefaultMemoryBudget);

}  // namespace mhascope::experiments
