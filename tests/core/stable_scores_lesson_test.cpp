// The Stable scores lesson: each stabiliser's pass, made by the engine, against the formula the lesson
// states — q/k norm's bound, c tanh(s / c), the scale 1/sqrt(q_s) — at growths of q and k where the
// textbook scores blow up; the histograms and the cap's curve; the words with the live numbers.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "lesson_fixtures.hpp"
#include "lessons/stable_scores.hpp"

namespace mhascope {
namespace {

using lesson_fixtures::buildOrDie;
using lesson_fixtures::has;
using lesson_fixtures::sized;

StableScoresLesson lessonOf(const Model& m, float growth, bool qk, bool whole, bool cap, float c, bool scalar,
                            int qs) {
  auto r = stableScoresLesson(m, growth, qk, whole, cap, c, scalar, qs);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return std::move(r).value();
}

// |s| <= sqrt(n_q) max|g_q| sqrt(n_k) max|g_k| / sqrt(d_k) at every growth, while the textbook scores
// grow as g²; the normed scores do not move with g.
TEST(StableScoresLesson, QkNormBoundsEveryScoreWhateverTheGrowth) {
  const Model m = buildOrDie(sized(16, 4));  // d_k = 4
  const StableScoresLesson small = lessonOf(m, 1.0f, true, false, false, 50.0f, false, 0);
  const StableScoresLesson big = lessonOf(m, 30.0f, true, false, false, 50.0f, false, 0);
  EXPECT_EQ(small.bound.nq, 4);
  EXPECT_EQ(small.bound.nk, 4);
  EXPECT_FALSE(small.bound.learnedGains);
  EXPECT_DOUBLE_EQ(small.bound.value(), 2.0);  // sqrt(4) · sqrt(4) / sqrt(4) = sqrt(d_k)
  for (const StableScoresLesson* r : {&small, &big}) {
    EXPECT_LE(r->qkNorm.maxAbs, r->bound.value());
    EXPECT_GT(r->qkNorm.maxAbs, 0.2);
  }
  EXPECT_NEAR(big.raw.maxAbs, 900.0 * small.raw.maxAbs, 1e-3 * big.raw.maxAbs) << "the textbook scores grow as g²";
  EXPECT_NEAR(big.qkNorm.maxAbs, small.qkNorm.maxAbs, 1e-3) << "the normed scores forget the growth";
  EXPECT_LT(big.raw.meanEntropy, small.raw.meanEntropy) << "large scores make the weights peaked";
  EXPECT_NEAR(big.qkNorm.meanEntropy, small.qkNorm.meanEntropy, 1e-3);
  EXPECT_TRUE(has(stableQkNormText(small), "sqrt(4) · 1 · sqrt(4) · 1 · 0.5 = 2.")) << stableQkNormText(small);

  // Over the whole projection (OLMo 2): n_q = h·d_k, n_k = N·d_k, one head's part may hold all of it.
  const StableScoresLesson whole = lessonOf(m, 30.0f, true, true, false, 50.0f, false, 0);
  EXPECT_EQ(whole.bound.nq, 16);
  EXPECT_EQ(whole.bound.nk, 16);
  EXPECT_DOUBLE_EQ(whole.bound.value(), 8.0);
  EXPECT_LE(whole.qkNorm.maxAbs, whole.bound.value());

  // A layer with its own gains (a model folder's): the bound takes their largest |g|, sqrt(4) · 2 · sqrt(4) · 3 / 2.
  Model learned = m;
  learned.options.qNorm = {0.5f, -2.0f, 1.0f, 1.5f};
  learned.options.kNorm = {1.0f, 1.0f, 3.0f, 0.25f};
  const StableScoresLesson own = lessonOf(learned, 30.0f, true, true, false, 50.0f, false, 0);
  EXPECT_TRUE(own.bound.learnedGains);
  EXPECT_EQ(own.bound.nq, 4) << "the layer's gains decide the width, not the toggle";
  EXPECT_DOUBLE_EQ(own.bound.value(), 12.0);
  EXPECT_LE(own.qkNorm.maxAbs, own.bound.value());
  EXPECT_NE(own.qkNorm.maxAbs, big.qkNorm.maxAbs) << "the gains are the layer's";
  EXPECT_DOUBLE_EQ(own.raw.maxAbs, big.raw.maxAbs) << "the textbook pass has no norm";
  EXPECT_TRUE(has(stableQkNormText(own), "with the layer's own gains")) << stableQkNormText(own);
}

// The softcap pass's cells are c tanh(s / c) of the textbook pass's, within ±c; the combined pass
// is the cap of the normed scores at the scale 1/sqrt(q_s).
TEST(StableScoresLesson, SoftcapAndScaleAreTheStatedFormulasCellByCell) {
  ModelConfig cfg = sized(16, 4);
  cfg.mask = MaskKind::Causal;
  const Model m = buildOrDie(cfg);
  const float c = 5.0f;
  const StableScoresLesson r = lessonOf(m, 20.0f, true, false, true, c, true, 36);
  const std::size_t T = 7;
  ASSERT_EQ(r.raw.scores.size(), 4 * T * (T + 1) / 2) << "only the cells the causal mask leaves";
  ASSERT_EQ(r.softcap.scores.size(), r.raw.scores.size());
  const double ratio = std::sqrt(4.0 / 36.0);
  EXPECT_DOUBLE_EQ(r.scalarScale / r.rawScale, ratio);
  for (std::size_t i = 0; i < r.raw.scores.size(); ++i) {
    const double s = r.raw.scores[i];
    ASSERT_NEAR(r.softcap.scores[i], c * std::tanh(s / c), 1e-4 * std::max(1.0, std::abs(s))) << i;
    ASSERT_LE(std::abs(r.softcap.scores[i]), c) << "tanh rounds to 1 in float far past c";
    ASSERT_NEAR(r.scalar.scores[i], s * ratio, 1e-4 * std::max(1.0, std::abs(s))) << i;
    const double normed = r.qkNorm.scores[i] * ratio;
    ASSERT_NEAR(r.stabilised.scores[i], c * std::tanh(normed / c), 1e-4) << i;
  }
  EXPECT_GT(r.raw.maxAbs, 10.0 * c) << "g = 20 takes the textbook scores far past c";
  EXPECT_GT(r.capShareBent, 0.0);
  EXPECT_GT(r.capLargestCut, 0.5 * r.raw.maxAbs);
  EXPECT_TRUE(has(stableScalarText(r), "every score times 0.3333")) << stableScalarText(r);
  EXPECT_TRUE(has(stableSummaryText(r), "stabilised (q/k norm + softcap + q_s)")) << stableSummaryText(r);

  // q_s 0: d_model / h, the rule Gemma 2 27B follows (4608 / 32 = 144).
  EXPECT_EQ(lessonOf(m, 1.0f, false, false, false, c, false, 0).preAttnScalar, 4);
  EXPECT_FALSE(stableScoresLesson(m, 0.0f, true, false, true, c, true, 4).ok());
  EXPECT_FALSE(stableScoresLesson(m, 1.0f, true, false, true, 0.0f, true, 4).ok());
}

TEST(StableScoresLesson, HistogramsAndTheCapsCurve) {
  EXPECT_EQ(scoreHistogram({-1.0f, 0.0f, 0.99f, 5.0f, -7.0f}, -1.0, 1.0, 4), (std::vector<int>{2, 0, 1, 2}));
  const std::vector<CurvePoint> curve = softcapCurve(2.0, 4.0, 5);
  ASSERT_EQ(curve.size(), 5u);
  for (const CurvePoint& p : curve) EXPECT_DOUBLE_EQ(p.capped, 2.0 * std::tanh(p.s / 2.0));
  EXPECT_DOUBLE_EQ(curve.front().s, -4.0);
  EXPECT_DOUBLE_EQ(curve[2].s, 0.0);

  const Model m = buildOrDie(sized(16, 4));
  const StableScoresLesson r = lessonOf(m, 10.0f, false, false, true, 5.0f, false, 0);
  int rawCount = 0, stableCount = 0;
  for (int n : r.rawHistogram) rawCount += n;
  for (int n : r.stableHistogram) stableCount += n;
  EXPECT_EQ(rawCount, static_cast<int>(r.raw.scores.size()));
  EXPECT_EQ(stableCount, rawCount);
  EXPECT_DOUBLE_EQ(r.histRange, r.raw.maxAbs) << "one axis for both, the wider one's";
  EXPECT_GE(r.curveRange, r.raw.maxAbs) << "every textbook score falls on the curve's axis";
  EXPECT_EQ(r.published.size(), 5u);
}

}  // namespace
}  // namespace mhascope
