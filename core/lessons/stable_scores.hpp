// Stable scores — the three ways today's models keep attention scores from growing without bound, each
// run by the engine on this sentence with q and k grown by a factor g (W_q, b_q, W_k, b_k times g, so
// the textbook scores grow as g²): q/k norm (Qwen3 and Gemma 3 per head, OLMo 2 over the whole
// projection) bounds every score by |q̂ ⊙ g_q| |k̂ ⊙ g_k| · scale; the softcap (Gemma 2) bends them into
// (−c, c); query_pre_attn_scalar (Gemma 2 and 3) only changes the scale, 1/√q_s instead of 1/√d_k.
// The score distributions before and after come from the engine's own stages (scaled_scores,
// softcapped) and its weights.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "attention/score_stats.hpp"
#include "lessons/lesson.hpp"

namespace mhascope {

// The scores one pass hands the softmax (scaled_scores, or softcapped when the pass caps them) at
// every cell the mask leaves visible, in (b, head, query, key) order, and how its weights spread.
struct ScorePass {
  std::vector<float> scores;
  double minScore = 0, maxScore = 0;
  double maxAbs = 0;       // max |s|
  double meanEntropy = 0;  // nats, the mean over the rows that see a key of −Σ a ln a
};

// Counts of `values` in `bins` equal bins over [lo, hi]; values outside fall into the end bins.
std::vector<int> scoreHistogram(const std::vector<float>& values, double lo, double hi, int bins);
// The softcap s ↦ c·tanh(s / c) at `points` evenly spaced s over [−range, range]: (s, capped) pairs.
struct CurvePoint {
  double s = 0, capped = 0;
};
std::vector<CurvePoint> softcapCurve(double c, double range, int points);

// A published configuration's stabilisers (its config.json).
struct PublishedStable {
  const char* name;
  int dModel, heads, headDim;
  int preAttnScalar;  // query_pre_attn_scalar; 0: none (scale 1/√d_k)
  float softcap;      // attn_logit_softcapping; 0: none
  const char* qkNorm; // "per head", "whole projection" or "none"
};
// Gemma 2 2B, 9B, 27B; Qwen3-0.6B; OLMo-2-1124-7B.
std::vector<PublishedStable> publishedStableConfigs();

inline constexpr int kStableBins = 40;

struct StableScoresLesson {
  int dModel = 0, heads = 0, kvHeads = 0, dk = 0;
  float growth = 1;         // g
  double rawScale = 1;      // 1/√d_k
  // Each pass on the same q and k (grown by g): the textbook one, each stabiliser alone, and the ones
  // toggled on together.
  ScorePass raw, qkNorm, softcap, scalar, stabilised;
  bool useQkNorm = false, useSoftcap = false, useScalar = false;  // what `stabilised` used
  QkNormBound bound;
  float cap = 0;            // c
  double capLargestCut = 0; // max over cells of |s − c tanh(s / c)|, from the two passes' cells
  double capShareBent = 0;  // share of cells the cap moved by more than 1 % of |s|
  int preAttnScalar = 0;    // q_s
  double scalarScale = 1;   // 1/√q_s
  // The distributions: raw and stabilised on one range [−histRange, histRange], kStableBins bins each;
  // the cap's curve over [−curveRange, curveRange] with the raw scores' histogram on that range under it.
  double histRange = 1, curveRange = 1;
  std::vector<int> rawHistogram, stableHistogram, rawOnCurve;
  std::vector<CurvePoint> curve;
  std::vector<PublishedStable> published;
};

// `preAttnScalar` 0: d_model / h (Gemma 2 27B's choice: 4608 / 32 = 144 beside its d_k 128).
Result<StableScoresLesson> stableScoresLesson(const Model& model, float growth, bool qkNorm, bool wholeProjection,
                                              bool softcap, float cap, bool scalar, int preAttnScalar);

// The lesson's opening: why scores grow and the three answers.
const char* stableScoresIntro();
// Each stabiliser's sentence with the live numbers.
std::string stableQkNormText(const StableScoresLesson& r);
std::string stableSoftcapText(const StableScoresLesson& r);
std::string stableScalarText(const StableScoresLesson& r);
// The raw pass against the stabilised one: the largest score and the weights' entropy.
std::string stableSummaryText(const StableScoresLesson& r);

namespace lessons {

struct StableScores {
  static constexpr const char* kId = "stable_scores";
  static constexpr const char* kTitle = "Stable scores";
  static constexpr LessonGroup kGroup = LessonGroup::Today;
  static constexpr const char* kLearn =
      "How q/k norm, softcapping and query_pre_attn_scalar keep attention scores bounded";
  static constexpr LessonCost kCost = LessonCost::Rerun;
  struct Choices {
    // 1: on. The stabilisers of the stabilised pass, and gains of 1 over the whole projection (OLMo 2)
    // instead of per head.
    int qkNorm = 1, softcap = 1, scalar = 1, wholeProjection = 0;
    float cap = 50.0f;             // c (Gemma 2's attn_logit_softcapping)
    int preAttnScalar = 0;         // q_s; 0: d_model / h
    float growth = 1.0f;           // g
    template <class C, class F>
    static void fields(C& c, F&& f) {
      f("stable_qk_norm", c.qkNorm);
      f("stable_softcap", c.softcap);
      f("stable_scalar", c.scalar);
      f("stable_whole_projection", c.wholeProjection);
      f("stable_cap", c.cap);
      f("stable_pre_attn_scalar", c.preAttnScalar);
      f("stable_growth", c.growth);
    }
    void keepInRange(const Trace& t) {
      for (int* on : {&qkNorm, &softcap, &scalar, &wholeProjection}) *on = *on != 0 ? 1 : 0;
      cap = std::clamp(std::isfinite(cap) ? cap : 50.0f, 0.5f, 500.0f);
      growth = std::clamp(std::isfinite(growth) ? growth : 1.0f, 0.1f, 100.0f);
      if (preAttnScalar <= 0) preAttnScalar = t.heads > 0 ? std::max(1, t.dModel / t.heads) : 1;
      preAttnScalar = std::clamp(preAttnScalar, 1, 4096);
    }
    int variant() const {
      std::uint32_t v = (qkNorm != 0 ? 1u : 0u) | (softcap != 0 ? 2u : 0u) | (scalar != 0 ? 4u : 0u) |
                        (wholeProjection != 0 ? 8u : 0u);
      v = v * 1000003u + static_cast<std::uint32_t>(std::lround(cap * 100.0f));
      v = v * 1000003u + static_cast<std::uint32_t>(preAttnScalar);
      v = v * 1000003u + static_cast<std::uint32_t>(std::lround(growth * 1000.0f));
      return static_cast<int>(v & 0x3fffffffu);
    }
    bool operator==(const Choices&) const = default;
  };
  using Result = StableScoresLesson;
  static mhascope::Result<Result> compute(const Model& model, const Choices& c) {
    return stableScoresLesson(model, c.growth, c.qkNorm != 0, c.wholeProjection != 0, c.softcap != 0, c.cap,
                              c.scalar != 0, c.preAttnScalar);
  }
  template <class Ui>
  static void drawTab(Ui& ui, const LessonOutcome<Result>& shown, Choices& choices);
};

}  // namespace lessons
}  // namespace mhascope
