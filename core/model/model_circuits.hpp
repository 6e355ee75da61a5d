// What the heads of a model folder compute, read from its weights (the circuits of
// train/circuits.hpp — Elhage et al. 2021 — for a Hugging Face GPT-2 or Llama-family model), for
// the window's Circuits tab and `mhascope circuits --model`.
//
// A real model is too large for the trainer's all-pairs tables (GPT-2 small: 144 heads, each QK and
// OV 768 x 768; Llama-3-8B: 1024 heads of 4096 x 4096), so this reads around ONE chosen head:
//   - its QK and OV (d_model x d_model) and their token-space versions over the text's own tokens
//     (distinct ids, first occurrence first, at most `maxTokens`): E_s QK E_sᵀ and E_s OV U_s
//     (E_s, U_s: those tokens' rows of the embedding and columns of the unembedding);
//   - its composition with every head of every other layer: which earlier heads it reads (it is b)
//     and which later heads read it (it is a), Q, K and V scores, beside the random baseline;
//   - every head's copying score over the whole vocabulary (one L x h grid);
//   - attention rollout of the text through every layer.
// Conventions (docs/circuits.md): the textbook layout y = x W of core/model; with N K/V heads query
// head i reads K/V head i / (h / N). The norms' gains are folded into the weights that read the
// normed stream (norm1's into W_q, W_k, W_v; the final norm's into U), their centring and the biases
// are left out, as in the paper. With RoPE, QK is the content part of the score only.
#pragma once

#include <complex>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "attention/engine.hpp"
#include "attention/tensor.hpp"
#include "model/model_folder.hpp"
#include "train/circuits.hpp"
#include "util/result.hpp"

namespace mhascope::model {

struct ModelCircuitsOptions {
  int layer = 0, head = 0;  // the chosen head
  int maxTokens = 64;       // token-space axes: at most this many of the text's distinct tokens
  int rolloutMaxTokens = 1024;  // rollout is skipped (rolloutWhy says so) above this T
  std::uint64_t memoryBudgetBytes = kDefaultMemoryBudget;
  int threads = 1;
  // train::compositionBaseline(d_model, d_k) when the caller already has it (it depends on the two
  // sizes alone and costs seconds: GPT-2 small's is 3 of the 5 s); nullopt computes it.
  std::optional<double> baseline;
  // Called with steps done and their total; returning false cancels: the result is then the error
  // kForwardCancelled (forward.hpp).
  std::function<bool(int done, int total)> progress;
};

struct ModelCircuits {
  int layers = 0, heads = 0, kvHeads = 0, dModel = 0, dk = 0, vocab = 0;
  int layer = 0, head = 0;  // the chosen head

  RowMatrix qk, ov;  // (d_model, d_model) of the chosen head
  std::vector<int> tokenIds;  // the token-space axes (distinct ids of the text, first occurrence first)
  RowMatrix qkTokens;  // (n, n) E_s QK E_sᵀ: rows query token, columns key token
  RowMatrix ovTokens;  // (n, n) E_s OV U_s: rows attended token, columns predicted token
  std::vector<std::complex<double>> eigenvalues;  // the chosen head's d_k copying eigenvalues

  std::vector<double> copying;  // layers * heads, index layer * heads + head (whole vocabulary)

  // The chosen head against every head of another layer, as train::Composition (a writes, b reads):
  std::vector<train::Composition> reads;   // b = the chosen head, a in layers 0 .. layer-1, ascending
  std::vector<train::Composition> readBy;  // a = the chosen head, b in layers layer+1 .. L-1, ascending
  double baseline = 0;  // train::compositionBaseline(d_model, d_k)

  // Attention rollout of the text (T x T, rows queries, columns input tokens) and the last layer's
  // mean-over-heads weights beside it; empty with the reason in rolloutWhy when skipped.
  RowMatrix rollout, lastLayerMean;
  std::string rolloutWhy;

  double copyingAt(int l, int h) const { return copying[static_cast<std::size_t>(l * heads + h)]; }
};

// Bytes computeModelCircuits holds at once for T tokens (checked against the budget first).
double estimateModelCircuitsBytes(const ModelSpec& spec, std::int64_t T, const ModelCircuitsOptions& opt);

// `tokens`: the text's ids (in [0, V), at most the model's positions). A layer or head out of range
// is refused naming the value and the model's count. Time is bounded by low-rank products: nothing
// of size d_model x d_model is formed but the chosen head's two matrices and U·E's (d_model x d_model)
// product, which is accumulated over the vocabulary a block of rows at a time.
Result<ModelCircuits> computeModelCircuits(const ModelFolder& model, const std::vector<int>& tokens,
                                           const ModelCircuitsOptions& opt);

// The words beside each view, built from the numbers they explain ("layer 2 head 5"-style names).
std::string modelCompositionText(const ModelCircuits& c, char kind);  // strongest read and reader vs baseline
std::string modelCopyingText(const ModelCircuits& c);                 // highest / lowest head, chosen head

}  // namespace mhascope::model
