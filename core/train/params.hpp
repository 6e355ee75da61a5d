// The parameters of the tiny GPT-style model, named exactly like the PyTorch state_dict of
// scripts/mhascope_model.py, stored in PyTorch's layout (a Linear weight is (out, in), y = x W^T + b).
// 1-D tensors (biases, LayerNorm) are kept as (1, n) matrices; their checkpoint shape is (n).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "util/result.hpp"
#include "attention/tensor.hpp"

namespace mhascope::train {

struct GptConfig {
  int vocab = 64;      // V
  int seqLen = 32;     // T_max (rows of pos.weight)
  int dModel = 64;     // d_model
  int heads = 2;       // h
  int layers = 2;      // L
  bool mlp = false;    // d_mlp = 4 * d_model when on
  int dMlp() const { return 4 * dModel; }
};

// Sizes that cannot work, every problem in one message.
inline constexpr int kMaxVocab = 1 << 16, kMaxSeq = 4096, kMaxDModel = 4096;
Status validateConfig(const GptConfig& cfg);

struct BlockParams {
  RowMatrix ln1w, ln1b;    // (1, d)
  RowMatrix inW, inB;      // attn.in_proj_weight (3d, d), in_proj_bias (1, 3d)
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
  RowMatrix pos;   // (T_max, d)
  std::vector<BlockParams> blocks;
  RowMatrix lnfW, lnfB;  // (1, d)
  RowMatrix outW, outB;  // (V, d), (1, V)

  // Every tensor in state_dict order (emb, pos, blocks.0 …, lnf, out).
  std::vector<NamedParam> list();
  std::int64_t count() const;  // number of scalars
};

// Every tensor's name and checkpoint shape for these sizes, in list() order, without allocating
// anything (a file's declared sizes are checked against its tensors with this first).
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
