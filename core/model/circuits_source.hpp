// A Hugging Face model folder as a source of layers for core/analysis, and a head's circuits read
// from it (analysis::computeOneHeadCircuits, the definitions of analysis/circuits.hpp — Elhage et al.
// 2021 — for a GPT-2 or Llama-family model), for the window's Circuits tab and
// `mhascope circuits --model`:
//   - the chosen head's QK and OV (d_model x d_model) and their token-space versions over the text's
//     own tokens (distinct ids, first occurrence first, at most `maxTokens`): E_s QK E_sᵀ and
//     E_s OV U_s (E_s, U_s: those tokens' rows of the embedding and columns of the unembedding);
//   - for a family with learned positions (GPT-2), P_s QK P_sᵀ over the text's positions 0 … p − 1
//     (P_s: those rows of the position table);
//   - its composition with every head of every other layer: which earlier heads it reads (it is b)
//     and which later heads read it (it is a), Q, K and V scores, beside the random baseline;
//   - every head's copying score over the whole vocabulary (one L x h grid);
//   - attention rollout of the text through every layer, from the folder's forward.
// Conventions (docs/circuits.md): the textbook layout y = x W of core/model; with N K/V heads query
// head i reads K/V head i / (h / N). The norms' gains are folded into the weights that read the
// normed stream (norm1's into W_q, W_k, W_v; the final norm's into U), their centring and the biases
// are left out, as in the paper. With RoPE, QK is the content part of the score only.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analysis/circuits.hpp"
#include "analysis/layer_source.hpp"
#include "attention/engine.hpp"
#include "model/model_folder.hpp"
#include "model/residual_cache.hpp"
#include "util/result.hpp"

namespace mhascope::model {

// `model` must outlive it. Each layer() reads that layer's norm1 and attention weights (not the MLP)
// and folds norm1's gain in; the embedding and unembedding rows are converted as asked.
class FolderLayers final : public analysis::LayerSource {
 public:
  explicit FolderLayers(const ModelFolder& model) : model_(model) {}
  analysis::SourceShape shape() const override;
  Result<analysis::CircuitLayer> layer(int l) const override;
  Status embeddingRows(std::int64_t first, std::int64_t n, float* out) const override;
  Status unembeddingRows(std::int64_t first, std::int64_t n, float* out) const override;
  bool tied() const override;
  Result<RowVector> finalGain() const override;
  // A family with learned positions (GPT-2's wpe): its table's rows (n_positions); else 0.
  std::int64_t learnedPositions() const override;
  Status positionRows(std::int64_t first, std::int64_t n, float* out) const override;

 private:
  const ModelFolder& model_;
};

// What the circuits of this family's layers fold in or leave out beyond the shared conventions (norm gains
// folded, centring and biases left out): the q/k norm, a norm on the attention's output, no norm before it,
// scaled embeddings, the model's own score scale and the scores' softcap — one sentence each; "" for a
// family that adds none of them (GPT-2, Llama, Mistral, Qwen2).
std::string circuitsFamilyNote(const ModelSpec& s);

struct ModelCircuitsOptions {
  int layer = 0, head = 0;  // the chosen head
  int maxTokens = 64;       // token-space axes: at most this many of the text's distinct tokens
  // A pair of any two heads whose virtual head to compute in full (OneHeadCircuits::picked).
  std::optional<analysis::HeadPair> pair;
  int rolloutMaxTokens = 1024;  // rollout is skipped (rollout.why says so) above this T
  std::uint64_t memoryBudgetBytes = kDefaultMemoryBudget;
  int threads = 1;
  // analysis::compositionBaseline(d_model, d_k) when the caller already has it (it depends on the two
  // sizes alone and costs seconds: GPT-2 small's is 3 of the 5 s); nullopt computes it.
  std::optional<double> baseline;
  // Called with steps done and their total; returning false cancels: the result is then the error
  // kForwardCancelled (forward.hpp).
  std::function<bool(int done, int total)> progress;
  // Set: the rollout's forward skips the MLPs of layers whose next residual stream an earlier
  // forward of this folder and sequence kept, and keeps its own (ForwardOptions::residuals).
  std::shared_ptr<ResidualCache> residuals;
};

// Bytes computeModelCircuits holds at once for T tokens (checked against the budget first).
double estimateModelCircuitsBytes(const ModelSpec& spec, std::int64_t T, const ModelCircuitsOptions& opt);

// `tokens`: the text's ids (in [0, V), at most the model's positions). A layer or head out of range
// is refused naming the value and the model's count, and so is a pair (analysis::checkPair); so is an
// estimate above the memory budget.
// Time is bounded by low-rank products (analysis::computeOneHeadCircuits), then one forward for the
// rollout.
Result<analysis::OneHeadCircuits> computeModelCircuits(const ModelFolder& model, const std::vector<int>& tokens,
                                                       const ModelCircuitsOptions& opt);

}  // namespace mhascope::model
