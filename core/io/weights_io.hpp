// Weights in PyTorch's nn.MultiheadAttention state_dict layout, both ways:
//   in_proj_weight (3*d_model, d_model) = [W_q; W_k; W_v] each (out, in) — the transpose of
//   mhascope's x W layout; in_proj_bias (3*d_model); out_proj.weight (d_model, d_model);
//   out_proj.bias (d_model).
#pragma once

#include <map>
#include <string>

#include "attention/engine.hpp"

namespace mhascope {

using StateDict = std::map<std::string, Tensor>;

// Or the separate projections Llama, Mistral and Qwen use (each optionally under "self_attn."):
//   q_proj.weight (h·d_k, d_model), k_proj.weight and v_proj.weight (N·d_k, d_model),
//   o_proj.weight (d_model, h·d_k), each with an optional .bias (all four or none). The rows of
//   q_proj give h·d_k (d_model unless the heads are wider or narrower), so d_k with h; the rows of
//   k_proj give N·d_k, so the number of K/V heads N.
//
// One error listing every mismatch (missing/extra tensors, wrong shapes) at once.
Result<MhaWeights> weightsFromStateDict(const StateDict& sd, int dModel);
// True when the file uses the separate q/k/v/o_proj names (with or without "self_attn.").
bool hasSeparateProjections(const StateDict& sd);
// d_model as the file's shapes say it (in_proj_weight's or q_proj.weight's columns), or 0.
std::int64_t stateDictDModel(const StateDict& sd);
// in_proj names when W_q and W_k are square (N = h, d_k = d_model / h), the separate q/k/v/o_proj names otherwise.
StateDict stateDictFromWeights(const MhaWeights& w);

}  // namespace mhascope
