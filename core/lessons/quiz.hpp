// Lesson "Quiz" — questions with the live numbers, each answer explained after the try. The
// questions come with each trace: the compute worker makes them right after the forward
// (ComputeOutcome::quiz), so a new trace never waits for a frame without its quiz.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attention/trace.hpp"
#include "lessons/lesson.hpp"

namespace mhascope {

struct QuizQuestion {
  std::string question;
  std::vector<std::string> choices;  // distinct
  int correct = 0;                   // index into choices
  std::string explanation;           // shown after a try
};
// About fifteen questions; the numbers (d_k, shapes, counts, which key a query looks at most)
// come from this trace and these weights. Deterministic for the same trace. Head, query and key
// indices are 0-based. A distractor that would be just as true for this configuration (e.g. "every
// h-th column" when h = 1, a shape equal to the answer up to size-1 axes) is left out, and a
// question that cannot be asked fairly (e.g. a tie for the most-weighted key) is skipped.
std::vector<QuizQuestion> makeQuiz(const Trace& trace, const MhaWeights& weights);

namespace lessons {

struct Quiz {
  static constexpr const char* kId = "quiz";
  static constexpr const char* kTitle = "Quiz";
  static constexpr LessonGroup kGroup = LessonGroup::CheckYourself;  // its group in the lesson list
  static constexpr const char* kLearn =  // the list's "what you will learn"
      "Questions on your model's live numbers, each answer explained after you try";
  static constexpr LessonCost kCost = LessonCost::WithTrace;
  struct Choices {  // the answers so far; not saved (a new trace asks new questions)
    std::uint64_t serial = ~0ull;  // the trace the answers belong to
    std::vector<int> picked;       // per question: the picked choice, -1 = not tried yet
    template <class C, class F>
    static void fields(C&, F&&) {}
    void keepInRange(const Trace&) {}
    bool operator==(const Choices&) const = default;
  };
  using Result = std::vector<QuizQuestion>;
  static mhascope::Result<Result> compute(const LessonInput& in, const Choices&) {
    return makeQuiz(in.trace, in.model.weights);
  }
  template <class Ui>
  static void drawTab(Ui& ui, const LessonOutcome<Result>& shown, Choices& choices);
};

}  // namespace lessons
}  // namespace mhascope
