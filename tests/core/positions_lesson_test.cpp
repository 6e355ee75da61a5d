// The Positions lesson (core/lessons/positions.hpp): RoPE's score table unchanged when every
// position shifts by Δ while shifted sinusoidal codes change it, the rotation frequencies against
// the engine's rotation, ALiBi's slopes and bias table against the engine, the configuration's own
// codes taken off the inputs, and the lesson's sentences against its numbers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "attention/model.hpp"
#include "lesson_fixtures.hpp"
#include "lessons/common.hpp"
#include "lessons/lessons.hpp"

namespace mhascope {
namespace {

using lesson_detail::num;
using lesson_fixtures::buildOrDie;
using lesson_fixtures::has;
using lesson_fixtures::sized;
using lesson_fixtures::traceOf;

PositionsLesson lessonOrDie(const Model& m, int shift, bool codes) {
  auto r = positionsLesson(m, shift, codes);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return std::move(r).value();
}

TEST(PositionsLesson, RopeScoresDoNotMoveWithTheShiftSinusoidalOnesDo) {
  for (auto [d, h, kv, causal] : {std::tuple{8, 2, 0, false}, {16, 4, 2, true}, {24, 3, 0, false}, {32, 8, 1, true}}) {
    ModelConfig cfg = sized(d, h);
    cfg.kvHeads = kv;
    cfg.mask = causal ? MaskKind::Causal : MaskKind::None;
    cfg.batch = 2;
    const Model m = buildOrDie(cfg);
    for (int shift : {1, 5, 100, 1000}) {
      const PositionsLesson r = lessonOrDie(m, shift, cfg.positions);
      ASSERT_TRUE(r.ropeError.empty()) << r.ropeError;
      EXPECT_LT(r.ropeShiftMax, 1e-5) << "d=" << d << " h=" << h << " shift=" << shift;
      EXPECT_GT(r.ropeScoreMax, 0.1);
      EXPECT_GT(r.sinusoidalShiftMax, 1e-2) << "d=" << d << " h=" << h << " shift=" << shift;
      EXPECT_EQ(r.ropeShiftDiff.shape, r.rope.shapeOf(StageId::Scores));
    }
    // Δ = 0: the lesson's own rotation gives the engine's scores (to the products' rounding).
    EXPECT_LT(lessonOrDie(m, 0, cfg.positions).ropeShiftMax, 1e-5);
    EXPECT_EQ(lessonOrDie(m, 0, cfg.positions).sinusoidalShiftMax, 0.0);
  }
}

TEST(PositionsLesson, FrequenciesAreTheEnginesRotation) {
  for (RopeStyle style : {RopeStyle::Half, RopeStyle::Interleaved}) {
    const int dk = 8;
    const auto f = ropeFrequencies(dk, 10000.0f, style, 7);
    ASSERT_EQ(f.size(), 4u);
    for (const RopeFrequency& p : f) {
      EXPECT_NEAR(p.invFreq, std::pow(10000.0, -2.0 * p.pair / dk), 1e-12);
      EXPECT_NEAR(p.wavelength, 2 * 3.14159265358979 / p.invFreq, 1e-9);
      EXPECT_NEAR(p.angleAtShift, 7 * p.invFreq, 1e-12);
      // The engine turns feature A's unit vector at position 3 by 3 * inv_freq within its pair.
      std::vector<float> x(dk, 0.0f);
      x[static_cast<std::size_t>(p.featureA)] = 1.0f;
      rotatePositions(x.data(), 1, dk, 3, 10000.0f, style);
      const double angle = std::atan2(x[static_cast<std::size_t>(p.featureB)], x[static_cast<std::size_t>(p.featureA)]);
      EXPECT_NEAR(std::remainder(angle - 3 * p.invFreq, 2 * 3.14159265358979), 0.0, 1e-6) << "pair " << p.pair;
    }
  }
  EXPECT_EQ(ropeFrequencies(8, 10000.0f, RopeStyle::Half, 0)[1].featureB, 5);        // (i, i + d_k/2)
  EXPECT_EQ(ropeFrequencies(8, 10000.0f, RopeStyle::Interleaved, 0)[1].featureB, 3);  // (2i, 2i + 1)
}

// A model that gives its own RoPE frequencies (Llama 3.1's scaled RoPE, a layer of a model folder):
// the lesson's RoPE run and its shift use them, and sinusoidal / ALiBi run without them (they are
// RoPE's alone, and the engine refuses them elsewhere).
TEST(PositionsLesson, TheModelsOwnFrequenciesAreKeptForRopeOnly) {
  ModelConfig cfg = sized(16, 2);  // d_k = 8: four pairs
  cfg.attnPositions = AttnPositions::Rope;
  cfg.positions = false;
  cfg.mask = MaskKind::Causal;
  Model m = buildOrDie(cfg);
  m.options.ropeInvFreq = {1.0, 0.1, 0.004, 0.0001};
  const PositionsLesson r = lessonOrDie(m, 9, false);
  ASSERT_TRUE(r.ropeError.empty()) << r.ropeError;
  ASSERT_EQ(r.frequencies.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) EXPECT_DOUBLE_EQ(r.frequencies[i].invFreq, m.options.ropeInvFreq[i]);
  EXPECT_LT(r.ropeShiftMax, 1e-5);  // the shift turned q and k with the same frequencies the engine used
  // The lesson's RoPE run is the model's own forward.
  Trace own;
  ASSERT_TRUE(forward(m.inputs, m.weights, m.options, own).ok());
  EXPECT_EQ(r.rope.tensor(StageId::Scores).data, own.tensor(StageId::Scores).data);
  EXPECT_TRUE(has(ropeFrequencyText(r), "its own inv_freq"));
  // With the base's frequencies instead, the scores differ: the given ones were used.
  m.options.ropeInvFreq.clear();
  EXPECT_NE(lessonOrDie(m, 9, false).rope.tensor(StageId::Scores).data, own.tensor(StageId::Scores).data);
}

TEST(PositionsLesson, AlibiSlopesAndBiasAreTheEngines) {
  const Model m = buildOrDie(sized(16, 8));
  const PositionsLesson r = lessonOrDie(m, 3, true);
  ASSERT_EQ(r.slopes.size(), 8u);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(r.slopes[static_cast<std::size_t>(i)], std::ldexp(1.0f, -(i + 1)));  // 2^-1 .. 2^-8
  const Tensor& bias = r.alibi.tensor(StageId::PositionBias);  // (1, h, T_q, T_k), no causal mask: -m |t - j|
  const int T = r.alibi.tq;
  for (int i = 0; i < 8; ++i)
    for (int t = 0; t < T; ++t)
      for (int j = 0; j < T; ++j)
        EXPECT_EQ(bias.data[static_cast<std::size_t>((i * T + t) * T + j)],
                  -r.slopes[static_cast<std::size_t>(i)] * static_cast<float>(std::abs(t - j)));
  const std::string s = alibiSlopesText(r);
  EXPECT_TRUE(has(s, "m = 2^-1, 2^-2, 2^-3, 2^-4, 2^-5, 2^-6, 2^-7, 2^-8.")) << s;
  EXPECT_TRUE(has(s, "h is a power of two")) << s;
  EXPECT_TRUE(has(s, "Head 0 subtracts 0.5 per token")) << s;
  EXPECT_TRUE(has(s, "head 7 only 0.00391")) << s;
  const PositionsLesson six = lessonOrDie(buildOrDie(sized(12, 6)), 3, true);
  EXPECT_TRUE(has(alibiSlopesText(six), "h is not a power of two")) << alibiSlopesText(six);
}

TEST(PositionsLesson, TheConfigurationsCodesAreTakenOffForRopeAndAlibi) {
  ModelConfig with = sized(16, 4), without = with;
  without.positions = false;
  const Model m = buildOrDie(with), plain = buildOrDie(without);
  const PositionsLesson r = lessonOrDie(m, 4, true);
  EXPECT_TRUE(r.codesRemoved);
  auto maxDiff = [](const Tensor& a, const Tensor& b) {
    double d = 0;
    for (std::size_t i = 0; i < a.data.size(); ++i) d = std::max(d, std::abs(static_cast<double>(a.data[i]) - b.data[i]));
    return d;
  };
  EXPECT_LT(maxDiff(r.alibi.tensor(StageId::Query), plain.inputs.query), 1e-5);
  EXPECT_LT(maxDiff(r.rope.tensor(StageId::Query), plain.inputs.query), 1e-5);
  EXPECT_LT(maxDiff(r.sinusoidal.tensor(StageId::Query), m.inputs.query), 1e-5);
  // Inputs without codes are taken as they are: the same three runs.
  const PositionsLesson p = lessonOrDie(plain, 4, false);
  EXPECT_LT(maxDiff(p.sinusoidal.tensor(StageId::Weights), r.sinusoidal.tensor(StageId::Weights)), 1e-5);
  EXPECT_LT(maxDiff(p.rope.tensor(StageId::Weights), r.rope.tensor(StageId::Weights)), 1e-5);
}

TEST(PositionsLesson, OddDkRefusesRopeAloneAndSaysWhy) {
  const PositionsLesson r = lessonOrDie(buildOrDie(sized(6, 2)), 2, true);  // d_k = 3
  EXPECT_FALSE(r.ropeError.empty());
  EXPECT_TRUE(has(r.ropeError, "d_k")) << r.ropeError;
  EXPECT_TRUE(has(positionsShiftText(r), "RoPE cannot run here")) << positionsShiftText(r);
  EXPECT_GT(r.sinusoidalShiftMax, 0.0);
  EXPECT_EQ(r.alibi.heads, 2);
}

TEST(PositionsLesson, SentencesCarryTheLiveNumbers) {
  const Model m = buildOrDie(sized(16, 2));
  const PositionsLesson r = lessonOrDie(m, 5, true);
  const std::string s = positionsShiftText(r);
  EXPECT_TRUE(has(s, "Every position moved by Δ = 5")) << s;
  EXPECT_TRUE(has(s, "changes by at most " + num(r.ropeShiftMax, 2) + " (scores reach " + num(r.ropeScoreMax, 3))) << s;
  EXPECT_TRUE(has(s, "it is unchanged")) << s;
  EXPECT_TRUE(has(s, "change it by up to " + num(r.sinusoidalShiftMax, 3))) << s;
  EXPECT_TRUE(has(positionsShiftText(lessonOrDie(m, 0, true)), "nothing moves"));
  const std::string f = ropeFrequencyText(r);  // d_k = 8: pair 0 turns 1 rad, pair 3 10000^(-6/8)
  EXPECT_TRUE(has(f, "Pair 0 (features 0, 4) turns by 1 rad per position, a full turn every 6.28 tokens")) << f;
  EXPECT_TRUE(has(f, "the last pair, 3 (features 3, 7), by " + num(std::pow(10000.0, -0.75), 3))) << f;
  EXPECT_TRUE(has(f, "rotate-half")) << f;
}

TEST(PositionsLesson, DegenerateShapesAndCrossAttention) {
  const PositionsLesson one = lessonOrDie(buildOrDie(sized(4, 1, "word")), 9, true);  // T = 1, h = 1
  EXPECT_LT(one.ropeShiftMax, 1e-5);
  EXPECT_EQ(one.slopes.size(), 1u);
  ModelConfig cross = sized(16, 4, "a b c d e|f g h i j");
  cross.crossAttention = true;
  cross.kvText = "k l m|n o";
  cross.kvHeads = 2;
  const PositionsLesson r = lessonOrDie(buildOrDie(cross), 11, true);
  ASSERT_TRUE(r.ropeError.empty()) << r.ropeError;
  EXPECT_NE(r.rope.tq, r.rope.tk);
  EXPECT_LT(r.ropeShiftMax, 1e-5);
  EXPECT_GT(r.sinusoidalShiftMax, 1e-2);
}

// PE(p + k) = R_k PE(p): checked independently of the lesson's helper, with R_k built from the 2017
// paper's frequencies 10000^(-2i/d_model) and applied to addPositionCode's PE(p); a wrong rotation
// (the angle's sign flipped) fails by whole units, so the check can fail.
TEST(PositionsLesson, SinusoidalShiftIsARotationThatDependsOnlyOnK) {
  for (int d : {2, 8, 9, 32, 64}) {
    for (int k : {1, 5, 100, 1000}) {
      double worst = 0, wrongSign = 0;
      for (int p = 0; p < 40; ++p) {
        std::vector<float> pe(static_cast<std::size_t>(d), 0.0f), shifted(static_cast<std::size_t>(d), 0.0f);
        addPositionCode(p, pe.data(), d);
        addPositionCode(p + k, shifted.data(), d);
        for (int i = 0; i + 1 < d; i += 2) {
          const double b = k * std::pow(10000.0, -static_cast<double>(i) / d);  // R_k's angle for this pair
          const double s = pe[static_cast<std::size_t>(i)], c = pe[static_cast<std::size_t>(i + 1)];
          const double gotS = shifted[static_cast<std::size_t>(i)], gotC = shifted[static_cast<std::size_t>(i + 1)];
          worst = std::max({worst, std::abs(s * std::cos(b) + c * std::sin(b) - gotS),
                            std::abs(c * std::cos(b) - s * std::sin(b) - gotC)});
          wrongSign = std::max(wrongSign, std::abs(s * std::cos(b) - c * std::sin(b) - gotS));
        }
      }
      EXPECT_LT(worst, 1e-5) << "d_model " << d << " k " << k;
      if (d >= 8) EXPECT_GT(wrongSign, 0.1) << "d_model " << d << " k " << k;
      EXPECT_LT(sinusoidalShiftAsRotation(d, 40, k), 1e-5) << "d_model " << d << " k " << k;
      EXPECT_LE(std::abs(sinusoidalShiftAsRotation(d, 40, k) - worst), 1e-6);
    }
  }
  EXPECT_EQ(sinusoidalShiftAsRotation(1, 10, 3), 0.0);  // no complete pair
}

// The theory text's live numbers: the rotation check at this d_model, T and Δ, and RoPE's decay
// mean_i cos(m · base^(-2i/d_k)) at each stated distance, recomputed here from the base.
TEST(PositionsLesson, TheoryTextStatesTheNumbersItsFormulasGive) {
  for (auto [d, h, shift] : {std::tuple{16, 2, 5}, {32, 4, 100}, {64, 4, 7}}) {
    const Model m = buildOrDie(sized(d, h));
    const PositionsLesson r = lessonOrDie(m, shift, true);
    const std::string text = positionsTheoryText(r);
    const int T = static_cast<int>(m.inputs.query.dim(1));
    const std::string D = std::to_string(shift);
    EXPECT_TRUE(has(text, "PE(p + " + D + ") = R_" + D + " PE(p)")) << text;
    EXPECT_TRUE(has(text, "Checked at d_model = " + std::to_string(d) + ": max |R_" + D + " PE(p) - PE(p + " + D +
                              ")| over p = 0 .. " + std::to_string(T - 1) + " is " +
                              num(sinusoidalShiftAsRotation(d, T, shift), 2)))
        << text;
    EXPECT_LT(r.sinusoidalRotationMax, 1e-5);
    const int dk = d / h;
    for (int dist : kRopeDecayDistances) {
      double mean = 0;
      for (int i = 0; i < dk / 2; ++i) mean += std::cos(dist * std::pow(10000.0, -2.0 * i / dk));
      mean /= dk / 2;
      EXPECT_TRUE(has(text, num(mean, 3) + " at m = " + lesson_detail::grouped(dist))) << dist << ": " << text;
    }
    EXPECT_TRUE(has(text, "Su et al. 2021")) << text;
    EXPECT_TRUE(has(text, "Llama 3.1's rope_type llama3")) << text;
    EXPECT_TRUE(has(text, "Press et al. 2022")) << text;
  }
  // Aligned q and k score less far apart at the default base: the decay the text names.
  const auto f = ropeFrequencies(64, 10000.0f, RopeStyle::Half, 0);
  EXPECT_DOUBLE_EQ(ropeAlignedScore(f, 0), 1.0);
  EXPECT_LT(std::abs(ropeAlignedScore(f, 1000)), ropeAlignedScore(f, 1));
  // "with many (d_k 64 or 128) the mean falls with the distance": at every stated distance.
  for (int dk : {64, 128}) {
    const auto many = ropeFrequencies(dk, 10000.0f, RopeStyle::Half, 0);
    double previous = ropeAlignedScore(many, 0);
    for (int dist : kRopeDecayDistances) {
      EXPECT_LT(ropeAlignedScore(many, dist), previous) << "d_k " << dk << " m " << dist;
      previous = ropeAlignedScore(many, dist);
    }
  }
}

// The intro's first sentence on the engine: no position code and no mask, a shuffled text gives the
// same output rows, shuffled; under the causal mask it does not (token t sees t + 1 tokens).
TEST(PositionsLesson, NoPositionsNoMaskIsPermutationEquivariant) {
  for (bool causal : {false, true}) {
    ModelConfig a = sized(16, 4, "the cat sat on mats");
    a.positions = false;
    a.mask = causal ? MaskKind::Causal : MaskKind::None;
    ModelConfig b = a;
    b.text = "on the mats cat sat";  // position i of b holds token perm[i] of a
    const int perm[] = {3, 0, 4, 1, 2};
    const Tensor oa = traceOf(buildOrDie(a)).tensor(StageId::Output), ob = traceOf(buildOrDie(b)).tensor(StageId::Output);
    const std::int64_t d = oa.dim(2);
    double worst = 0;
    for (int i = 0; i < 5; ++i)
      for (std::int64_t f = 0; f < d; ++f)
        worst = std::max(worst, std::abs(static_cast<double>(ob.data[static_cast<std::size_t>(i * d + f)]) -
                                         oa.data[static_cast<std::size_t>(perm[i] * d + f)]));
    if (causal) {
      EXPECT_GT(worst, 1e-2);
    } else {
      EXPECT_LT(worst, 1e-5);
    }
  }
}

TEST(PositionsLesson, IntroSaysWhereOrderComesFrom) {
  const std::string intro = positionsLessonIntro();
  for (const char* said : {"Without a mask attention is permutation-equivariant",
                           "Under a causal mask a model with no position code can still infer position",
                           "Haviv et al. 2022", "Learned absolute positions (GPT-2"}) {
    EXPECT_TRUE(has(intro, said)) << said << ": " << intro;
  }
  for (const char* wrong : {"ignores order", "depends on their distance t - j alone"}) {
    EXPECT_FALSE(has(intro, wrong)) << wrong << ": " << intro;
  }
}

TEST(PositionsLesson, ShiftChoiceStaysInRange) {
  lessons::Positions::Choices c;
  c.shift = -3;
  c.keepInRange(Trace{});
  EXPECT_EQ(c.shift, 0);
  c.shift = 1 << 20;
  c.keepInRange(Trace{});
  EXPECT_EQ(c.shift, lessons::Positions::Choices::kMaxShift);
  EXPECT_FALSE(positionsLesson(buildOrDie(sized(8, 2)), -1, false).ok());
}

}  // namespace
}  // namespace mhascope
