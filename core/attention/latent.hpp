// Multi-head latent attention (DeepSeek-V2 and V3, transformers' modeling_deepseek_v3.py and
// modeling_deepseek_v2.py): every head's keys and values are made from one small latent vector per
// token, so a decoder caches that vector (and one rotary key shared by all heads) instead of h keys
// and h values. One implementation for the lesson's random weights and a model folder's layers.
//
//   q = x W_q                       (T, h (d_n + d_r)) with q_lora_rank null (q_proj); else
//   q = RMSNorm(x W_qa) · g_q W_qb  q_a_proj (d_model, r_q), q_a_layernorm, q_b_proj (r_q, h (d_n + d_r))
//                                   head i: [q_nope_i (d_n) | q_rope_i (d_r)]
//   [c | k_r] = x W_kva             (T, r + d_r): the latent c and the one rotary key
//   c = RMSNorm(c) · g              kv_a_layernorm
//   [k_nope_i | v_i] = c W_kvb^i    (T, d_n + d_v) per head: W_uk^i (r, d_n), W_uv^i (r, d_v)
//   q_rope_i, k_r turned by RoPE: rotate_half pairs (i, i + d_r/2), or adjacent pairs (2i, 2i + 1) —
//                                   V3's rope_interleave (which reorders each rotary part to [even | odd]
//                                   before rotate_half; the same scores) and V2's complex pairs
//   s_i(t, j) = (q_nope_i(t)·k_nope_i(j) + q_rope_i(t)·k_r(j)) · scale, causal softmax; scale
//               (d_n + d_r)^-1/2, times YaRN's mscale(factor, mscale_all_dim)^2 when the config sets it
//   y = [A_1 V_1 | … | A_h V_h] W_o
//
// The absorbed form computes the same numbers without ever making k_nope or v: q_nope_i W_uk^iᵀ is
// an r-wide query that meets c directly, and A_i c is multiplied by W_uv^i afterwards — the way a
// decoder runs on its cache. Both forms are computed here and compared. Pure core: Eigen + std.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attention/tensor.hpp"
#include "attention/trace.hpp"
#include "util/result.hpp"

namespace mhascope {

struct LatentSizes {
  int dModel = 0;
  int heads = 0;        // h
  int kvRank = 0;       // r, kv_lora_rank: the latent's width
  int ropeDim = 0;      // d_r, qk_rope_head_dim: the rotary part of each query and of the shared key (even)
  int nopeDim = 0;      // d_n, qk_nope_head_dim: each head's content part of q and k
  int valueDim = 0;     // d_v, v_head_dim
  int qRank = 0;        // r_q, q_lora_rank: the query's own low-rank step (0: one q_proj)
  float ropeBase = 10000.0f;
  RopeStyle ropeStyle = RopeStyle::Half;
  std::vector<double> ropeInvFreq;  // the d_r/2 frequencies when a config decides them (YaRN); empty: base^(-2i/d_r)
  float ropeGain = 1.0f;            // cos and sin times it (YaRN's attention factor)
  float scale = 0.0f;               // the scores' factor (0: (d_n + d_r)^-1/2)
  float normEps = 1e-6f;  // kv_a_layernorm's and q_a_layernorm's eps (DeepSeek's RMSNorm default)
  int queryDim() const { return nopeDim + ropeDim; }  // d_n + d_r: one head's q and k
  float scoreScale() const;
  // Numbers a decoder caches per token and layer: r + d_r (576 for DeepSeek-V3), against
  // h (d_n + d_r + d_v) for keys and values of every head.
  std::int64_t cachedPerToken() const { return static_cast<std::int64_t>(kvRank) + ropeDim; }
  std::int64_t expandedPerToken() const { return static_cast<std::int64_t>(heads) * (nopeDim + ropeDim + valueDim); }
};

// y = x W layout (in, out); the file's nn.Linear (out, in) transposed.
struct LatentWeights {
  RowMatrix wq;      // (d_model, h (d_n + d_r)): q_proj (empty when r_q > 0)
  RowMatrix wqa;     // (d_model, r_q): q_a_proj (r_q > 0 only)
  RowVector qNorm;   // (r_q): q_a_layernorm's gain
  RowMatrix wqb;     // (r_q, h (d_n + d_r)): q_b_proj
  RowMatrix wkva;    // (d_model, r + d_r): kv_a_proj_with_mqa
  RowVector kvNorm;  // (r): kv_a_layernorm's gain
  RowMatrix wkvb;    // (r, h (d_n + d_v)): kv_b_proj, head i's columns [W_uk^i | W_uv^i]
  RowMatrix wo;      // (h d_v, d_model): o_proj
};

// Every size at least 1 (d_r even), the weights of these sizes; each problem named with its value.
Status validateLatent(const LatentSizes& s, const LatentWeights& w, std::int64_t tokens);
// Seeded weights, ~U(-sqrt(3/in), sqrt(3/in)) per matrix, gain 1 + U(-0.1, 0.1).
LatentWeights randomLatentWeights(const LatentSizes& s, std::uint64_t seed);

struct LatentResult {
  Tensor latent;           // (T, r): c after its norm — with kRope, what the cache holds
  Tensor kRope;            // (T, d_r): the shared rotary key, turned
  Tensor weights;          // (h, T, T): the expanded form's attention weights (with a record: in its trace instead)
  Tensor weightsAbsorbed;  // (h, T, T): the absorbed form's
  Tensor output;           // (T, d_model): expanded
  Tensor outputAbsorbed;   // (T, d_model): absorbed
  double maxWeightDiff = 0, maxOutputDiff = 0;  // between the two forms
};

// Where a model's layer records its pass: the expanded form's stages into `trace` as the engine's pipeline names
// them — q_proj, k_proj and v_proj the expanded projections (h (d_n + d_r), h (d_n + d_r) and h d_v wide: k_i =
// [c W_uk^i | k_r], the one rotary key repeated in every head), the heads, q and k with their rotary part turned,
// the scores, their scale and causal mask (derived), the weights, the heads' outputs (d_v wide), the concat and
// the output. The trace holds no W_q/W_k/W_v (weights null): a latent layer has none.
struct LatentRecord {
  Trace* trace = nullptr;
  std::vector<std::string> tokens;  // (T) labels; empty: t0, t1, ...
  int layer = -1;
  bool everyStage = true;  // false: the weights, the concat and the output only
};

// Causal self-attention over the rows of x (T, d_model), both forms.
Result<LatentResult> latentAttention(const RowMatrix& x, const LatentWeights& w, const LatentSizes& s,
                                     const LatentRecord& record = {});

}  // namespace mhascope
