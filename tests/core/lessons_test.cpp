// The lessons' numbers (core/lessons/<name>.hpp): loop vs vectorized (split), the parameter
// table, mix-then-split, the roles lesson's specialists preset and its score_override format, mask
// comparison, every pitfall's checks, the cost sweep and the cell breakdown. The quiz:
// lesson_quiz_test.cpp.
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <set>

#include "lessons/lessons.hpp"
#include "attention/model.hpp"
#include "io/presets.hpp"
#include "lesson_fixtures.hpp"

namespace mhascope {
namespace {

using lesson_fixtures::buildOrDie;
using lesson_fixtures::findQuestion;
using lesson_fixtures::sized;
using lesson_fixtures::traceOf;
using lesson_fixtures::weightAt;

int tokenIndex(const Trace& t, const std::string& token) {
  for (std::size_t i = 0; i < t.queryTokens[0].size(); ++i)
    if (t.queryTokens[0][i] == token) return static_cast<int>(i);
  ADD_FAILURE() << "token '" << token << "' not in the sentence";
  return 0;
}

// ---------------------------------------------------------------------------------------------
// 1. loop vs vectorized
// ---------------------------------------------------------------------------------------------

// Heads of a width of their own (h·d_k ≠ d_model): the per-head loop slices W_q's h·d_k columns the same way.
TEST(LessonLoopVsVectorized, PerHeadLoopMatchesEngineWithHeadsNotDModelOverH) {
  for (auto [d, h, dk] : {std::tuple{8, 2, 8}, {12, 3, 2}, {8, 4, 6}}) {
    ModelConfig cfg = sized(d, h);
    cfg.headDim = dk;
    auto r = perHeadLoopVsVectorized(buildOrDie(cfg));
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->dk, dk);
    EXPECT_LT(r->loopMaxAbsDiff, 1e-5) << "d_model " << d << " h " << h << " d_k " << dk;
  }
}

TEST(LessonLoopVsVectorized, PerHeadLoopMatchesEngineEveryStage) {
  for (auto [d, h] : {std::pair{8, 2}, {12, 3}, {16, 4}, {8, 8}, {6, 1}}) {
    ModelConfig cfg = sized(d, h);
    cfg.batch = 2;
    cfg.mask = MaskKind::Causal;
    cfg.padLastKeys = 1;
    auto r = perHeadLoopVsVectorized(buildOrDie(cfg));
    ASSERT_TRUE(r.ok()) << r.error().message;
    ASSERT_EQ(r->loopVsVectorized.size(), 10u);
    for (const auto& s : r->loopVsVectorized) {
      EXPECT_LT(s.maxAbsDiff, 1e-5) << "d_model " << d << " h " << h << " stage " << stageInfo(s.stage).name;
    }
    EXPECT_LT(r->loopMaxAbsDiff, 1e-5);
  }
}

// The loop handles the variants in its own words (query head i reads K/V head i / (h/N), RoPE on the
// split heads, ALiBi's bias before the mask) and still agrees with the engine at every stage,
// including the rotated ones.
TEST(LessonLoopVsVectorized, PerHeadLoopMatchesEngineWithGqaRopeAlibiAndWindow) {
  struct Case {
    int kv;
    AttnPositions pos;
    RopeStyle style;
    int window, sinks;
    MaskKind mask;
  };
  for (const Case c : {Case{2, AttnPositions::Rope, RopeStyle::Half, 0, 0, MaskKind::Causal},
                       Case{1, AttnPositions::Rope, RopeStyle::Interleaved, 3, 1, MaskKind::None},
                       Case{4, AttnPositions::Alibi, RopeStyle::Half, 2, 0, MaskKind::Causal},
                       Case{2, AttnPositions::None, RopeStyle::Half, 0, 0, MaskKind::None}}) {
    ModelConfig cfg = sized(16, 4);
    cfg.batch = 2;
    cfg.kvHeads = c.kv;
    cfg.attnPositions = c.pos;
    cfg.ropeStyle = c.style;
    cfg.window = c.window;
    cfg.sinks = c.sinks;
    cfg.mask = c.mask;
    auto r = perHeadLoopVsVectorized(buildOrDie(cfg));
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->kvHeads, c.kv);
    EXPECT_EQ(r->loopVsVectorized.size(), c.pos == AttnPositions::Rope ? 12u : 10u);
    bool rotatedCompared = false;
    for (const auto& s : r->loopVsVectorized) {
      EXPECT_LT(s.maxAbsDiff, 1e-5) << "N " << c.kv << " stage " << stageInfo(s.stage).name;
      rotatedCompared = rotatedCompared || s.stage == StageId::KRotated;
    }
    EXPECT_EQ(rotatedCompared, c.pos == AttnPositions::Rope);
    EXPECT_GT(r->skippedOutputMaxAbsDiff, 1e-3);  // the skipped transpose still shows its damage
  }
}

