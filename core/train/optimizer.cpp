// AdamW and gradient clipping, element by element in PyTorch's order of operations.
#include "train/optimizer.hpp"

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
  const float b1 = opt_.beta1, b2 = opt_.beta2, eps = opt_.eps, c1 = 1.0f - b1, c2 = 1.0f - b2;
  auto p = params.list(), g = grads.list(), m = m_.list(), v = v_.list();
  for (std::size_t i = 0; i < p.size(); ++i) {
    const Eigen::Index n = p[i].value->size();
    // Whole-array expressions (SIMD; a scalar std::sqrt loop does not vectorize because of errno),
    // element by element the same operations in the same order.
    Eigen::Map<Eigen::ArrayXf> pd(p[i].value->data(), n), md(m[i].value->data(), n), vd(v[i].value->data(), n);
    const Eigen::Map<const Eigen::ArrayXf> gd(g[i].value->data(), n);
    md = md * b1 + gd * c1;
    vd = vd * b2 + (gd * gd) * c2;
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12 false positive inside avx512fintrin.h
#endif
    pd = pd * decay - stepSize * (md / (vd.sqrt() / bc2Sqrt + eps));
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
  }
}

double clipGradNorm(GptParams& grads, double maxNorm) {
  double sq = 0;
  for (auto& np : grads.list()) {
    // Eight independent double accumulators (vectorizable without reordering any one sum).
    double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    const float* x = np.value->data();
    const Eigen::Index n = np.value->size(), n8 = n - n % 8;
    for (Eigen::Index i = 0; i < n8; i += 8) {
      for (int j = 0; j < 8; ++j) acc[j] += static_cast<double>(x[i + j]) * static_cast<double>(x[i + j]);
    }
    for (Eigen::Index i = n8; i < n; ++i) acc[i - n8] += static_cast<double>(x[i]) * static_cast<double>(x[i]);
    for (double a : acc) sq += a;
  }
  const double norm = std::sqrt(sq);
  if (maxNorm > 0 && norm > maxNorm) {
    const float coef = static_cast<float>(maxNorm / (norm + 1e-6));
    for (auto& np : grads.list()) *np.value *= coef;
  }
  return norm;
}

}  // namespace mhascope::train
