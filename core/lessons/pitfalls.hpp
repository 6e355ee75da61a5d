// Lesson "Pitfalls" — the pitfall lab: a wrong pipeline next to the right one, with checks.
// Reruns the pipeline.
#pragma once

#include <cstdint>
#include <vector>

#include "attention/trace.hpp"
#include "lessons/lesson.hpp"

namespace mhascope {

enum class Pitfall {
  ScaleBySqrtDModel,  // / sqrt(d_model) instead of / sqrt(d_k): flatter by sqrt(h)
  NoScaling,          // no division: sharper by sqrt(d_k)
  SumHeads,           // add the head outputs instead of putting them side by side
  SkipOutputProjection,
  MaskAfterSoftmax,   // zero the blocked weights after the softmax: rows no longer sum to 1
  SoftmaxOverQueries, // normalise over T_q (columns) instead of T_k (rows)
  NoMaxSubtraction,   // exp of large logits in float overflows: inf / inf = NaN
};
inline constexpr int kPitfallCount = 7;
const char* pitfallTitle(Pitfall p);
const char* pitfallExplanation(Pitfall p);  // why it goes wrong, our words

struct WeightChecks {
  double maxRowSumError = 0;  // max |sum over T_k - 1| over rows that are not fully masked
  int rowsNotSummingToOne = 0;  // |sum - 1| > 1e-3 (or NaN)
  double meanRowEntropy = 0;  // nats, over rows with finite weights
  std::int64_t nanCount = 0, infCount = 0;
};

struct PitfallResult {
  Pitfall pitfall = Pitfall::NoScaling;
  bool maskAdded = false;  // MaskAfterSoftmax on an unmasked model: a causal mask was added to both
  float logitGain = 1.0f;  // NoMaxSubtraction: scores multiplied by this so the logits are large
  Trace correct;           // the right pipeline (with the mask / large logits above, if added)
  Tensor weights;          // (B, h, T_q, T_k) the pitfall's weights
  Tensor output;           // (B, T_q, d_model) the pitfall's output
  Tensor weightDiff;       // (B, h, T_q, T_k) pitfall - correct (NaN where either is NaN)
  WeightChecks correctChecks, pitfallChecks;
  double maxAbsWeightDiff = 0;  // inf when the mistake turned a finite cell into NaN/inf
  double maxAbsOutputDiff = 0;  // likewise
  std::int64_t outputNanCount = 0, outputInfCount = 0;
  // SumHeads only: sum over heads i of O_i W_o[i*d_k:(i+1)*d_k, :] + b_o — the sum that IS right —
  // against the recorded output (~0).
  double blockSumMaxAbsDiff = 0;
};
Result<PitfallResult> runPitfall(const Model& model, Pitfall pitfall);

WeightChecks checkWeights(const Tensor& weights /*(B,h,T_q,T_k)*/, const std::vector<std::uint8_t>& fullyMasked);

namespace lessons {

struct Pitfalls {
  static constexpr const char* kId = "pitfalls";
  static constexpr const char* kTitle = "Pitfalls";
  static constexpr LessonGroup kGroup = LessonGroup::Basics;  // its group in the lesson list
  static constexpr const char* kLearn =  // the list's "what you will learn"
      "Common implementation bugs, each beside the right pipeline and the check that catches it";
  static constexpr LessonCost kCost = LessonCost::Rerun;
  struct Choices {
    int pitfall = 0;  // a Pitfall
    template <class C, class F>
    static void fields(C& c, F&& f) {
      f("pitfall", c.pitfall);
    }
    void keepInRange(const Trace&) {}  // an index past the list runs the right pipeline only
    int variant() const { return pitfall; }
    bool operator==(const Choices&) const = default;
  };
  using Result = PitfallResult;
  static mhascope::Result<Result> compute(const Model& model, const Choices& c) {
    return runPitfall(model, static_cast<Pitfall>(c.pitfall));
  }
  template <class Ui>
  static void drawTab(Ui& ui, const LessonOutcome<Result>& shown, Choices& choices);
};

}  // namespace lessons
}  // namespace mhascope
