// AdamW exactly as torch.optim.AdamW (1.13, amsgrad off): decoupled weight decay on every
// parameter, bias-corrected moments, eps added after the square root. Optional clipping of the
// global gradient L2 norm as torch.nn.utils.clip_grad_norm_.
#pragma once

#include <cstdint>

#include "train/params.hpp"

namespace mhascope::train {

struct AdamWOptions {
  float lr = 1e-3f;
  float beta1 = 0.9f, beta2 = 0.999f;
  float eps = 1e-8f;
  float weightDecay = 1e-4f;
};

class AdamW {
 public:
  AdamW(const GptConfig& cfg, AdamWOptions opt);
  // One step: p -= lr*wd*p; m, v updated; p -= lr/(1-b1^t) * m / (sqrt(v)/sqrt(1-b2^t) + eps).
  void step(GptParams& params, GptParams& grads);
  std::int64_t steps() const { return t_; }
  const AdamWOptions& options() const { return opt_; }

 private:
  AdamWOptions opt_;
  GptParams m_, v_;
  std::int64_t t_ = 0;
};

// The global L2 norm of all gradients (in double); when above maxNorm (> 0), every gradient is
// multiplied by maxNorm / (norm + 1e-6). Returns the norm before clipping.
double clipGradNorm(GptParams& grads, double maxNorm);

}  // namespace mhascope::train
