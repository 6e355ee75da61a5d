// AdamW and gradient clipping, element by element in PyTorch's order of operations.
#include "mhascope/train/optimizer.hpp"

#include <cmath>

namespace mhascope::train {

AdamW::AdamW(const GptConfig& cfg, AdamWOptions opt) : opt_(opt), m_(zeroParams(cfg)), v_(zeroParams(cfg)) {}

void AdamW::step(GptParams& params, GptParams& grads) {
  ++t_;
  const double bc1 = 1.0 - std::pow(static_cast<double>(opt_.beta1), static_cast<double>(t_));
  const double bc2 = 1.0 - std::pow(static_cast<double>(opt_.beta2), static_cast<double>(t_));
  const float stepSize = static_cast<float>(opt_.lr / bc1);
  const float bc2Sqrt = static_cast<float>(std::sqrt(bc2));
  const float decay = 1.0f - opt_.lr * opt_.weightDecay;
  auto p = params.list(), g = grads.list(), m = m_.list(), v = v_.list();
  for (std::size_t i = 0; i < p.size(); ++i) {
    float* pd = p[i].value->data();
    const float* gd = g[i].value->data();
    float* md = m[i].value->data();
    float* vd = v[i].value->data();
    for (Eigen::Index k = 0; k < p[i].value->size(); ++k) {
      pd[k] *= decay;
      md[k] = md[k] * opt_.beta1 + gd[k] * (1.0f - opt_.beta1);
      vd[k] = vd[k] * opt_.beta2 + gd[k] * gd[k] * (1.0f - opt_.beta2);
      const float denom = std::sqrt(vd[k]) / bc2Sqrt + opt_.eps;
      pd[k] -= stepSize * (md[k] / denom);
    }
  }
}

double clipGradNorm(GptParams& grads, double maxNorm) {
  double sq = 0;
  for (auto& np : grads.list()) sq += np.value->cast<double>().squaredNorm();
  const double norm = std::sqrt(sq);
  if (maxNorm > 0 && norm > maxNorm) {
    const float coef = static_cast<float>(maxNorm / (norm + 1e-6));
    for (auto& np : grads.list()) *np.value *= coef;
  }
  return norm;
}

}  // namespace mhascope::train
