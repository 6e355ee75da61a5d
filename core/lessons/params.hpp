// Lesson "Params" — where the parameters go: the table of attention/model.hpp's parameterTable()
// (the CLI's `info` prints the same table), for the shown d_model, h, N K/V heads and biases.
#pragma once

#include <string>

#include "attention/model.hpp"
#include "lessons/cost.hpp"
#include "lessons/lesson.hpp"

namespace mhascope {

// What the Params tab shows: the table, and what h does to it here (costHeadsText).
struct ParamsLesson {
  ParameterTable table;
  std::string heads;
};

namespace lessons {

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
  using Result = ParamsLesson;
  // The lesson's opening: why h heads of d_k features cost what one full-width head costs, and
  // what N K/V heads change.
  static const char* intro();
  static mhascope::Result<Result> compute(const LessonInput& in, const Choices&) {
    auto table = parameterTable(layerSizesOf(in.trace));
    if (!table) return table.error();
    return ParamsLesson{std::move(table).value(), costHeadsText(costSizesOf(in.trace))};
  }
  template <class Ui>
  static void drawTab(Ui& ui, const LessonOutcome<Result>& shown, Choices& choices);
};

}  // namespace lessons
}  // namespace mhascope
