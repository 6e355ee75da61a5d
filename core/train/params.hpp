// The parameters of the tiny GPT-style model, named exactly like the PyTorch state_dict of
// scripts/mhascope_model.py, stored in PyTorch's layout (a Linear weight is (out, in), y = x W^T + b).
// 1-D tensors (biases, LayerNorm) are kept as (1, n) matrices; their checkpoint shape is (n).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.hpp"
#include "attention/tensor.hpp"

namespace mhascope::train {

// Where the model learns positions: a learned table added to the embeddings (pos.weight), or
// inside every attention layer with the engine's RoPE (q and k turned by their position, rotate-half
// pairing) or ALiBi (a fixed bias -m_i (t - j) on the scores). RoPE and ALiBi have no pos.weight.
enum class TrainPositions { Learned, Rope, Alibi };
const char* trainPositionsName(TrainPositions p);  // "learned" | "rope" | "alibi"
Result<TrainPositions> trainPositionsFromName(std::string_view name);

struct GptConfig {
  int vocab = 64;      // V
  int seqLen = 32;     // T_max (rows of pos.weight)
  int dModel = 64;     // d_model
  int heads = 2;       // h
  int layers = 2;      // L
  bool mlp = false;    // d_mlp = 4 * d_model when on
  TrainPositions positions = TrainPositions::Learned;
  float ropeBase = 10000.0f;  // RoPE: inv_freq_i = base^(-2i/d_k)
  int kvHeads = 0;     // N K/V heads (grouped-query attention); 0: N = h
  int dMlp() const { return 4 * dModel; }
  int kv() const { return kvHeads > 0 ? kvHeads : heads; }               // N
  int dk() const { return heads > 0 ? dModel / heads : 0; }             // d_k
  int qkvRows() const { return dModel + 2 * kv() * dk(); }              // rows of W_q; W_k; W_v stacked
  bool learnedPositions() const { return positions == TrainPositions::Learned; }
  // Checkpoints of RoPE, ALiBi or N != h models name the projections q_proj / k_proj / v_proj /
  // o_proj (the Llama-style names the engine's --weights reads); plain ones keep in_proj names.
  bool separateProjections() const { return !learnedPositions() || kv() != heads; }
};

// Sizes that cannot work, every problem in one message.
inline constexpr int kMaxVocab = 1 << 16, kMaxSeq = 4096, kMaxDModel = 4096;
Status validateConfig(const GptConfig& cfg);

struct BlockParams {
  RowMatrix ln1w, ln1b;    // (1, d)
  // W_q; W_k; W_v stacked as PyTorch's in_proj_weight (d + 2·N·d_k, d) and their biases
  // (1, d + 2·N·d_k): (3d, d) when N = h. A checkpoint of separate projections stores the three
  // row blocks as q_proj, k_proj, v_proj (checkpointTensors).
  RowMatrix inW, inB;
  RowMatrix outW, outB;    // attn.out_proj.weight (d, d), bias (1, d)
  RowMatrix ln2w, ln2b;    // (1, d)            (MLP only)
  RowMatrix fc1W, fc1b;    // mlp.0 (4d, d), (1, 4d)
  RowMatrix fc2W, fc2b;    // mlp.2 (d, 4d), (1, d)
};

struct NamedParam {
  std::string name;    // "blocks.0.attn.in_proj_weight"
  RowMatrix* value;
  bool isVector;       // checkpoint shape (n) instead of (rows, cols)
};

struct GptParams {
  GptConfig cfg;
  RowMatrix emb;   // (V, d)
  RowMatrix pos;   // (T_max, d); empty (0, d) with RoPE or ALiBi
  std::vector<BlockParams> blocks;
  RowMatrix lnfW, lnfB;  // (1, d)
  RowMatrix outW, outB;  // (V, d), (1, V)

  // Every tensor in state_dict order (emb, pos, blocks.0 …, lnf, out), W_q; W_k; W_v as one
  // in_proj tensor (what the optimizer and the gradients walk).
  std::vector<NamedParam> list();
  std::int64_t count() const;  // number of scalars
};

// A checkpoint tensor: rows [first, first + count) of a parameter matrix (or, for a (1, n) vector,
// its columns): the whole matrix, or one of q_proj / k_proj / v_proj inside in_proj.
struct TensorView {
  std::string name;    // "blocks.0.attn.k_proj.weight"
  RowMatrix* value;
  bool isVector;       // checkpoint shape (count) instead of (count, cols)
  Eigen::Index first, count;
};
// The checkpoint's tensors in state_dict order: list() with, for separate projections, in_proj
// split into q_proj, k_proj, v_proj and out_proj named o_proj.
std::vector<TensorView> checkpointTensors(GptParams& p);

// Every checkpoint tensor's name and shape for these sizes, in checkpointTensors() order, without
// allocating anything (a file's declared sizes are checked against its tensors with this first).
struct ParamShape {
  std::string name;
  Shape shape;
};
std::vector<ParamShape> paramShapes(const GptConfig& cfg);
// Number of scalars for these sizes (= zeroParams(cfg).count()), without allocating.
std::int64_t paramCount(const GptConfig& cfg);

// All tensors allocated with the right shapes, zero.
GptParams zeroParams(const GptConfig& cfg);
// Seeded init, the same numbers on every machine (SplitMix64, no std distributions), with the
// distributions of PyTorch's defaults: embeddings N(0, 1), LayerNorm 1 / 0, in_proj Xavier-uniform
// with zero bias, out_proj U(±1/sqrt(d)) with zero bias, Linear layers U(±1/sqrt(in)) for weight and bias.
GptParams initParams(const GptConfig& cfg, std::uint64_t seed);

}  // namespace mhascope::train
