// Lesson "Lines" — token lines: each query joined to each key by a line as strong as its weight,
// one colour per head. It draws the recorded weights themselves: nothing to compute.
#pragma once

#include <cstdint>
#include <vector>

#include "lessons/lesson.hpp"

namespace mhascope::lessons {

struct Lines {
  static constexpr const char* kId = "lines";
  static constexpr const char* kTitle = "Lines";
  static constexpr LessonGroup kGroup = LessonGroup::Basics;  // its group in the lesson list
  static constexpr const char* kLearn =  // the list's "what you will learn"
      "Who each token looks at: every query joined to its keys by lines as strong as their weights";
  static constexpr LessonCost kCost = LessonCost::None;
  struct Choices {
    std::vector<std::uint8_t> hidden;  // per head: 1 = switched off (the tab sizes it to h)
    template <class C, class F>
    static void fields(C& c, F&& f) {
      f("heads_hidden", c.hidden);
    }
    void keepInRange(const Trace&) {}
    bool operator==(const Choices&) const = default;
  };
  using Result = NoResult;
  static mhascope::Result<Result> compute(const LessonInput&, const Choices&) { return NoResult{}; }
  template <class Ui>
  static void drawTab(Ui& ui, const LessonOutcome<Result>& shown, Choices& choices);
};

}  // namespace mhascope::lessons