TEST(LessonLoopVsVectorized, SkippedTransposeBuildsHeadsFromWrongNumbers) {
  auto r = perHeadLoopVsVectorized(buildOrDie(sized(8, 2)));
  ASSERT_TRUE(r.ok()) << r.error().message;
  // Head 0 row 1 column 0 with the transpose skipped: offset (0*T + 1)*d_k = 4 of token 0's row.
  EXPECT_EQ(r->skippedSource(0, 1, 0).token, 0);
  EXPECT_EQ(r->skippedSource(0, 1, 0).feature, 4);
  // Head 1 row 0: offset T*d_k = 7*4 = 28 → token 3, feature 4.
  EXPECT_EQ(r->skippedSource(1, 0, 0).token, 3);
  EXPECT_EQ(r->skippedSource(1, 0, 0).feature, 4);
  EXPECT_GT(r->skippedWrongToken, 0);
  EXPECT_GT(r->skippedOutputMaxAbsDiff, 1e-2);
  for (const auto& s : r->skippedVsCorrect) {
    if (s.stage == StageId::QHeads) EXPECT_GT(s.maxAbsDiff, 1e-2);
  }
}

TEST(LessonLoopVsVectorized, SkippedTransposeIsHarmlessWithOneHead) {
  auto r = perHeadLoopVsVectorized(buildOrDie(sized(8, 1)));
  ASSERT_TRUE(r.ok());
  EXPECT_LT(r->skippedOutputMaxAbsDiff, 1e-5);
  EXPECT_EQ(r->skippedWrongToken, 0);
}

// ---------------------------------------------------------------------------------------------
// 2. parameter table
// ---------------------------------------------------------------------------------------------

TEST(LessonParameterTable, FormulasAndEngineWeightsAgree) {
  auto p = parameterTable({512, 8});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->counts.dk, 64);
  EXPECT_EQ(p->oneHeadProjection, 512 * 64);
  EXPECT_EQ(p->qkvFullPerHead, 3LL * 8 * 512 * 512);
  EXPECT_EQ(p->qkvReducedPerHead, 3LL * 8 * 512 * 64);
  EXPECT_EQ(p->qkvReal, 3LL * 512 * 512);
  EXPECT_EQ(p->qkvReducedPerHead, p->qkvReal);  // h small matrices = one big one
  EXPECT_EQ(p->counts.wo, 512 * 512);
  EXPECT_EQ(p->counts.biases(), 4 * 512);
  EXPECT_EQ(p->counts.weights(), 4LL * 512 * 512);
  EXPECT_EQ(p->counts.withBias(), 4LL * 512 * 512 + 4 * 512);
  // The engine's weights hold exactly that many numbers.
  const MhaWeights w = initWeights(12, true, 1);
  auto q = parameterTable({12, 3});
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(w.wq.size() + w.wk.size() + w.wv.size() + w.wo.size(), q->counts.weights());
  EXPECT_EQ(w.wq.size() + w.wk.size() + w.wv.size(), q->qkvReal);
  EXPECT_EQ(w.bq.size() + w.bk.size() + w.bv.size() + w.bo.size(), q->counts.biases());
}

TEST(LessonParameterTable, GroupedKvHeadsShrinkOnlyWkAndWv) {
  // Llama-3-8B's attention: d_model 4096, 32 query heads, 8 K/V heads, d_k 128.
  auto p = parameterTable({4096, 32, 8});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->counts.kvHeads, 8);
  EXPECT_EQ(p->counts.wk, 4096LL * 8 * 128);
  EXPECT_EQ(p->counts.wq, 4096LL * 4096);
  EXPECT_EQ(p->counts.weights(), 2LL * 4096 * 4096 + 2LL * 4096 * 1024);
  EXPECT_EQ(p->counts.withBias(), p->counts.weights() + 2 * 4096 + 2 * 1024);
  EXPECT_EQ(p->qkvReducedPerHead, p->qkvReal);  // (h + 2N) heads of d_k = what W_q, W_k, W_v hold
  // N = h (and N = 0, "as h") is multi-head attention: 4 d_model^2.
  for (std::int64_t n : {0, 32}) {
    auto m = parameterTable({4096, 32, n});
    ASSERT_TRUE(m.ok());
    EXPECT_EQ(m->counts.weights(), 4LL * 4096 * 4096);
    EXPECT_EQ(m->counts.withBias(), 4LL * 4096 * 4096 + 4 * 4096);
  }
  // The engine's grouped weights hold exactly that many numbers.
  const MhaWeights w = initWeights(12, true, 1, /*kvWidth = N·d_k*/ 6);
  auto q = parameterTable({12, 2, 1});
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(w.wq.size() + w.wk.size() + w.wv.size() + w.wo.size(), q->counts.weights());
  EXPECT_EQ(w.wq.size() + w.wk.size() + w.wv.size() + w.wo.size() + w.bq.size() + w.bk.size() + w.bv.size() +
                w.bo.size(),
            q->counts.withBias());
  // N must divide h: the engine's own message, naming N, h and the valid choices.
  auto bad = parameterTable({12, 4, 3});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("kv heads (N = 3) must divide heads (h = 4)"), std::string::npos);
  EXPECT_NE(bad.error().message.find("valid N: 1, 2 or 4"), std::string::npos);
}

