// The lessons: the numbers behind the teaching tabs, computed from the live model and trace —
// never hard-coded. One lesson = one struct in core/lessons/<name>.hpp (its computation in
// <name>.cpp; the shape of a lesson is lesson.hpp) plus its tab, app/lessons/<name>_tab.cpp.
// AllLessons below is the one list: the tab strip, the compute scheduler and the workspace file
// iterate it, by id. Pure core: Eigen + std.
#pragma once

#include <algorithm>
#include <optional>
#include <tuple>

#include "lessons/cell.hpp"
#include "lessons/cost.hpp"
#include "lessons/gqa.hpp"
#include "lessons/kv_cache.hpp"
#include "lessons/lesson.hpp"
#include "lessons/lines.hpp"
#include "lessons/masks.hpp"
#include "lessons/mix.hpp"
#include "lessons/params.hpp"
#include "lessons/pitfalls.hpp"
#include "lessons/positions.hpp"
#include "lessons/quiz.hpp"
#include "lessons/roles.hpp"
#include "lessons/split.hpp"
#include "lessons/windows.hpp"

namespace mhascope {

// Every lesson, in the order of their tabs.
using AllLessons = LessonList<lessons::Split, lessons::Params, lessons::Mix, lessons::Roles, lessons::Masks,
                              lessons::Pitfalls, lessons::Cost, lessons::Lines, lessons::Cell, lessons::Gqa,
                              lessons::Positions, lessons::Windows, lessons::KvCache, lessons::Quiz>;

// What the lesson tabs let the user choose (0-based indices), every lesson's Choices and the
// batch item they all show. The app keeps them in range of the shown trace.
struct LessonChoices {
  int batch = 0;  // b, the batch item every view shows (the view's own, kept inside the trace)
  AllLessons::Choices each;
  // The configuration the choices started from (lesson.hpp's ConfigStart); none: not yet, the first
  // trace sets them. A workspace's saved choices started from its own configuration.
  std::optional<ConfigStart> startedFrom;

  template <class L>
  typename L::Choices& of() {
    return std::get<typename L::Choices>(each);
  }
  template <class L>
  const typename L::Choices& of() const {
    return std::get<typename L::Choices>(each);
  }
  // Every choice inside the trace's sizes (b, token, dimension, head, query, key, sweep end),
  // the same clamps the tabs apply when they draw; first the choices that mirror the controls
  // start from the trace's configuration when it changed.
  void keepInRange(const Trace& t, int viewBatch) {
    batch = std::clamp(viewBatch, 0, std::max(0, t.batch - 1));
    const ConfigStart now = configStartOf(t);
    if (startedFrom != now) {
      std::apply([&](auto&... c) { (startChoicesFrom(c, now, startedFrom), ...); }, each);
      startedFrom = now;
    }
    std::apply([&](auto&... c) { (c.keepInRange(t), ...); }, each);
  }
  // The choices alone: where they started from is not a choice.
  bool operator==(const LessonChoices& o) const { return batch == o.batch && each == o.each; }
};

// Calls f(key, value&) for every saved choice of every lesson: "batch" first, then each lesson's
// fields (LessonChoices may be const or not).
template <class Choices, class F>
void forEachLessonField(Choices& all, F&& f) {
  f("batch", all.batch);
  AllLessons::forEach([&](auto lesson) {
    using L = decltype(lesson);
    L::Choices::fields(all.template of<L>(), f);
  });
}

}  // namespace mhascope
