// Where the circuits read a model's weights from: one interface over the two sources of layers —
// a training checkpoint's parameters (train/circuits_source.hpp) and a Hugging Face model folder
// (model/circuits_source.hpp) — so one computation (circuits.hpp) serves both.
//
// Every source hands its weights over in one layout, the textbook y = x W: head i's W_q^i is
// columns i·d_k … (i+1)·d_k − 1 of wq, likewise W_k and W_v for K/V head i / (h / N), and W_o^i is
// rows i·d_k … of wo. A source with a norm before attention folds its gain into W_q, W_k and W_v
// (diag(g) W: what the head reads is the normed stream), and the final norm's gain into the
// unembedding; a source that leaves the norms out (a checkpoint: LayerNorm is left out, as in
// Elhage et al. 2021) gives a gain of ones.
#pragma once

#include <cstdint>

#include "attention/tensor.hpp"
#include "util/result.hpp"

namespace mhascope::analysis {

struct SourceShape {
  int layers = 0;   // L
  int heads = 0;    // h
  int kvHeads = 0;  // N (= h without grouped K/V heads)
  int dModel = 0;   // d_model
  int vocab = 0;    // V
  int headDim = 0;  // d_k when the model sets it (Qwen3, Gemma); 0: d_model / h
  int dk() const { return headDim > 0 ? headDim : (heads > 0 ? dModel / heads : 0); }
  int group() const { return kvHeads > 0 ? heads / kvHeads : 1; }  // query head i reads K/V head i / group
};

// One layer's attention weights, y = x W.
struct CircuitLayer {
  RowMatrix wq;      // (d_model, h d_k)
  RowMatrix wk, wv;  // (d_model, N d_k)
  RowMatrix wo;      // (h d_k, d_model)
};

class LayerSource {
 public:
  virtual ~LayerSource() = default;
  virtual SourceShape shape() const = 0;
  // Layer l's attention weights (l in [0, L)), norm gain folded in.
  virtual Result<CircuitLayer> layer(int l) const = 0;
  // Rows [first, first + n) of the token embedding E (V, d_model) into `out` (n x d_model, row-major).
  virtual Status embeddingRows(std::int64_t first, std::int64_t n, float* out) const = 0;
  // The same rows of the unembedding as stored, Uᵀ (V, d_model), before the final norm's gain.
  virtual Status unembeddingRows(std::int64_t first, std::int64_t n, float* out) const = 0;
  // The unembedding is the embedding itself (tied weights): its rows need not be read twice.
  virtual bool tied() const { return false; }
  // The final norm's gain g_f (1, d_model), folded into U = diag(g_f) · Uᵀᵀ; ones when there is none.
  virtual Result<RowVector> finalGain() const = 0;
  // Rows of the learned position table P (positions, d_model) the model adds to the token
  // embeddings (GPT-2's wpe, a checkpoint's pos.weight); 0 when positions come otherwise (RoPE,
  // ALiBi) or not at all.
  virtual std::int64_t learnedPositions() const { return 0; }
  // Rows [first, first + n) of P into `out` (n x d_model, row-major).
  virtual Status positionRows(std::int64_t first, std::int64_t n, float* out) const {
    (void)first, (void)n, (void)out;
    return makeError("this model has no learned position table");
  }
};

}  // namespace mhascope::analysis