TEST(LessonParameterTable, BadSizesAreClearErrors) {
  auto a = parameterTable({10, 4});
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.error().message.find("d_model (10) must be divisible by heads (4)"), std::string::npos);
  EXPECT_FALSE(parameterTable({0, 1}).ok());
  EXPECT_FALSE(parameterTable({8, 0}).ok());
  EXPECT_FALSE(parameterTable({8, 16}).ok());
}

// ---------------------------------------------------------------------------------------------
// 3. mix then split
// ---------------------------------------------------------------------------------------------

TEST(LessonMixThenSplit, TermsSumToTheRecordedProjection) {
  const Model m = buildOrDie(sized(12, 3));
  const Trace t = traceOf(m);
  for (int j : {0, 5, 11}) {
    auto r = mixThenSplit(t, m.weights, 0, 2, j);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->terms.size(), 12u);
    EXPECT_EQ(r->ownerHead, j / 4);
    EXPECT_EQ(r->columnInHead, j % 4);
    EXPECT_NEAR(r->total, r->recorded, 1e-5);
    EXPECT_EQ(r->recorded, r->recordedInHead);  // the split only moves the number
    double s = 0;
    for (const auto& term : r->terms) s += static_cast<double>(term.x) * term.w;
    EXPECT_NEAR(s, r->sumOfTerms, 1e-9);
  }
  EXPECT_FALSE(mixThenSplit(t, m.weights, 0, 99, 0).ok());
  EXPECT_FALSE(mixThenSplit(t, m.weights, 0, 0, 12).ok());
  EXPECT_FALSE(mixThenSplit(t, m.weights, 1, 0, 0).ok());
}

// ---------------------------------------------------------------------------------------------
// 4. specialists preset, score_override
// ---------------------------------------------------------------------------------------------

TEST(LessonRoles, PresetHeadsDoWhatTheyWereSetTo) {
  auto cfg = loadPreset("specialists");
  ASSERT_TRUE(cfg.ok()) << cfg.error().message;
  EXPECT_EQ(cfg->heads, 2);
  const Model m = buildOrDie(*cfg);
  EXPECT_EQ(countAppliedScoreCells(*cfg, m), 4);
  const Trace t = traceOf(m);
  const int it = tokenIndex(t, "it"), soft = tokenIndex(t, "soft"), mat = tokenIndex(t, "mat"),
            sat = tokenIndex(t, "sat"), cat = tokenIndex(t, "cat");
  EXPECT_GT(weightAt(t, 0, 0, it, mat), 0.8f);
  EXPECT_GT(weightAt(t, 0, 0, soft, mat), 0.8f);
  EXPECT_GT(weightAt(t, 0, 1, sat, cat), 0.8f);
  EXPECT_GT(weightAt(t, 0, 1, cat, sat), 0.8f);
  // The links belong to one head only: head 1 has "it" looking at itself.
  EXPECT_GT(weightAt(t, 0, 1, it, it), 0.5f);
  EXPECT_LT(weightAt(t, 0, 1, it, mat), 0.1f);
  // Every other token mostly attends to itself, in both heads.
  for (int h = 0; h < 2; ++h)
    for (int q = 0; q < t.tq; ++q) {
      const bool linked = (h == 0 && (q == it || q == soft)) || (h == 1 && (q == sat || q == cat));
      if (!linked) EXPECT_GT(weightAt(t, 0, h, q, q), 0.5f) << "head " << h << " token " << t.queryTokens[0][q];
    }
}

