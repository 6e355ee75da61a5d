// The mistake library against the engine: where an engine option expresses the mistake (the scale,
// RoPE's pairing), the library's continuation gives the engine's numbers; the continuation of a
// correct pipeline is the engine's own output; and each mistake changes what it says it changes.
#include "lessons/mistakes.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "attention/engine.hpp"
#include "attention/random.hpp"

namespace mhascope::mistakes_test {
namespace {

struct Case {
  AttentionInputs in;
  MhaWeights w;
  AttentionOptions opt;
};

Case setup(int B, int T, int d, int h, int N = 0, bool causal = true) {
  Case s;
  SplitMix64 rng(11);
  s.in.query = Tensor({B, T, d}, {"B", "T", "d_model"});
  for (float& v : s.in.query.data) v = rng.uniform(-1, 1);
  s.in.key = s.in.value = s.in.query;
  for (int b = 0; b < B; ++b) {
    std::vector<std::string> toks;
    for (int t = 0; t < T; ++t) toks.push_back(std::to_string(t));
    s.in.queryTokens.push_back(toks);
    s.in.keyTokens.push_back(toks);
  }
  s.opt.heads = h;
  s.opt.kvHeads = N;
  s.opt.causal = causal;
  s.w = initWeights(d, false, 5, (N > 0 ? N : h) * (d / h));
  return s;
}

Trace run(const Case& s) {
  Trace t;
  auto st = forward(s.in, s.w, s.opt, t);
  EXPECT_TRUE(st) << (st ? "" : st.error().message);
  return t;
}

double maxDiff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.numel(), b.numel());
  double m = 0;
  for (std::size_t i = 0; i < a.data.size() && i < b.data.size(); ++i) m = std::max(m, std::abs(double(a.data[i]) - b.data[i]));
  return m;
}

TEST(Mistakes, ScaleMistakesEqualTheEngineWithThatScale) {
  Case s = setup(2, 6, 16, 4);
  const Trace right = run(s);
  for (auto [m, kind] : {std::pair{Mistake::ScaleBySqrtDModel, ScaleKind::SqrtDModel}, std::pair{Mistake::NoScaling, ScaleKind::None}}) {
    Case w = s;
    w.opt.scale = kind;
    const Trace wrong = run(w);
    auto o = computeMistake(right, m);
    ASSERT_TRUE(o);
    EXPECT_LT(maxDiff(o->stage, wrong.copyOf(StageId::ScaledScores)), 1e-5);
    EXPECT_LT(maxDiff(o->weights, wrong.tensor(StageId::Weights)), 1e-5);
    EXPECT_LT(maxDiff(o->output, wrong.tensor(StageId::Output)), 1e-5);
    EXPECT_GT(maxDiff(o->output, right.tensor(StageId::Output)), 1e-3) << mistakeInfo(m).key;
  }
}

TEST(Mistakes, RopeInterleavedEqualsTheEngineWithInterleavedPairs) {
  Case s = setup(1, 7, 16, 2);
  s.opt.positions = AttnPositions::Rope;
  const Trace right = run(s);
  Case w = s;
  w.opt.ropeStyle = RopeStyle::Interleaved;
  const Trace wrong = run(w);
  auto o = computeMistake(right, Mistake::RopeInterleaved);
  ASSERT_TRUE(o);
  EXPECT_LT(maxDiff(o->stage, wrong.tensor(StageId::QRotated)), 1e-5);
  EXPECT_LT(maxDiff(o->output, wrong.tensor(StageId::Output)), 1e-5);
}

TEST(Mistakes, TheContinuationOfTheRightHeadsIsTheEnginesOutput) {
  // NoOutputProjection's output is the engine's concat; the tiled K/V heads with N = h change
  // nothing and are not offered; with N < h they change the scores.
  Case s = setup(2, 5, 16, 4, 2);
  const Trace t = run(s);
  auto none = computeMistake(t, Mistake::NoOutputProjection);
  ASSERT_TRUE(none);
  EXPECT_EQ(maxDiff(none->output, t.tensor(StageId::Concat)), 0.0);
  EXPECT_FALSE(computeMistake(run(setup(1, 5, 16, 4)), Mistake::KvHeadsTiled));
  auto tiled = computeMistake(t, Mistake::KvHeadsTiled);
  ASSERT_TRUE(tiled);
  EXPECT_GT(maxDiff(tiled->output, t.tensor(StageId::Output)), 1e-3);
  // Expanding K/V the right way and continuing gives the engine's weights and output.
  const Tensor k = expandKvHeads(t.tensor(StageId::KHeads), 4, false);
  const Tensor v = expandKvHeads(t.tensor(StageId::VHeads), 4, false);
  Tensor masked = scoresFromHeads(t.tensor(StageId::QHeads), k);
  for (std::size_t i = 0; i < masked.data.size(); ++i) {
    const std::size_t row = i / 5, kk = i % 5, q = row % 5;
    masked.data[i] = kk > q ? -INFINITY : masked.data[i] * t.scaleFactor;
  }
  const Tensor weights = softmaxRowsTorch(masked);
  EXPECT_LT(maxDiff(weights, t.tensor(StageId::Weights)), 1e-6);
  EXPECT_LT(maxDiff(headOutputsFrom(weights, v), t.tensor(StageId::HeadOutputs)), 1e-5);
}

TEST(Mistakes, MaskMistakesNeedAMaskAndFullyBlockedRowsAreNan) {
  const Trace open = run(setup(1, 4, 8, 2, 0, false));
  for (Mistake m : {Mistake::MaskIgnored, Mistake::MaskInverted, Mistake::MaskedWithZero, Mistake::MaskAfterSoftmax,
                    Mistake::CausalHidesDiagonal, Mistake::CausalWrongDirection}) {
    EXPECT_FALSE(computeMistake(open, m)) << mistakeInfo(m).key;
  }
  const Trace causal = run(setup(1, 4, 8, 2));
  auto diag = computeMistake(causal, Mistake::CausalHidesDiagonal);
  ASSERT_TRUE(diag);
  EXPECT_TRUE(std::isnan(diag->weights.data[0]));  // token 0 sees no key: torch's softmax gives NaN
  auto after = computeMistake(causal, Mistake::MaskAfterSoftmax);
  ASSERT_TRUE(after);
  float row1 = after->weights.data[4] + after->weights.data[5];
  EXPECT_LT(row1, 0.999f);  // rows no longer sum to 1
  EXPECT_EQ(after->weights.data[6], 0.0f);
  for (const MistakeInfo& i : allMistakes()) EXPECT_EQ(mistakeFromKey(i.key), i.id);
}

}  // namespace
}  // namespace mhascope::mistakes_test
