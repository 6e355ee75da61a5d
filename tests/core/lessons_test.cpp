// The teaching views' numbers (core/lessons/lessons.hpp): loop vs vectorized, the
// parameter table, mix-then-split, the specialists preset and its score_override format, mask
// comparison, every pitfall's checks, the cost sweep, the cell breakdown and the quiz.
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
using lesson_fixtures::sized;
using lesson_fixtures::traceOf;

float weightAt(const Trace& t, int b, int h, int q, int k) {
  return t.tensor(StageId::Weights)
      .data[static_cast<std::size_t>(((b * t.heads + h) * t.tq + q) * t.tk + k)];
}

int tokenIndex(const Trace& t, const std::string& token) {
  for (std::size_t i = 0; i < t.queryTokens[0].size(); ++i)
    if (t.queryTokens[0][i] == token) return static_cast<int>(i);
  ADD_FAILURE() << "token '" << token << "' not in the sentence";
  return 0;
}

// ---------------------------------------------------------------------------------------------
// 1. loop vs vectorized
// ---------------------------------------------------------------------------------------------

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
  auto p = parameterTable(512, 8);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->dk, 64);
  EXPECT_EQ(p->oneHeadProjection, 512 * 64);
  EXPECT_EQ(p->qkvFullPerHead, 3LL * 8 * 512 * 512);
  EXPECT_EQ(p->qkvReducedPerHead, 3LL * 8 * 512 * 64);
  EXPECT_EQ(p->qkvReal, 3LL * 512 * 512);
  EXPECT_EQ(p->qkvReducedPerHead, p->qkvReal);  // h small matrices = one big one
  EXPECT_EQ(p->wo, 512 * 512);
  EXPECT_EQ(p->biases, 4 * 512);
  EXPECT_EQ(p->totalWithoutBias, 4LL * 512 * 512);
  EXPECT_EQ(p->totalWithBias, 4LL * 512 * 512 + 4 * 512);
  // The engine's weights hold exactly that many numbers.
  const MhaWeights w = initWeights(12, true, 1);
  auto q = parameterTable(12, 3);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(w.wq.size() + w.wk.size() + w.wv.size() + w.wo.size(), q->totalWithoutBias);
  EXPECT_EQ(w.wq.size() + w.wk.size() + w.wv.size(), q->qkvReal);
  EXPECT_EQ(w.bq.size() + w.bk.size() + w.bv.size() + w.bo.size(), q->biases);
}

TEST(LessonParameterTable, BadSizesAreClearErrors) {
  auto a = parameterTable(10, 4);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.error().message.find("d_model (10) must be divisible by heads (4)"), std::string::npos);
  EXPECT_FALSE(parameterTable(0, 1).ok());
  EXPECT_FALSE(parameterTable(8, 0).ok());
  EXPECT_FALSE(parameterTable(8, 16).ok());
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