TEST(LessonRoles, EditorCellRecomputesDownstream) {
  auto cfg = loadPreset("specialists");
  ASSERT_TRUE(cfg.ok());
  const Trace before = traceOf(buildOrDie(*cfg));
  const int it = tokenIndex(before, "it"), the = tokenIndex(before, "The");
  setScoreCell(*cfg, 0, it, the, 30.0f);  // positional cell listed last: wins over "it"->"mat"
  const Trace after = traceOf(buildOrDie(*cfg));
  EXPECT_GT(weightAt(after, 0, 0, it, the), 0.9f);
  EXPECT_LT(weightAt(after, 0, 0, it, tokenIndex(after, "mat")), 0.1f);
  const auto& o0 = before.tensor(StageId::Output).data;
  const auto& o1 = after.tensor(StageId::Output).data;
  double diff = 0;
  for (std::size_t i = 0; i < o0.size(); ++i) diff = std::max(diff, std::abs(static_cast<double>(o0[i] - o1[i])));
  EXPECT_GT(diff, 1e-3);
  setScoreCell(*cfg, 0, it, the, 31.0f);  // replaces, does not add
  EXPECT_EQ(cfg->scoreOverride.cells.size(), 5u);
  clearScoreCell(*cfg, 0, it, the);
  EXPECT_EQ(cfg->scoreOverride.cells.size(), 4u);
}

TEST(LessonRoles, ScoreOverrideRoundTripsAndIsStrict) {
  auto cfg = loadPreset("specialists");
  ASSERT_TRUE(cfg.ok());
  setScoreCell(*cfg, 1, 2, 3, -1.5f);
  auto again = parsePresetJson(presetToJson(*cfg), "roundtrip");
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(again->scoreOverride.cells.size(), cfg->scoreOverride.cells.size());
  EXPECT_EQ(again->scoreOverride.cells.back().query, 2);
  EXPECT_EQ(again->scoreOverride.cells.front().queryToken, "it");
  EXPECT_EQ(again->scoreOverride.self, cfg->scoreOverride.self);

  const std::string head = R"({"version": 1, "text": "a b c", "d_model": 4, "heads": 2, "score_override": )";
  auto errorOf = [&](const std::string& so) {
    auto r = parsePresetJson(head + so + "}", "p");
    return r.ok() ? std::string() : r.error().message;
  };
  EXPECT_NE(errorOf(R"({"diag": 1})").find("/score_override/diag"), std::string::npos);
  EXPECT_NE(errorOf(R"({"self": "big"})").find("/score_override/self must be a number"), std::string::npos);
  EXPECT_NE(errorOf(R"({"self": null})").find("NaN"), std::string::npos);
  EXPECT_NE(errorOf(R"({"cells": {}})").find("/score_override/cells must be an array"), std::string::npos);
  EXPECT_NE(errorOf(R"({"cells": [{"head": 0, "query": 0, "key": 1}]})").find("/score_override/cells/0/score"),
            std::string::npos);
  EXPECT_NE(errorOf(R"({"cells": [{"head": -1, "query": 0, "key": 1, "score": 1}]})").find("cells/0/head"),
            std::string::npos);
  EXPECT_NE(errorOf(R"({"cells": [{"head": 0, "query": 0, "key": true, "score": 1}]})").find("cells/0/key"),
            std::string::npos);
  EXPECT_NE(errorOf(R"({"cells": [{"head": 0, "query": 0, "key": 1, "score": 1, "x": 2}]})").find("cells/0/x"),
            std::string::npos);
  EXPECT_NE(errorOf(R"({"cells": [{"head": 18446744073709551615, "query": 0, "key": 1, "score": 1}]})")
                .find("cells/0/head"),
            std::string::npos);
  EXPECT_NE(errorOf("[]").find("/score_override must be an object"), std::string::npos);
  EXPECT_EQ(errorOf(R"({"cells": [{"head": 0, "query": "a", "key": 2, "score": 1e3}]})"), "");
}

TEST(LessonRoles, CellsThatDoNotFitMatchNothing) {
  auto cfg = loadPreset("specialists");
  ASSERT_TRUE(cfg.ok());
  cfg->heads = 1;  // head-1 cells no longer exist
  cfg->text = "The cat sat on the mat";  // "it" and "soft" are gone
  const Model m = buildOrDie(*cfg);
  EXPECT_EQ(countAppliedScoreCells(*cfg, m), 0);
  const Trace t = traceOf(m);
  EXPECT_GT(weightAt(t, 0, 0, 2, 2), 0.5f);  // the self score still applies
}

// ---------------------------------------------------------------------------------------------
// 5. mask comparison
// ---------------------------------------------------------------------------------------------

TEST(LessonMaskComparison, CausalDifferenceMap) {
  const Model m = buildOrDie(sized(8, 2));
  auto r = maskComparison(m, MaskLesson::Causal);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const int T = r->masked.tq;
  EXPECT_EQ(r->blockedCells, T * (T - 1) / 2);
  EXPECT_GT(r->meanAbsOutputDiff, 0.0);
  EXPECT_GT(r->maxAbsWeightDiff, 0.0);
  // Query 0 sees only key 0 once masked: its weight goes to 1.
  EXPECT_FLOAT_EQ(weightAt(r->masked, 0, 0, 0, 0), 1.0f);
  // The last query sees every key either way: no difference in its row.
  for (int k = 0; k < T; ++k) {
    EXPECT_NEAR(r->weightDiff.data[static_cast<std::size_t>((T - 1) * T + k)], 0.0f, 1e-6);
  }
  // Blocked cells lose exactly their unmasked weight.
  EXPECT_FLOAT_EQ(r->weightDiff.data[1], -weightAt(r->unmasked, 0, 0, 0, 1));
}

