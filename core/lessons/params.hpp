// Lesson "Params" — where the parameters go: the table of attention/model.hpp's parameterTable()
// (the CLI's `info` prints the same table), for the shown d_model, h, N K/V heads and biases.
#pragma once

#include "attention/model.hpp"
#include "lessons/lesson.hpp"

namespace mhascope::lessons {

struct Params {
  static constexpr const char* kId = "params";
  static constexpr const char* kTitle = "Params";
  static constexpr LessonCost kCost = LessonCost::Quick;
  struct Choices {  // nothing to pick
    template <class C, class F>
    static void fields(C&, F&&) {}
    void keepInRange(const Trace&) {}
    bool operator==(const Choices&) const = default;
  };
  using Result = ParameterTable;
  // The lesson's opening: why h heads of d_k features cost what one full-width head costs, and
  // what N K/V heads change.
  static const char* intro();
  static mhascope::Result<Result> compute(const LessonInput& in, const Choices&) {
    return parameterTable(layerSizesOf(in.trace));
  }
  template <class Ui>
  static void drawTab(Ui& ui, const LessonOutcome<Result>& shown, Choices& choices);
};

}  // namespace mhascope::lessons
