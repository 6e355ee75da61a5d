// Lesson "Split" — one big matrix = h small ones: the per-head loop against the vectorized
// forward, and what a skipped transpose does. Reruns the pipeline.
#pragma once

#include <string>
#include <vector>

#include "attention/engine.hpp"
#include "lessons/lesson.hpp"

namespace mhascope {

struct StageDifference {
  StageId stage;
  double maxAbsDiff = 0;  // over every element; two -inf (masked) cells count as equal
};

// Where one number of a wrongly split head came from in the projection (B, T, d_model).
struct FeatureSource {
  int token = 0;    // t in 0 .. T-1
  int feature = 0;  // column in 0 .. d_model-1
};

struct LoopVsVectorized {
  int heads = 0, tq = 0, tk = 0, dModel = 0, dk = 0;
  int kvHeads = 0;  // N: K and V are split into N heads of d_k (N = h: multi-head attention)
  AttnPositions positions = AttnPositions::None;  // RoPE: the rotated Q and K are compared too
  // Per-head loop (slice W_q[:, i*d_k:(i+1)*d_k], attend, collect, concatenate, W_o) against the
  // engine's vectorized forward(): q_heads .. output (with q_rotated, k_rotated under RoPE; query
  // head i reading K/V head i / (h/N) when grouped; ALiBi's bias added in the loop). Every entry
  // must be ~0 (float rounding).
  std::vector<StageDifference> loopVsVectorized;
  double loopMaxAbsDiff = 0;
  // The same pipeline with view(B, h, T, d_k) in place of view(B, T, h, d_k).transpose(1, 2) on
  // the split (and the matching wrong merge): heads are built from the wrong numbers.
  std::vector<StageDifference> skippedVsCorrect;
  double skippedOutputMaxAbsDiff = 0;
  // Where head i's (row t, column c) of the wrongly split Q came from, batch item 0:
  // skippedSources[(i * T_q + t) * d_k + c]. With the transpose it would be (t, i*d_k + c).
  std::vector<FeatureSource> skippedSources;  // (h, T_q, d_k)
  // How many of those entries come from another token than the row they now sit in.
  int skippedWrongToken = 0;
  FeatureSource skippedSource(int head, int row, int col) const {
    return skippedSources[(static_cast<std::size_t>(head) * tq + row) * dk + col];
  }
};

// Runs forward() and the per-head loop on the same model. The skipped-transpose result equals
// the correct one when h = 1 or T = 1 (the transpose then moves nothing).
Result<LoopVsVectorized> perHeadLoopVsVectorized(const Model& model);

// Why d_model is cut into h heads of d_k: the parameter and FLOP budget of one full-width head
// spent on h patterns, each of rank at most d_k; nothing in the layer forces heads apart (the
// parameters lesson and the quiz show the same words).
const char* headSplitReasonText();
// The Learned tab's note: where head i looks depends only on W_QK^(i) = W_q^(i) W_k^(i)^T, what it
// writes only on W_OV^(i) = W_v^(i) W_o^(i); W_q^(i) M with W_k^(i) M^-T gives the same scores.
// With the live d_model, h, d_k and whether the biases are on.
std::string headCircuitsText(int dModel, int dk, bool hasBias);

namespace lessons {

struct Split {
  static constexpr const char* kId = "split";
  static constexpr const char* kTitle = "Split";
  static constexpr LessonGroup kGroup = LessonGroup::Basics;  // its group in the lesson list
  static constexpr const char* kLearn =  // the list's "what you will learn"
      "Why one big projection is h small ones, and what a skipped transpose breaks";
  static constexpr LessonCost kCost = LessonCost::Rerun;
  struct Choices {
    int head = 0;  // the framed head i (drawing only: the result covers every head)
    template <class C, class F>
    static void fields(C& c, F&& f) {
      f("split_head", c.head);
    }
    void keepInRange(const Trace&) {}  // the tab clamps the head it frames
    int variant() const { return 0; }  // one result whatever is picked
    bool operator==(const Choices&) const = default;
  };
  using Result = LoopVsVectorized;
  static mhascope::Result<Result> compute(const Model& model, const Choices&) {
    return perHeadLoopVsVectorized(model);
  }
  template <class Ui>
  static void drawTab(Ui& ui, const LessonOutcome<Result>& shown, Choices& choices);
};

}  // namespace lessons
}  // namespace mhascope
