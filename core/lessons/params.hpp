// Lesson "Params" — where the parameters go: the table of attention/model.hpp's parameterTable()
// (the CLI's `info` prints the same table), for the shown d_model and h.
#pragma once

#include "attention/model.hpp"
#include "lessons/lesson.hpp"

namespace mhascope::lessons {

struct Params {
  static constexpr const char* kId = "params";
  static constexpr const char* kTitle = "Params";
  static constexpr LessonGroup kGroup = LessonGroup::Basics;  // its group in the lesson list
  static constexpr const char* kLearn =  // the list's "what you will learn"
      "Where the parameters go: W_q, W_k, W_v, W_o and their biases, for your configuration";
  static constexpr LessonCost kCost = LessonCost::Quick;
  struct Choices {  // nothing to pick
    template <class C, class F>
    static void fields(C&, F&&) {}
    void keepInRange(const Trace&) {}
    bool operator==(const Choices&) const = default;
  };
  using Result = ParameterTable;
  static mhascope::Result<Result> compute(const LessonInput& in, const Choices&) {
    return parameterTable(in.trace.dModel, in.trace.heads);
  }
  template <class Ui>
  static void drawTab(Ui& ui, const LessonOutcome<Result>& shown, Choices& choices);
};

}  // namespace mhascope::lessons
