// A double-precision finite-difference check: an independent float64 forward of the same model,
// written here from the equations (test-only oracle, like the PyTorch fixtures), differentiated
// by central differences (step 1e-5), against our float32 backward — every entry of every
// parameter tensor of a 2-layer model with MLP.
#include <gtest/gtest.h>

#include <cmath>

#include "attention/random.hpp"
#include "train/model.hpp"

using namespace mhascope;
using namespace mhascope::train;

namespace {

using MatD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// The parameters as double matrices, same order as GptParams::list().
using ParamsD = std::vector<MatD>;

MatD layerNorm(const MatD& x, const MatD& w, const MatD& b) {
  MatD y(x.rows(), x.cols());
  for (Eigen::Index r = 0; r < x.rows(); ++r) {
    const double mean = x.row(r).mean();
    const double var = (x.row(r).array() - mean).square().mean();
    y.row(r) = ((x.row(r).array() - mean) / std::sqrt(var + 1e-5)).matrix().cwiseProduct(w.row(0)) + b.row(0);
  }
  return y;
}

MatD linear(const MatD& x, const MatD& W, const MatD& b) {
  MatD y = x * W.transpose();
  y.rowwise() += b.row(0);
  return y;
}

double lossD(const ParamsD& P, const GptConfig& cfg, const Batch& bt) {
  const int B = bt.batch, T = bt.seq, d = cfg.dModel, h = cfg.heads, dk = d / h;
  std::size_t k = 0;
  const MatD& emb = P[k++];
  const MatD& pos = P[k++];
  MatD x(B * T, d);
  for (int r = 0; r < B * T; ++r) x.row(r) = emb.row(bt.tokens[static_cast<std::size_t>(r)]) + pos.row(r % T);
  for (int l = 0; l < cfg.layers; ++l) {
    const MatD &ln1w = P[k], &ln1b = P[k + 1], &inW = P[k + 2], &inB = P[k + 3], &outW = P[k + 4], &outB = P[k + 5];
    k += 6;
    const MatD a = layerNorm(x, ln1w, ln1b);
    const MatD qkv = linear(a, inW, inB);  // (B*T, 3d)
    MatD concat(B * T, d);
    for (int b = 0; b < B; ++b) {
      for (int i = 0; i < h; ++i) {
        const MatD q = qkv.block(b * T, i * dk, T, dk), kk = qkv.block(b * T, d + i * dk, T, dk),
                   v = qkv.block(b * T, 2 * d + i * dk, T, dk);
        MatD s = q * kk.transpose() / std::sqrt(static_cast<double>(dk));
        for (int t = 0; t < T; ++t) {
          for (int u = t + 1; u < T; ++u) s(t, u) = -INFINITY;  // causal
          const double m = s.row(t).maxCoeff();
          s.row(t) = (s.row(t).array() - m).exp().matrix();
          s.row(t) /= s.row(t).sum();
        }
        concat.block(b * T, i * dk, T, dk) = s * v;
      }
    }
    x += linear(concat, outW, outB);
    if (cfg.mlp) {
      const MatD &ln2w = P[k], &ln2b = P[k + 1], &W1 = P[k + 2], &b1 = P[k + 3], &W2 = P[k + 4], &b2 = P[k + 5];
      k += 6;
      MatD hdn = linear(layerNorm(x, ln2w, ln2b), W1, b1);
      for (Eigen::Index i = 0; i < hdn.size(); ++i) {
        const double z = hdn.data()[i];
        hdn.data()[i] = 0.5 * z * (1.0 + std::erf(z / std::sqrt(2.0)));
      }
      x += linear(hdn, W2, b2);
    }
  }
  const MatD logits = linear(layerNorm(x, P[k], P[k + 1]), P[k + 2], P[k + 3]);
  double sum = 0;
  int n = 0;
  for (int r = 0; r < B * T; ++r) {
    const int t = bt.targets[static_cast<std::size_t>(r)];
    if (t < 0) continue;
    const double m = logits.row(r).maxCoeff();
    sum += std::log((logits.row(r).array() - m).exp().sum()) - (logits(r, t) - m);
    ++n;
  }
  return sum / n;
}

}  // namespace

TEST(TrainGradient, DoublePrecisionFiniteDifferenceEveryEntry) {
  const GptConfig cfg{5, 5, 4, 2, 2, true};
  GptParams p = initParams(cfg, 11);
  SplitMix64 rng(5);
  for (auto& np : p.list()) {
    if (np.isVector) {
      for (Eigen::Index i = 0; i < np.value->size(); ++i) np.value->data()[i] += rng.uniform(-0.3f, 0.3f);
    }
  }
  Batch b{2, 5, {}, {}};
  for (int i = 0; i < 10; ++i) {
    b.tokens.push_back(static_cast<int>(rng.next() % 5));
    b.targets.push_back(i % 5 == 0 ? -1 : static_cast<int>(rng.next() % 5));
  }
  ForwardCache cache;
  auto ours = forward(p, b, cache);
  ASSERT_TRUE(ours.ok());
  GptParams g = zeroParams(cfg);
  backward(p, b, cache, g);

  ParamsD P;
  for (auto& np : p.list()) P.push_back(np.value->cast<double>());
  EXPECT_NEAR(lossD(P, cfg, b), ours->loss, 1e-5);  // the oracle is the same function
  auto grads = g.list();
  const double eps = 1e-5;
  int checked = 0;
  for (std::size_t t = 0; t < P.size(); ++t) {
    for (Eigen::Index i = 0; i < P[t].size(); ++i) {
      const double old = P[t].data()[i];
      P[t].data()[i] = old + eps;
      const double lp = lossD(P, cfg, b);
      P[t].data()[i] = old - eps;
      const double lm = lossD(P, cfg, b);
      P[t].data()[i] = old;
      const double fd = (lp - lm) / (2 * eps);
      EXPECT_NEAR(grads[t].value->data()[i], fd, 1e-5 + 1e-3 * std::abs(fd)) << grads[t].name << "[" << i << "]";
      ++checked;
    }
  }
  EXPECT_EQ(checked, static_cast<int>(p.count()));
}
