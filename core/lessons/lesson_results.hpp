// Every lesson result the window shows, for one configuration and the view choices some lessons
// depend on (a chosen token, cell, mask, pitfall, sweep). The app computes them outside its draw
// calls — the quick ones between frames, the ones that rerun the pipeline on its compute thread —
// and the lesson tabs only lay them out. Pure core: Eigen + std.
//
//   LessonChoices          what the lesson tabs let the user pick (0-based indices)
//   LessonOutcome<T>       one lesson's value or the reason it has none
//   computeQuickLessons    2, 3, 4, 7, 9: from the trace and its weights, microseconds
//   RecomputingLesson      1, 5, 6: rerun the pipeline on the model several times
//   computeRecomputingLesson
//   (10, the quiz, is makeQuiz of each new trace: the app computes it with the trace.)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lessons/lessons.hpp"

namespace mhascope {

template <class T>
struct LessonOutcome {
  std::optional<T> value;
  std::string error;  // why there is no value (empty when there is one)

  void assign(Result<T> r) {
    if (r) {
      value = std::move(r).value();
      error.clear();
    } else {
      value.reset();
      error = r.error().message;
    }
  }
  const T* get() const { return value ? &*value : nullptr; }
};

// What the lesson tabs let the user choose; the app keeps them in range of the shown trace.
struct LessonChoices {
  int batch = 0;                                // b, the batch item every view shows
  int mixToken = 0, mixDim = 0;                 // 3: token t, output dimension j
  int editHead = 0, editQuery = 0, editKey = 0;  // 4: the score editor's cell
  int maskKind = 0, padKeys = 0;                // 5: 0 causal, 1 key padding; padded keys (0 = T_k / 3)
  int pitfallIndex = 0;                         // 6: a Pitfall
  int sweepVariable = 0;                        // 7: a SweepVariable ...
  int sweepTo = 256;                            //    ... swept from 1 to this
  int cellHead = 0, cellQuery = 0, cellKey = 0;  // 9: the cell taken apart
  bool operator==(const LessonChoices&) const = default;
};

// Points the cost lesson's sweep plots.
inline constexpr int kCostSweepPoints = 64;

// The lessons computed from the recorded trace and the weights it was computed with.
struct QuickLessons {
  LessonOutcome<ParameterTable> params;   // 2
  LessonOutcome<MixThenSplit> mix;        // 3
  LessonOutcome<CellBreakdown> editCell;  // 4: the score editor's cell
  CostSizes costSizes;                    // 7: the trace's sizes ...
  CostPoint costNow;                      //    ... and their cost
  LessonOutcome<std::vector<CostPoint>> sweep;
  LessonOutcome<CellBreakdown> cell;      // 9
};
QuickLessons computeQuickLessons(const Trace& trace, const MhaWeights& weights, const LessonChoices& choices);

// The lessons that rerun the whole pipeline on the model (two to four forward passes each).
enum class RecomputingLesson { Split, Masks, Pitfall };
// Which variant of a recomputing lesson these choices ask for (the split has one; masks: kind and
// padded keys; pitfalls: the pitfall), so a result is recomputed only when that changes.
int recomputingVariant(RecomputingLesson lesson, const LessonChoices& choices);

struct RecomputedLessons {
  LessonOutcome<LoopVsVectorized> split;  // 1
  LessonOutcome<MaskComparison> masks;    // 5
  LessonOutcome<PitfallResult> pitfall;   // 6
};
// Fills the one member of `out` that `lesson` names, for `choices`.
void computeRecomputingLesson(const Model& model, RecomputingLesson lesson, const LessonChoices& choices,
                              RecomputedLessons& out);

}  // namespace mhascope
