// The non-attention ops of the model, each as a forward and a backward on (rows, features)
// matrices (rows = B*T tokens). Backward functions ADD into parameter gradients (so a tensor used
// several times accumulates) and overwrite input gradients.
#pragma once

#include <vector>

#include "attention/tensor.hpp"

namespace mhascope::train {

inline constexpr float kLayerNormEps = 1e-5f;  // PyTorch's default

// y = (x - mean) / sqrt(var + eps) * w + b per row (biased variance, as nn.LayerNorm).
struct LayerNormCache {
  RowMatrix xhat;              // (rows, d) normalised input
  Eigen::VectorXf rstd;        // (rows) 1 / sqrt(var + eps)
};
void layerNormForward(const RowMatrix& x, const RowMatrix& w, const RowMatrix& b, RowMatrix& y, LayerNormCache& c);
void layerNormBackward(const RowMatrix& dy, const RowMatrix& w, const LayerNormCache& c, RowMatrix& dx,
                       RowMatrix& dw, RowMatrix& db);

// y = x W^T + b, W (out, in) as nn.Linear.
void linearForward(const RowMatrix& x, const RowMatrix& W, const RowMatrix& b, RowMatrix& y);
// dx (may be null: not needed) = dy W; dW += dy^T x; db += column sums of dy.
void linearBackward(const RowMatrix& dy, const RowMatrix& x, const RowMatrix& W, RowMatrix* dx, RowMatrix& dW,
                    RowMatrix& db);

// Exact GELU: 0.5 x (1 + erf(x / sqrt 2)) (nn.GELU() default, not the tanh approximation).
void geluForward(const RowMatrix& x, RowMatrix& y);
void geluBackward(const RowMatrix& x, const RowMatrix& dy, RowMatrix& dx);

// Mean cross-entropy over the rows whose target is >= 0 (the predictable positions); rows with
// target -1 count nowhere. Computed with the row max subtracted, summed in double.
struct CrossEntropyResult {
  double loss = 0;   // mean over counted rows (0 when none)
  int count = 0;     // rows counted
  int correct = 0;   // counted rows whose argmax is the target
};
// dlogits (may be null) = (softmax - onehot) / count on counted rows, 0 elsewhere.
CrossEntropyResult crossEntropy(const RowMatrix& logits, const std::vector<int>& targets, RowMatrix* dlogits);

}  // namespace mhascope::train
