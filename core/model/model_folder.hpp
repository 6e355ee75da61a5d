// A Hugging Face model folder opened for the forward: config.json (config.hpp), the weights'
// headers checked against the tensors the architecture needs (every missing tensor, wrong shape,
// unsupported dtype and unknown extra tensor listed in one message), and each layer's weights
// converted to float on demand in mhascope's textbook layout y = x W + b.
//
// Tensor names, exactly as Hugging Face writes them:
//   gpt2 (optionally prefixed "transformer."): wte.weight (V, d), wpe.weight (P, d),
//     h.{i}.ln_1.{weight,bias}, h.{i}.attn.c_attn.{weight (d, 3d), bias (3d)},
//     h.{i}.attn.c_proj.{weight (d, d), bias}, h.{i}.ln_2.*, h.{i}.mlp.c_fc.{weight (d, F), bias},
//     h.{i}.mlp.c_proj.{weight (F, d), bias}, ln_f.*; Conv1D weights are already (in, out).
//     The causal-mask buffers h.{i}.attn.bias / attn.masked_bias are skipped.
//   llama / mistral / qwen2: model.embed_tokens.weight (V, d),
//     model.layers.{i}.input_layernorm.weight, .self_attn.{q,k,v,o}_proj.weight (out, in)
//     (+ q/k/v .bias for Qwen2), .post_attention_layernorm.weight,
//     .mlp.{gate,up}_proj.weight (F, d), .mlp.down_proj.weight (d, F), model.norm.weight,
//     lm_head.weight (V, d) unless tie_word_embeddings; nn.Linear weights are transposed on load.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "attention/tensor.hpp"
#include "attention/trace.hpp"
#include "model/config.hpp"
#include "model/weight_store.hpp"
#include "util/result.hpp"

namespace mhascope::model {

// One transformer block's weights in float, y = x W + b throughout.
struct LayerWeights {
  RowVector norm1, norm1Bias;  // (1, d_model); the biases are GPT-2's LayerNorm only (empty otherwise)
  RowVector norm2, norm2Bias;
  std::shared_ptr<MhaWeights> attention;  // W_q (d, d), W_k W_v (d, N d_k), W_o (d, d) + biases
  RowMatrix mlpIn;          // GPT-2 c_fc (d_model, F); Llama gate_proj^T (d_model, F)
  RowVector mlpInBias;      // GPT-2 (1, F)
  RowMatrix mlpUp;          // Llama up_proj^T (d_model, F)
  RowMatrix mlpOut;         // (F, d_model): GPT-2 mlp.c_proj, Llama down_proj^T
  RowVector mlpOutBias;     // GPT-2 (1, d_model)
};

class ModelFolder {
 public:
  // `path`: the folder, or its config.json.
  static Result<ModelFolder> open(const std::string& path);

  const ModelSpec& spec() const { return spec_; }
  const std::string& dir() const { return dir_; }
  const WeightStore& store() const { return store_; }
  // The dtype of the model's first layer weights as stored ("F32", "BF16", ...).
  const std::string& dtype() const { return dtype_; }

  // Layer i's weights, converted now (the forward converts one layer at a time).
  Result<LayerWeights> layer(int i) const;
  // Layer i's norm1 and attention weights only (norm2 and the MLP left empty): what reading a head's
  // circuits needs, without converting the MLP (two thirds of a Llama layer).
  Result<LayerWeights> attentionLayer(int i) const;
  // The token embedding E (V, d_model) and the unembedding (lm_head, or E itself when tied), as stored.
  const StoredTensor& embeddingTable() const;
  const StoredTensor& unembeddingTable() const { return unembedding(); }
  // x (T, d_model) = token embeddings (+ GPT-2's learned positions 0 .. T-1); only the rows of
  // the given tokens are converted.
  Status embed(const std::vector<int>& tokens, RowMatrix& x) const;
  // The final norm's weight (and GPT-2's bias).
  Status finalNorm(RowVector& weight, RowVector& bias) const;
  // logits (T, V) = normed (T, d_model) · E^T, E the unembedding (lm_head or the tied embedding),
  // converted a block of rows at a time.
  Status unembed(const RowMatrix& normed, RowMatrix& logits) const;
  // The same into memory the caller owns: `logits` holds normed.rows() × V floats, row-major (the
  // forward writes its result straight into it, so only one (T, V) table ever exists).
  Status unembedInto(const RowMatrix& normed, float* logits) const;

 private:
  std::string name(const std::string& suffix) const { return prefix_ + suffix; }
  const StoredTensor& tensor(const std::string& suffix) const;
  Status readMatrix(const std::string& suffix, RowMatrix& m, bool transpose) const;
  Status readVector(const std::string& suffix, RowVector& v) const;
  Result<LayerWeights> readLayer(int i, bool withMlp) const;
  const StoredTensor& unembedding() const;

  ModelSpec spec_;
  std::string dir_;
  std::string prefix_;  // "transformer." for GPT-2 files written with it, else ""
  std::string dtype_;
  WeightStore store_;
};

}  // namespace mhascope::model