TEST(LessonMaskComparison, KeyPadding) {
  ModelConfig cfg = sized(8, 2);
  cfg.mask = MaskKind::Causal;  // the lesson's traces use only its own mask
  const Model m = buildOrDie(cfg);
  auto r = maskComparison(m, MaskLesson::KeyPadding, 2);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->paddedKeys, 2);
  const int T = r->masked.tq;
  EXPECT_EQ(r->blockedCells, 2 * T);
  EXPECT_FALSE(r->masked.causal);
  for (int q = 0; q < T; ++q) {
    EXPECT_EQ(weightAt(r->masked, 0, 1, q, T - 1), 0.0f);
    EXPECT_EQ(weightAt(r->masked, 0, 1, q, T - 2), 0.0f);
  }
  EXPECT_GT(r->meanAbsOutputDiff, 0.0);
  EXPECT_FALSE(maskComparison(m, MaskLesson::KeyPadding, 99).ok());
}

// ---------------------------------------------------------------------------------------------
// 6. pitfall lab
// ---------------------------------------------------------------------------------------------

PitfallResult pitfallOn(const ModelConfig& cfg, Pitfall p) {
  auto r = runPitfall(buildOrDie(cfg), p);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return std::move(r).value();
}

TEST(LessonPitfalls, ScalingChangesEntropyInTheRightDirection) {
  const ModelConfig cfg = sized(32, 8);
  const auto dmodel = pitfallOn(cfg, Pitfall::ScaleBySqrtDModel);
  const auto none = pitfallOn(cfg, Pitfall::NoScaling);
  const double right = dmodel.correctChecks.meanRowEntropy;
  EXPECT_NEAR(right, none.correctChecks.meanRowEntropy, 1e-12);
  EXPECT_GT(dmodel.pitfallChecks.meanRowEntropy, right);  // too flat
  EXPECT_LT(none.pitfallChecks.meanRowEntropy, right);    // too peaked
  for (const auto* r : {&dmodel, &none}) {
    EXPECT_EQ(r->pitfallChecks.rowsNotSummingToOne, 0);  // still proper distributions
    EXPECT_EQ(r->correctChecks.rowsNotSummingToOne, 0);
    EXPECT_GT(r->maxAbsWeightDiff, 1e-3);
    EXPECT_GT(r->maxAbsOutputDiff, 1e-4);
  }
}

TEST(LessonPitfalls, SumHeadsAndSkipWo) {
  const ModelConfig cfg = sized(12, 3);
  const auto sum = pitfallOn(cfg, Pitfall::SumHeads);
  EXPECT_EQ(sum.maxAbsWeightDiff, 0.0);  // the weights are not the problem
  EXPECT_GT(sum.maxAbsOutputDiff, 1e-2);
  EXPECT_LT(sum.blockSumMaxAbsDiff, 1e-5);  // the per-block sum IS the right output
  const auto skip = pitfallOn(cfg, Pitfall::SkipOutputProjection);
  EXPECT_EQ(skip.maxAbsWeightDiff, 0.0);
  EXPECT_GT(skip.maxAbsOutputDiff, 1e-2);
  EXPECT_EQ(skip.output.data, skip.correct.tensor(StageId::Concat).data);
}

TEST(LessonPitfalls, MaskAfterSoftmaxLeavesRowsShort) {
  const auto r = pitfallOn(sized(8, 2), Pitfall::MaskAfterSoftmax);
  EXPECT_TRUE(r.maskAdded);  // the model had no mask: causal added to both
  EXPECT_EQ(r.correctChecks.rowsNotSummingToOne, 0);
  // Every query but the last loses the keys after it: rows sum to < 1.
  // (a row whose blocked keys had almost no weight anyway may stay within the 1e-3 tolerance)
  EXPECT_GE(r.pitfallChecks.rowsNotSummingToOne, r.correct.tq - 1);
  EXPECT_LE(r.pitfallChecks.rowsNotSummingToOne, 2 * (r.correct.tq - 1));
  // Query 0 keeps only its weight on key 0 of the softmax over all keys.
  const int T = r.correct.tq;
  const Tensor scaledScores = r.correct.copyOf(StageId::ScaledScores);
  const float* scaled = scaledScores.ptr();
  double denom = 0;
  for (int k = 0; k < T; ++k) denom += std::exp(static_cast<double>(scaled[k]));
  EXPECT_NEAR(r.weights.data[0], std::exp(static_cast<double>(scaled[0])) / denom, 1e-5);
  EXPECT_GT(r.pitfallChecks.maxRowSumError, 0.05);
  // Blocked cells stay exactly 0 in both.
  EXPECT_EQ(r.weights.data[1], 0.0f);
  ModelConfig causal = sized(8, 2);
  causal.mask = MaskKind::Causal;
  EXPECT_FALSE(pitfallOn(causal, Pitfall::MaskAfterSoftmax).maskAdded);
}

