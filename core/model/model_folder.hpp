// A Hugging Face model folder opened for the forward: config.json (config.hpp), the weights' headers
// checked against the tensors the family's table needs (every missing tensor, wrong shape,
// unsupported dtype and unknown extra tensor listed in one message), and each layer's weights
// converted to float on demand in mhascope's textbook layout y = x W + b.
//
// The tensor names are the family's (core/model/families/: gpt2.cpp, llama_decoder.hpp), exactly as
// Hugging Face writes them; each is read by its role (the query projection, the first norm, ...), so
// nothing here names a family. nn.Linear weights (out, in) are transposed as they are read; Conv1D
// weights (GPT-2) are (in, out) already; a fused q | k | v is split into W_q, W_k, W_v.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "attention/latent.hpp"
#include "attention/tensor.hpp"
#include "attention/trace.hpp"
#include "model/config.hpp"
#include "model/families/family.hpp"
#include "model/weight_store.hpp"
#include "util/result.hpp"

namespace mhascope::model {

// One transformer block's weights in float, y = x W + b throughout.
struct LayerWeights {
  RowVector norm1, norm1Bias;  // (1, d_model); the biases are GPT-2's LayerNorm only (empty otherwise)
  RowVector norm2, norm2Bias;
  RowVector attentionOutNorm, mlpOutNorm;  // (1, d_model) the norms of the sublayers' outputs (OLMo 2, Gemma); else empty
  std::shared_ptr<MhaWeights> attention;  // W_q (d, d), W_k W_v (d, N d_k), W_o (d, d) + biases; null on a latent layer
  std::shared_ptr<LatentWeights> latent;  // a latent-attention layer's (ModelSpec::latent), y = x W; else null
  RowVector qNorm, kNorm;   // the q/k norm's gains: (1, d_k) each, or (1, h d_k) and (1, N d_k); empty without
  RowVector sinks;          // (1, h) the learned sinks' logits (gpt-oss); empty without
  RowMatrix mlpIn;          // GPT-2 c_fc (d_model, F); Llama gate_proj^T (d_model, F)
  RowVector mlpInBias;      // GPT-2 (1, F) (empty without)
  RowMatrix mlpUp;          // the SwiGLU up projection: Llama up_proj^T (d_model, F) (empty without)
  RowMatrix mlpOut;         // (F, d_model): GPT-2 mlp.c_proj, Llama down_proj^T
  RowVector mlpOutBias;     // GPT-2 (1, d_model) (empty without)
  // A mixture layer (ModelSpec::moe.mixtureAt): the router; its experts are read one at a time (ModelFolder::expert),
  // only those a token goes to. The dense MLP's matrices above are then empty.
  RowMatrix router;         // W_router^T (d_model, E)
  RowVector routerBias;     // (1, E) added to the router's logits (gpt-oss); empty without
  RowVector routerChoiceBias;  // (1, E) added to the scores for the choice only (DeepSeek-V3); empty without
  RowMatrix sharedIn, sharedUp, sharedOut;  // the shared experts' gate, up (d_model, F_s) and down (F_s, d_model); empty without
};

// One expert of a mixture layer in float, y = x W + b: the family's MLP kind over its own width F_e.
struct ExpertWeights {
  RowMatrix gate;  // (d_model, F_e)
  RowMatrix up;    // (d_model, F_e)
  RowMatrix down;  // (F_e, d_model)
  RowVector gateBias, upBias;  // (1, F_e) each, split from a fused gate and up's bias (gpt-oss); empty without
  RowVector downBias;          // (1, d_model); empty without
};

class ModelFolder {
 public:
  // `path`: the folder, or its config.json.
  static Result<ModelFolder> open(const std::string& path);

  const ModelSpec& spec() const { return spec_; }
  const std::string& dir() const { return dir_; }
  const WeightStore& store() const { return store_; }
  // The folder as opened: its path, config.json's text and the weight files' identities. Two
  // opens of an unchanged folder have the same identity; a changed config or weight file does not.
  const std::string& identity() const { return identity_; }
  // The dtype of the model's first layer weights as stored ("F32", "BF16", ...).
  const std::string& dtype() const { return dtype_; }

  // Layer i's weights, converted now (the forward converts one layer at a time).
  Result<LayerWeights> layer(int i) const;
  // Expert e of mixture layer i, converted now (a forward converts only the experts its tokens go to).
  Result<ExpertWeights> expert(int i, int e) const;
  // Layer i's norm1 and attention weights only (norm2 and the MLP left empty): what reading a head's
  // circuits needs, without converting the MLP (two thirds of a Llama layer).
  Result<LayerWeights> attentionLayer(int i) const;
  // The token embedding E (V, d_model) and the unembedding (lm_head, or E itself when tied), as stored.
  const StoredTensor& embeddingTable() const;
  const StoredTensor& unembeddingTable() const { return unembedding(); }
  // The learned position table (n_positions, d_model): only for a family whose positions are Learned.
  const StoredTensor& positionTable() const;
  // x (T, d_model) = token embeddings (+ the learned positions 0 .. T-1 of a family that has them);
  // only the rows of the given tokens are converted.
  Status embed(const std::vector<int>& tokens, RowMatrix& x) const;
  // The final norm's weight (and its bias, GPT-2's LayerNorm; else empty).
  Status finalNorm(RowVector& weight, RowVector& bias) const;
  // logits (T, V) = normed (T, d_model) · E^T, E the unembedding (lm_head or the tied embedding),
  // converted a block of rows at a time.
  Status unembed(const RowMatrix& normed, RowMatrix& logits) const;
  // The same into memory the caller owns: `logits` holds normed.rows() × V floats, row-major (the
  // forward writes its result straight into it, so only one (T, V) table ever exists).
  Status unembedInto(const RowMatrix& normed, float* logits) const;

 private:
  // The stored tensor of a role the spec has (open() checked it exists); `layer` for a per-layer role.
  const StoredTensor& tensor(TensorRole role, int layer = -1) const;
  const StoredTensor& tensor(const TensorName& t, int layer, int expert = -1) const;
  // A stored matrix into y = x W form (nn.Linear's (out, in) transposed).
  Status readMatrix(const TensorName& t, const StoredTensor& stored, RowMatrix& out) const;
  // Expert e's part of layer i's expert tensor `t` into `out` (one expert's rows × cols, a vector as one row): its
  // own tensor, or its slice of a stack, stored plainly or as MXFP4.
  Status readExpertPart(const TensorName& t, int i, int e, RowMatrix& out) const;
  Result<LayerWeights> readLayer(int i, bool withMlp) const;
  const StoredTensor& unembedding() const;

  ModelSpec spec_;
  std::string dir_;
  std::string prefix_;  // the family's base prefix when the files use it ("transformer." in some GPT-2 files), else ""
  std::string dtype_;
  WeightStore store_;
  std::string identity_;
};

}  // namespace mhascope::model
