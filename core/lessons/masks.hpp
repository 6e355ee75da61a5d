// Lesson "Masks" — mask on / off: the same input with no mask and with a causal (or key padding)
// mask, side by side. Reruns the pipeline.
#pragma once

#include <algorithm>
#include <string>

#include "attention/trace.hpp"
#include "lessons/lesson.hpp"

namespace mhascope {

enum class MaskLesson { Causal, KeyPadding };

struct MaskComparison {
  MaskLesson kind = MaskLesson::Causal;
  int paddedKeys = 0;  // key padding: the last n keys are ignored
  Trace unmasked;      // no mask at all
  Trace masked;        // only this lesson's mask
  Tensor weightDiff;   // (B, h, T_q, T_k) masked - unmasked weights
  double maxAbsWeightDiff = 0;
  double meanAbsOutputDiff = 0;  // over (B, T_q, d_model)
  double maxAbsOutputDiff = 0;
  int blockedCells = 0;          // per batch item and head: cells the mask blocks
  int fullyMaskedRows = 0;
};
// paddedKeys <= 0 picks max(1, T_k / 3).
Result<MaskComparison> maskComparison(const Model& model, MaskLesson kind, int paddedKeys = 0);
// What the masked picture shows, read from the masked trace (batch item 0): which keys the first
// and the last query see, and whether the last row changed (causal); which key columns are blocked
// and that the padded tokens' query rows still get outputs (key padding).
std::string maskComparisonText(const MaskComparison& r);
// The masks lesson's opening: what a mask does, and each API's convention.
const char* maskLessonIntro();
// What other code gives for a query row with every key blocked (mhascope: weights 0).
const char* fullyMaskedRowElsewhereText();

namespace lessons {

struct Masks {
  static constexpr const char* kId = "masks";
  static constexpr const char* kTitle = "Masks";
  static constexpr LessonGroup kGroup = LessonGroup::Basics;  // its group in the lesson list
  static constexpr const char* kLearn =  // the list's "what you will learn"
      "What causal and padding masks block, and each library's convention for them";
  static constexpr LessonCost kCost = LessonCost::Rerun;
  struct Choices {
    int kind = 0;     // 0 causal, 1 key padding (a MaskLesson)
    int padKeys = 0;  // key padding: how many keys are padded (0 = T_k / 3)
    template <class C, class F>
    static void fields(C& c, F&& f) {
      f("mask_kind", c.kind);
      f("pad_keys", c.padKeys);
    }
    void keepInRange(const Trace& t) {
      if (kind == 1) padKeys = std::clamp(padKeys, 0, t.tk);
    }
    int variant() const { return kind * 100000 + padKeys; }  // what the result depends on
    bool operator==(const Choices&) const = default;
  };
  using Result = MaskComparison;
  static mhascope::Result<Result> compute(const Model& model, const Choices& c) {
    return maskComparison(model, c.kind == 0 ? MaskLesson::Causal : MaskLesson::KeyPadding, c.padKeys);
  }
  template <class Ui>
  static void drawTab(Ui& ui, const LessonOutcome<Result>& shown, Choices& choices);
};

}  // namespace lessons
}  // namespace mhascope
