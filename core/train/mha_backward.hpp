// The backward pass of the engine's self-attention, computed from the stages its forward
// recorded in the Trace (inputs, Q/K/V heads, weights, concat) — no second forward.
#pragma once

#include "attention/engine.hpp"
#include "train/model.hpp"

namespace mhascope::train {

// MhaWeights (x W layout) from PyTorch's packed in_proj (3d, d) / out_proj (d, d) parameters.
MhaWeights mhaWeightsFromPacked(const RowMatrix& inW, const RowMatrix& inB, const RowMatrix& outW,
                                const RowMatrix& outB);

// Gradients of y = MHA(x, x, x) for the trace of a self-attention forward with those weights.
// dOut: (B*T, d). dX (B*T, d) is overwritten; parameter gradients (PyTorch layout) are added to.
// The mask needs no special case: a blocked cell has weight 0, so its score gradient is 0.
void mhaBackward(const Trace& t, const RowMatrix& inW, const RowMatrix& outW, const RowMatrix& dOut, RowMatrix& dX,
                 RowMatrix& dInW, RowMatrix& dInB, RowMatrix& dOutW, RowMatrix& dOutB, Workspace* work = nullptr);

}  // namespace mhascope::train