TEST(LessonPitfalls, SoftmaxOverQueriesNormalisesColumns) {
  const auto r = pitfallOn(sized(8, 2), Pitfall::SoftmaxOverQueries);
  const int T = r.correct.tq;
  EXPECT_GT(r.pitfallChecks.rowsNotSummingToOne, 0);
  for (int k = 0; k < T; ++k) {
    double col = 0;
    for (int q = 0; q < T; ++q) col += r.weights.data[static_cast<std::size_t>(q * T + k)];
    EXPECT_NEAR(col, 1.0, 1e-5);
  }
  EXPECT_GT(r.maxAbsOutputDiff, 1e-3);
}

TEST(LessonPitfalls, NoMaxSubtractionOverflowsOnLargeLogits) {
  const auto r = pitfallOn(sized(8, 2), Pitfall::NoMaxSubtraction);
  EXPECT_GE(r.logitGain, 1.0f);
  EXPECT_EQ(r.correctChecks.nanCount, 0);
  EXPECT_EQ(r.correctChecks.infCount, 0);
  EXPECT_EQ(r.correctChecks.rowsNotSummingToOne, 0);  // the max-subtracted softmax survives
  EXPECT_GT(r.pitfallChecks.nanCount, 0);              // the naive one does not
  EXPECT_GT(r.pitfallChecks.rowsNotSummingToOne, 0);
  EXPECT_GT(r.outputNanCount, 0);
  EXPECT_TRUE(std::isinf(r.maxAbsWeightDiff)) << "lost rows must not look like a tiny difference";
  EXPECT_TRUE(std::isinf(r.maxAbsOutputDiff));
}

// The explanation's claim: without the max only the overflowing entries of a row become NaN (inf / inf),
// the row's other entries 0 (finite / inf); the NaN then reaches the output through A V.
TEST(LessonPitfalls, NoMaxSubtractionLosesOnlyTheOverflowingEntriesToNan) {
  const auto r = pitfallOn(sized(8, 2), Pitfall::NoMaxSubtraction);
  const Trace& t = r.correct;
  const std::int64_t Tk = t.tk;
  std::vector<float> masked(static_cast<std::size_t>(Tk));
  int nanRows = 0;
  for (std::int64_t row = 0; row < static_cast<std::int64_t>(r.weights.data.size()); row += Tk) {
    t.readCells(StageId::MaskedScores, row, Tk, masked.data());
    bool overflow = false;
    for (float v : masked) overflow = overflow || std::isinf(std::exp(v));
    if (!overflow) continue;
    ++nanRows;
    for (std::int64_t k = 0; k < Tk; ++k) {
      const float w = r.weights.data[static_cast<std::size_t>(row + k)];
      if (std::isinf(std::exp(masked[static_cast<std::size_t>(k)]))) {
        EXPECT_TRUE(std::isnan(w)) << "row " << row / Tk << " key " << k;
      } else {
        EXPECT_EQ(w, 0.0f) << "row " << row / Tk << " key " << k << ": a finite exp over an infinite sum";
      }
    }
  }
  EXPECT_GT(nanRows, 0);
  EXPECT_NE(std::string(pitfallExplanation(Pitfall::NoMaxSubtraction)).find("the others 0"), std::string::npos);
}

TEST(LessonPitfalls, EveryPitfallHasTextAndRuns) {
  const ModelConfig cfg = sized(8, 2);
  std::set<std::string> titles;
  for (int i = 0; i < kPitfallCount; ++i) {
    const auto p = static_cast<Pitfall>(i);
    titles.insert(pitfallTitle(p));
    EXPECT_GT(std::string(pitfallExplanation(p)).size(), 40u);
    const auto r = pitfallOn(cfg, p);
    EXPECT_EQ(r.weights.shape, r.correct.tensor(StageId::Weights).shape);
    EXPECT_EQ(r.output.shape, r.correct.tensor(StageId::Output).shape);
  }
  EXPECT_EQ(titles.size(), static_cast<std::size_t>(kPitfallCount));
}

// ---------------------------------------------------------------------------------------------
// 7. cost sweep
// ---------------------------------------------------------------------------------------------

