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

// One error listing every mismatch (missing/extra tensors, wrong shapes) at once.
Result<MhaWeights> weightsFromStateDict(const StateDict& sd, int dModel);
StateDict stateDictFromWeights(const MhaWeights& w);

}  // namespace mhascope
