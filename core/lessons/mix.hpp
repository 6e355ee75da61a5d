// Lesson "Mix" — mix, then split: every input feature feeds output dimension j of the projection;
// the split only decides which head receives column j.
#pragma once

#include <algorithm>
#include <vector>

#include "attention/trace.hpp"
#include "lessons/lesson.hpp"

namespace mhascope {

struct MixTerm {
  int feature = 0;  // i
  float x = 0;      // x[t, i]
  float w = 0;      // W_q[i, j]
  double product = 0;
};

struct MixThenSplit {
  int batchIndex = 0, token = 0, outputDim = 0;  // b, t, j
  int ownerHead = 0;     // floor(j / d_k): the split hands column j to this head ...
  int columnInHead = 0;  // ... as its column j % d_k
  std::vector<MixTerm> terms;  // d_model terms x[t, i] * W_q[i, j]
  double sumOfTerms = 0;
  float bias = 0;              // b_q[j]
  double total = 0;            // sumOfTerms + bias
  float recorded = 0;          // q_proj[b, t, j] from the trace
  float recordedInHead = 0;    // q_heads[b, ownerHead, t, columnInHead]: the same number
};
// `weights` must be the weights the trace was computed with.
Result<MixThenSplit> mixThenSplit(const Trace& trace, const MhaWeights& weights, int batchIndex, int token,
                                  int outputDim);

namespace lessons {

struct Mix {
  static constexpr const char* kId = "mix";
  static constexpr const char* kTitle = "Mix";
  static constexpr LessonGroup kGroup = LessonGroup::Basics;  // its group in the lesson list
  static constexpr const char* kLearn =  // the list's "what you will learn"
      "Every input feature feeds every head; the split only decides which head gets a column";
  static constexpr LessonCost kCost = LessonCost::Quick;
  static constexpr bool kReadsWeights = true;  // W_o's columns
  struct Choices {
    int token = 0, dim = 0;  // t, output dimension j
    template <class C, class F>
    static void fields(C& c, F&& f) {
      f("mix_token", c.token);
      f("mix_dim", c.dim);
    }
    void keepInRange(const Trace& t) {
      token = std::clamp(token, 0, std::max(0, t.tq - 1));
      dim = std::clamp(dim, 0, std::max(0, t.dModel - 1));
    }
    bool operator==(const Choices&) const = default;
  };
  using Result = MixThenSplit;
  static mhascope::Result<Result> compute(const LessonInput& in, const Choices& c) {
    return mixThenSplit(in.trace, in.model.weights, in.batch, c.token, c.dim);
  }
  template <class Ui>
  static void drawTab(Ui& ui, const LessonOutcome<Result>& shown, Choices& choices);
};

}  // namespace lessons
}  // namespace mhascope