// The Cost tab's "whole recorded trace" is the one estimate `mhascope info` prints under that name
// (stages, mask flags and token labels), not the stage tensors alone.
TEST(LessonCostSweep, TraceBytesAreTheOneEstimate) {
  const CostSizes s{2, 9, 7, 16, 4};
  EXPECT_DOUBLE_EQ(costAt(s).traceBytes, estimateMemory(2, 9, 7, 16, 4).trace);
}

TEST(LessonCostSweep, GrowthLaws) {
  const CostSizes base{1, 16, 16, 64, 4};
  auto t = costSweep(base, SweepVariable::Tokens, 8, 32, 4);
  ASSERT_TRUE(t.ok()) << t.error().message;
  ASSERT_EQ(t->size(), 4u);
  EXPECT_EQ(t->front().value, 8);
  EXPECT_EQ(t->back().value, 32);
  const auto& a = t->front();
  const auto& b = t->back();  // T x4
  EXPECT_EQ(a.params, b.params);                                 // parameters ignore T
  EXPECT_NEAR(b.projectionFlops / a.projectionFlops, 4.0, 1e-9);  // linear in T
  EXPECT_NEAR(b.attentionFlops / a.attentionFlops, 16.0, 1e-9);   // quadratic in T
  EXPECT_NEAR(b.scoreBytes / a.scoreBytes, 16.0, 1e-9);
  EXPECT_EQ(a.scoreBytes, 4.0 * 1 * 4 * 8 * 8);

  auto h = costSweep(base, SweepVariable::Heads, 1, 64);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->size(), 7u);  // 1 2 4 8 16 32 64
  for (const auto& p : *h) {
    EXPECT_EQ(64 % p.value, 0);
    EXPECT_EQ(p.params, h->front().params);  // h moves neither parameters ...
    EXPECT_EQ(p.attentionFlops, h->front().attentionFlops);  // ... nor matmul FLOPs
    EXPECT_EQ(p.scoreBytes, h->front().scoreBytes * static_cast<double>(p.value));  // but score memory ...
    EXPECT_EQ(p.scoreCount, h->front().scoreCount * p.value);  // ... and the elementwise work on scores grow
  }

  auto d = costSweep(base, SweepVariable::DModel, 10, 40);
  ASSERT_TRUE(d.ok());
  for (const auto& p : *d) EXPECT_EQ(p.value % 4, 0);
  EXPECT_EQ(d->front().value, 12);
  EXPECT_EQ(d->back().value, 40);
  EXPECT_EQ(d->back().params, 4 * 40 * 40 + 4 * 40);

  EXPECT_FALSE(costSweep(base, SweepVariable::Tokens, 0, 5).ok());
  EXPECT_FALSE(costSweep(base, SweepVariable::Tokens, 9, 5).ok());
  EXPECT_FALSE(costSweep(base, SweepVariable::DModel, 5, 7).ok());  // no multiple of 4
  auto many = costSweep(base, SweepVariable::Tokens, 1, 1 << 20, 32);
  ASSERT_TRUE(many.ok());
  EXPECT_EQ(many->size(), 32u);
}

// ---------------------------------------------------------------------------------------------
// 9. cell breakdown
// ---------------------------------------------------------------------------------------------

TEST(LessonCellBreakdown, SumsEqualTheRecordedScores) {
  ModelConfig cfg = sized(12, 3);
  cfg.mask = MaskKind::Causal;
  const Trace t = traceOf(buildOrDie(cfg));
  for (int h = 0; h < 3; ++h)
    for (int q = 0; q < t.tq; ++q)
      for (int k = 0; k < t.tk; ++k) {
        auto c = cellBreakdown(t, 0, h, q, k);
        ASSERT_TRUE(c.ok()) << c.error().message;
        ASSERT_EQ(c->products.size(), 4u);
        EXPECT_NEAR(c->dot, c->recordedScore, 1e-5);
        EXPECT_FALSE(c->handSet);
        EXPECT_FLOAT_EQ(c->scaleFactor, 0.5f);  // 1 / sqrt(4)
        EXPECT_NEAR(c->scaled, c->recordedScaled, 1e-6);
        EXPECT_EQ(c->blocked, k > q);
        EXPECT_LT(c->rowMaxAbsDiff, 1e-6);
        EXPECT_NEAR(c->rowSoftmax[static_cast<std::size_t>(k)], weightAt(t, 0, h, q, k), 1e-6);
      }
  EXPECT_FALSE(cellBreakdown(t, 0, 3, 0, 0).ok());
  EXPECT_FALSE(cellBreakdown(t, 0, 0, t.tq, 0).ok());
}

TEST(LessonCellBreakdown, HandSetCellIsFlagged) {
  auto cfg = loadPreset("specialists");
  ASSERT_TRUE(cfg.ok());
  const Trace t = traceOf(buildOrDie(*cfg));
  auto c = cellBreakdown(t, 0, 0, tokenIndex(t, "it"), tokenIndex(t, "mat"));
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->handSet);
  EXPECT_EQ(c->recordedScore, 16.0f);
  EXPECT_NEAR(c->scaled, 8.0, 1e-6);
}