TEST(LessonSpecialists, PresetHeadsDoWhatTheyWereSetTo) {
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

TEST(LessonSpecialists, EditorCellRecomputesDownstream) {
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

TEST(LessonSpecialists, ScoreOverrideRoundTripsAndIsStrict) {
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

TEST(LessonSpecialists, CellsThatDoNotFitMatchNothing) {
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

// ---------------------------------------------------------------------------------------------
// 10. quiz
// ---------------------------------------------------------------------------------------------

const QuizQuestion* findQuestion(const std::vector<QuizQuestion>& quiz, const std::string& start) {
  for (const auto& q : quiz)
    if (q.question.rfind(start, 0) == 0) return &q;
  return nullptr;
}

const std::string& answerOf(const QuizQuestion& q) { return q.choices[static_cast<std::size_t>(q.correct)]; }

TEST(LessonQuiz, AnswersMatchTheLiveTrace) {
  ModelConfig cfg = sized(12, 3);
  cfg.batch = 2;
  const Model m = buildOrDie(cfg);
  const Trace t = traceOf(m);
  const auto quiz = makeQuiz(t, m.weights);
  ASSERT_GE(quiz.size(), 15u);
  std::set<int> positions;
  for (const auto& q : quiz) {
    ASSERT_GE(q.choices.size(), 3u) << q.question;
    ASSERT_GE(q.correct, 0);
    ASSERT_LT(q.correct, static_cast<int>(q.choices.size()));
    std::set<std::string> distinct(q.choices.begin(), q.choices.end());
    EXPECT_EQ(distinct.size(), q.choices.size()) << q.question;
    EXPECT_FALSE(q.explanation.empty());
    positions.insert(q.correct);
  }
  EXPECT_GT(positions.size(), 1u);  // the answer is not always in the same place
  auto answer = [&](const std::string& start) {
    const QuizQuestion* q = findQuestion(quiz, start);
    EXPECT_NE(q, nullptr) << start;
    return q ? answerOf(*q) : std::string();
  };
  EXPECT_EQ(answer("With d_model = 12 and h = 3"), "4");  // d_k = 12 / 3
  EXPECT_EQ(answer("What shape goes into the output projection"), "(B, T_q, d_model) = (2, 7, 12)");
  EXPECT_EQ(answer("What shape does the softmax output A have"), "(B, h, T_q, T_k) = (2, 3, 7, 7)");
  EXPECT_EQ(answer("How many learned numbers"), std::to_string(4 * 144 + 4 * 12));
  EXPECT_EQ(answer("Keep d_model = 12 and change h from 3 to 6"), "It stays the same");
  EXPECT_EQ(answer("Q = X W_q has d_model = 12 columns"), "Columns 4 to 7");  // head index 1
  EXPECT_EQ(answer("How many numbers does ONE head's score table"), "49");
  EXPECT_EQ(answer("With d_model = 12 and self-attention"), "T > 24");
  EXPECT_EQ(answer("In PyTorch's nn.MultiheadAttention"), "That query-key pair is blocked: its score becomes -inf");
  // PyTorch's default return value is named in the per-head question's explanation.
  EXPECT_NE(findQuestion(quiz, "What shape does the softmax output A have")->explanation.find("(B, T_q, T_k) = (2, 7, 7)"),
            std::string::npos);
  // The live question, 0-based: the most-weighted key of the middle query in head 0.
  const int qi = t.tq / 2;
  int best = 0;
  for (int k = 1; k < t.tk; ++k)
    if (weightAt(t, 0, 0, qi, k) > weightAt(t, 0, 0, qi, best)) best = k;
  const QuizQuestion* live = findQuestion(quiz, "In head 0, which key");
  ASSERT_NE(live, nullptr);
  EXPECT_NE(live->question.find("(query " + std::to_string(qi) + ")"), std::string::npos) << live->question;
  EXPECT_NE(answerOf(*live).find("(key " + std::to_string(best) + ")"), std::string::npos);
  // "Query t sees t + 1 keys" with t counted from 0, as everywhere else.
  EXPECT_NE(findQuestion(quiz, "What does the causal mask do")->explanation.find("query 0 see 1 key and query 6 see 7 keys"),
            std::string::npos);
}

// --- reading the choices back, independently of how makeQuiz built them -----------------------

std::vector<long long> numbersIn(const std::string& s) {
  std::vector<long long> v;
  for (std::size_t i = 0; i < s.size();) {
    if (std::isdigit(static_cast<unsigned char>(s[i]))) {
      std::size_t j = i;
      while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
      v.push_back(std::stoll(s.substr(i, j - i)));
      i = j;
    } else {
      ++i;
    }
  }
  return v;
}

// "(B, h, T_q, d_k) = (2, 1, 7, 12)" -> {2, 7, 12}: the values without size-1 axes.
std::vector<long long> squeezedShape(const std::string& choice) {
  const auto eq = choice.find(") = (");
  std::vector<long long> v;
  for (long long x : numbersIn(choice.substr(eq == std::string::npos ? 0 : eq)))
    if (x != 1) v.push_back(x);
  return v;
}

// The set of Q's columns a choice of the column question names (empty: not a set of Q's columns).
std::set<long long> columnsNamed(const std::string& c, long long d) {
  std::set<long long> cols;
  if (c.find("input X") != std::string::npos || c.find("of W_q") != std::string::npos || c.rfind("None", 0) == 0) {
    return cols;
  }
  const auto n = numbersIn(c);
  if (c.rfind("Columns ", 0) == 0 && n.size() == 2) {
    for (long long j = n[0]; j <= n[1]; ++j) cols.insert(j);
  } else if (c.rfind("Every ", 0) == 0 && n.size() == 2) {
    for (long long j = n[1]; j < d; j += n[0]) cols.insert(j);
  } else if (c.rfind("All ", 0) == 0) {
    for (long long j = 0; j < d; ++j) cols.insert(j);
  } else if (c.rfind("Column ", 0) == 0 && n.size() == 1) {
    cols.insert(n[0]);
  } else {
    ADD_FAILURE() << "unknown column choice: " << c;
  }
  return cols;
}

// The number a row-sum choice names ("7 (T_k)", "1 / T_k = 0.143"); NaN for "no fixed value".
double rowSumValue(const std::string& c) {
  if (c.rfind("No fixed value", 0) == 0) return std::nan("");
  const auto eq = c.find("= ");
  return std::stod(eq == std::string::npos ? c : c.substr(eq + 2));
}

// For every d_model and h tested (h = 1 and h = d_model included), sentence lengths 1, 2 and 7,
// masks on and off: no distractor is also a right answer for that configuration.
TEST(LessonQuiz, NoDistractorIsAlsoTrue) {
  int configs = 0;
  for (int d : {1, 2, 3, 4, 6, 8, 12, 16}) {
    for (int h = 1; h <= d; ++h) {
      if (d % h != 0) continue;
      for (const char* text : {"x", "a b", "The cat sat on the mat today"}) {
        for (bool causal : {false, true}) {
          ModelConfig cfg = sized(d, h, text);
          if (causal) cfg.mask = MaskKind::Causal;
          cfg.bias = (d + h) % 2 == 0;
          const Model m = buildOrDie(cfg);
          const Trace t = traceOf(m);
          const auto quiz = makeQuiz(t, m.weights);
          ++configs;
          const std::string where = "d_model " + std::to_string(d) + ", h " + std::to_string(h) + ", '" + text + "'";
          for (const auto& q : quiz) {
            const std::string ctx = where + ": " + q.question;
            std::set<std::string> distinct(q.choices.begin(), q.choices.end());
            ASSERT_EQ(distinct.size(), q.choices.size()) << ctx;
            ASSERT_GE(q.choices.size(), 2u) << ctx;
            ASSERT_GE(q.correct, 0) << ctx;
            ASSERT_LT(q.correct, static_cast<int>(q.choices.size())) << ctx;
            const std::string& ans = answerOf(q);
            for (const auto& c : q.choices) EXPECT_EQ(c.find(" to -"), std::string::npos) << ctx << " -> " << c;
            for (std::size_t c = 0; c < q.choices.size(); ++c) {
              if (static_cast<int>(c) == q.correct) continue;
              const std::string& o = q.choices[c];
              if (q.question.find("shape") != std::string::npos) {
                EXPECT_NE(squeezedShape(o), squeezedShape(ans)) << ctx << " -> " << o;
              } else if (q.question.rfind("Q = X W_q has", 0) == 0) {
                // With one head all of X and all rows of W_q do feed head 0: such choices need h > 1.
                if (o.find("input X") != std::string::npos || o.find("of W_q") != std::string::npos) {
                  EXPECT_GT(h, 1) << ctx << " -> " << o;
                }
                const auto a = columnsNamed(ans, d), x = columnsNamed(o, d);
                EXPECT_EQ(a.size(), static_cast<std::size_t>(t.dk)) << ctx;
                EXPECT_NE(a, x) << ctx << " -> " << o;
              } else if (q.question.rfind("What does each row", 0) == 0) {
                EXPECT_FALSE(rowSumValue(o) == 1.0) << ctx << " -> " << o;
              } else if (!numbersIn(ans).empty() && ans.find_first_not_of("0123456789T> ") == std::string::npos) {
                EXPECT_NE(numbersIn(o), numbersIn(ans)) << ctx << " -> " << o;
              } else if (q.question.rfind("In head 0, which key", 0) == 0 && ans.rfind("None", 0) != 0 &&
                         o.rfind("None", 0) != 0) {
                const int qi = t.tq / 2;
                EXPECT_LT(weightAt(t, 0, 0, qi, static_cast<int>(numbersIn(o).back())),
                          weightAt(t, 0, 0, qi, static_cast<int>(numbersIn(ans).back())))
                    << ctx << " -> " << o;
              }
            }
            // The wrong merges equal the right one when h = 1 or T_q = 1: the question is not asked then.
            if (q.question.rfind("After A @ V", 0) == 0) EXPECT_TRUE(h > 1 && t.tq > 1) << ctx;
            // A question about doubling h is only asked with a valid other h.
            if (q.question.rfind("Keep d_model", 0) == 0) {
              const auto nums = numbersIn(q.question);  // d_model, h, h2, d_k, d_k2
              ASSERT_GE(nums.size(), 3u);
              EXPECT_EQ(d % nums[2], 0) << ctx;
              EXPECT_NE(nums[2], h) << ctx;
            }
          }
        }
      }
    }
  }
  EXPECT_GT(configs, 100);
}

TEST(LessonQuiz, WithOneHeadTheColumnQuestionOffersNoOtherTrueAnswer) {
  const Model m = buildOrDie(sized(8, 1));
  const auto quiz = makeQuiz(traceOf(m), m.weights);
  const QuizQuestion* q = findQuestion(quiz, "Q = X W_q has d_model = 8 columns");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(answerOf(*q), "Columns 0 to 7");
  for (const auto& c : q->choices) {
    EXPECT_EQ(c.find("Every 1st column"), std::string::npos);
    EXPECT_EQ(c.find("All 8 columns"), std::string::npos);
  }
  EXPECT_GE(q->choices.size(), 3u);
  for (const auto& c : q->choices) {
    EXPECT_EQ(c.find("input X"), std::string::npos) << c;  // all of X does feed the one head
    EXPECT_EQ(c.find("of W_q"), std::string::npos) << c;   // and so do all rows of W_q
  }
  EXPECT_NE(q->explanation.find("in_proj_weight"), std::string::npos);
  // With several heads the W_q choice says which layout it means (PyTorch stores the transpose).
  const Model m4 = buildOrDie(sized(8, 4));
  const auto quiz4 = makeQuiz(traceOf(m4), m4.weights);
  const QuizQuestion* q4 = findQuestion(quiz4, "Q = X W_q has d_model = 8 columns");
  ASSERT_NE(q4, nullptr);
  bool rows = false;
  for (const auto& c : q4->choices) rows |= c.find("Rows 2 to 3 of W_q (here (d_model in, d_model out)") != std::string::npos;
  EXPECT_TRUE(rows);
}

TEST(LessonQuiz, DegenerateSizesStillGiveDistinctChoices) {
  for (auto [d, h, text] : {std::tuple{1, 1, "x"}, {2, 2, "a b"}, {4, 2, "one"}}) {
    ModelConfig cfg = sized(d, h, text);
    const Model m = buildOrDie(cfg);
    const auto quiz = makeQuiz(traceOf(m), m.weights);
    for (const auto& q : quiz) {
      std::set<std::string> distinct(q.choices.begin(), q.choices.end());
      EXPECT_EQ(distinct.size(), q.choices.size()) << q.question;
      EXPECT_GE(q.choices.size(), 2u) << q.question;
    }
  }
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
    EXPECT_EQ(scalingRuleText(c.kind, 12, 3), c.rule);
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
