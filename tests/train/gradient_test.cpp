// Finite-difference checks of the backward pass: every parameter tensor of small models (1 and
// 2 layers, with and without MLP, causal attention through the engine). The loss is the float
// forward summed in double; central differences with a step of 1e-2 keep the float rounding
// (~1e-7 relative) far below the tolerance.
#include <gtest/gtest.h>

#include <cmath>

#include "attention/random.hpp"
#include "train/model.hpp"
#include "train/ops.hpp"

using namespace mhascope;
using namespace mhascope::train;

namespace {

Batch randomBatch(int B, int T, int V, std::uint64_t seed) {
  SplitMix64 rng(seed);
  Batch b{B, T, {}, {}};
  for (int i = 0; i < B * T; ++i) {
    b.tokens.push_back(static_cast<int>(rng.next() % static_cast<std::uint64_t>(V)));
    // Some positions are not predictable (-1): they must get no gradient.
    b.targets.push_back(i % 3 == 0 ? -1 : static_cast<int>(rng.next() % static_cast<std::uint64_t>(V)));
  }
  return b;
}

void checkModel(const GptConfig& cfg) {
  GptParams p = initParams(cfg, 7);
  // Non-trivial LayerNorm affine parameters and biases so their gradients are exercised.
  SplitMix64 rng(99);
  for (auto& np : p.list()) {
    if (np.isVector) {
      for (Eigen::Index i = 0; i < np.value->size(); ++i) np.value->data()[i] += rng.uniform(-0.3f, 0.3f);
    }
  }
  const Batch b = randomBatch(2, cfg.seqLen, cfg.vocab, 3);
  ForwardCache cache;
  ASSERT_TRUE(forward(p, b, cache).ok());
  GptParams g = zeroParams(cfg);
  backward(p, b, cache, g);
  auto params = p.list();
  auto grads = g.list();
  const float h = 1e-2f;
  int checked = 0;
  for (std::size_t t = 0; t < params.size(); ++t) {
    RowMatrix& v = *params[t].value;
    // Up to 12 entries per tensor, spread over it.
    const Eigen::Index n = v.size(), stride = std::max<Eigen::Index>(1, n / 12);
    for (Eigen::Index i = 0; i < n; i += stride) {
      const float old = v.data()[i];
      v.data()[i] = old + h;
      const double lp = forward(p, b, cache)->loss;
      v.data()[i] = old - h;
      const double lm = forward(p, b, cache)->loss;
      v.data()[i] = old;
      const double fd = (lp - lm) / (2.0 * h);
      const double an = grads[t].value->data()[i];
      EXPECT_NEAR(an, fd, 2e-3 + 3e-2 * std::abs(fd)) << params[t].name << "[" << i << "]";
      ++checked;
    }
  }
  EXPECT_GT(checked, 50);
}

}  // namespace

TEST(TrainGradient, FiniteDifferenceOneLayerAttentionOnly) { checkModel({7, 6, 8, 2, 1, false}); }
TEST(TrainGradient, FiniteDifferenceTwoLayersAttentionOnly) { checkModel({7, 6, 8, 2, 2, false}); }
TEST(TrainGradient, FiniteDifferenceTwoLayersWithMlp) { checkModel({7, 6, 8, 4, 2, true}); }

// The element-wise ops in double-checkable isolation: GELU's derivative at a few points.
TEST(TrainGradient, GeluDerivativeMatchesDifference) {
  RowMatrix x(1, 5);
  x << -3.0f, -0.7f, 0.0f, 0.4f, 2.5f;
  RowMatrix dy = RowMatrix::Ones(1, 5), dx;
  geluBackward(x, dy, dx);
  for (int i = 0; i < 5; ++i) {
    const double v = x(0, i), e = 1e-4;
    auto gelu = [](double z) { return 0.5 * z * (1.0 + std::erf(z / std::sqrt(2.0))); };
    EXPECT_NEAR(dx(0, i), (gelu(v + e) - gelu(v - e)) / (2 * e), 1e-5);
  }
}

// Positions whose target is -1 contribute nothing.
TEST(TrainGradient, UnpredictablePositionsGetNoLogitGradient) {
  RowMatrix logits = RowMatrix::Random(3, 4), d;
  const auto r = crossEntropy(logits, {-1, 2, -1}, &d);
  EXPECT_EQ(r.count, 1);
  EXPECT_EQ(d.row(0).cwiseAbs().sum(), 0.0f);
  EXPECT_EQ(d.row(2).cwiseAbs().sum(), 0.0f);
  EXPECT_NEAR(d.row(1).sum(), 0.0f, 1e-6);
}