std::string fmt(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

// Every printed factor names the scaling rule that is active, with its number.
TEST(LessonText, PrintedFactorsFollowTheActiveScalingRule) {
  struct Case {
    ScaleKind kind;
    std::string rule;
    double divisor;
  };
  for (const Case& c : {Case{ScaleKind::SqrtDk, "divided by sqrt(d_k) = 2", 2.0},
                        Case{ScaleKind::SqrtDModel, "divided by sqrt(d_model) = 3.464", std::sqrt(12.0)},
                        Case{ScaleKind::None, "not scaled (factor 1)", 1.0}}) {
    ModelConfig cfg = sized(12, 3);
    cfg.scale = c.kind;
    const Model m = buildOrDie(cfg);
    const Trace t = traceOf(m);
    EXPECT_EQ(scalingRuleText(c.kind, 12, 4), c.rule);
    const std::string gap = scoreGapText(t, 8.0);
    EXPECT_NE(gap.find("Raw scores are " + c.rule + " before the softmax"), std::string::npos) << gap;
    EXPECT_NE(gap.find("= " + fmt(std::exp(8.0 / c.divisor)) + " between their weights"), std::string::npos) << gap;
    const auto quiz = makeQuiz(t, m.weights);
    const QuizQuestion* q = findQuestion(quiz, "The standard rule divides the scores by sqrt(d_k) = 2");
    ASSERT_NE(q, nullptr);
    EXPECT_NE(q->explanation.find("scores are " + c.rule + ", i.e. multiplied by " + fmt(1.0 / c.divisor)),
              std::string::npos)
        << q->explanation;
  }
  // A literal check of one number, not only the formula: e^(8 / 2) = 54.6.
  const Model m = buildOrDie(sized(12, 3));
  EXPECT_NE(scoreGapText(traceOf(m), 8.0).find("e^(8 / 2) = 54.6"), std::string::npos);
}

TEST(LessonText, PitfallTextsCountWoAndBoAndDoNotOverstate) {
  const std::string wo = pitfallExplanation(Pitfall::SkipOutputProjection);
  EXPECT_NE(wo.find("d_model^2 + d_model"), std::string::npos);
  const std::string none = pitfallExplanation(Pitfall::NoScaling);
  EXPECT_NE(none.find("slows"), std::string::npos);
  EXPECT_EQ(none.find("stops learning"), std::string::npos);
  EXPECT_NE(std::string(pitfallExplanation(Pitfall::ScaleBySqrtDModel)).find("sqrt(h) times smaller"), std::string::npos);
}

// Projections O(B*T*d_model^2) against the attention matmuls O(B*T^2*d_model): the crossover is live.
TEST(LessonCost, CrossoverIsTwiceDModelAndTheTextSaysSo) {
  for (std::int64_t d : {8, 64, 512}) {
    const CostSizes s{2, 10, 10, d, 8 <= d ? 8 : 2};
    const CostCrossover c = costCrossover(s);
    EXPECT_DOUBLE_EQ(c.crossoverTokens, 2.0 * static_cast<double>(d));
    const FlopCount at = countFlops(2, 2 * d, 2 * d, d, s.heads);  // equal exactly at T = 2 d_model
    EXPECT_DOUBLE_EQ(at.projections, at.attention);
    const FlopCount above = countFlops(2, 2 * d + 1, 2 * d + 1, d, s.heads);
    EXPECT_GT(above.attention, above.projections);
  }
  // The paper preset (d_model 512, T = 10): projections 8*B*T*d^2 vs attention 4*B*T^2*d = 2*512/10 = 102.4x.
  auto paper = loadPreset("paper");
  ASSERT_TRUE(paper.ok());
  const Trace t = traceOf(buildOrDie(*paper));
  const CostSizes s = costSizesOf(t);
  EXPECT_EQ(s.dModel, 512);
  EXPECT_EQ(s.tq, 10);
  EXPECT_NEAR(costCrossover(s).projectionsOverAttention, 102.4, 1e-9);
  const std::string text = costCrossoverText(s);
  EXPECT_NE(text.find("T > 2*d_model = 1024"), std::string::npos) << text;
  EXPECT_NE(text.find("the projections cost 102.4x the attention matmuls"), std::string::npos) << text;
  // Long inputs flip the sentence.
  const std::string longText = costCrossoverText(CostSizes{1, 4096, 4096, 64, 4});
  EXPECT_NE(longText.find("the attention matmuls cost 32x the projections"), std::string::npos) << longText;
}

}  // namespace
}  // namespace mhascope
