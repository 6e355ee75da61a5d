// The lessons: the numbers behind the teaching tabs, computed from the live model and trace —
// never hard-coded. One lesson = one struct in core/lessons/<name>.hpp (its computation in
// <name>.cpp; the shape of a lesson is lesson.hpp) plus its tab, app/lessons/<name>_tab.cpp.
// AllLessons below is the one list: the window's lesson list, the compute scheduler and the
// workspace file iterate it, by id. Pure core: Eigen + std.
#pragma once

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string_view>
#include <tuple>

#include "lessons/cell.hpp"
#include "lessons/cost.hpp"
#include "lessons/gqa.hpp"
#include "lessons/kv_cache.hpp"
#include "lessons/latent.hpp"
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
#include "lessons/stable_scores.hpp"
#include "lessons/windows.hpp"

namespace mhascope {

// Every lesson, in the order a newcomer takes them: the window's lesson list shows them in this
// order under their groups' titles, so the lessons of one group stand together, groups in order.
// Basics first (who looks at whom, one weight, the heads, masks, what heads do, the costs, the
// bugs), then what today's models change (positions; the KV cache before GQA, latent attention and
// windows, which shrink it, with the score stabilisers between), then the quiz.
using AllLessons = LessonList<lessons::Lines, lessons::Cell, lessons::Split, lessons::Mix, lessons::Masks,
                              lessons::Roles, lessons::Params, lessons::Cost, lessons::Pitfalls,
                              lessons::Positions, lessons::KvCache, lessons::Gqa, lessons::Latent,
                              lessons::StableScores, lessons::Windows, lessons::Quiz>;

// The lesson list's rows: AllLessons' entries (id, title, group, what you will learn), in its order.
inline constexpr std::array<LessonEntry, AllLessons::kCount> kLessonEntries = AllLessons::entries();

constexpr bool lessonsStandByGroup() {
  for (std::size_t i = 1; i < kLessonEntries.size(); ++i) {
    if (kLessonEntries[i].group < kLessonEntries[i - 1].group) return false;
  }
  return true;
}
static_assert(lessonsStandByGroup(), "AllLessons lists each group's lessons together, the groups in LessonGroup's order");

// The position of the lesson with this id in the list, or nothing (not a lesson's id).
constexpr std::optional<std::size_t> lessonIndexOf(std::string_view id) {
  for (std::size_t i = 0; i < kLessonEntries.size(); ++i) {
    if (id == kLessonEntries[i].id) return i;
  }
  return std::nullopt;
}

// The id of the lesson `step` places after (negative: before) the lesson `id` in the list, stopping
// at the first and the last; the first lesson's for an id that is no lesson's.
constexpr const char* lessonAfter(std::string_view id, int step) {
  const auto at = lessonIndexOf(id);
  if (!at) return kLessonEntries.front().id;
  const long to = std::clamp(static_cast<long>(*at) + step, 0L, static_cast<long>(kLessonEntries.size()) - 1);
  return kLessonEntries[static_cast<std::size_t>(to)].id;
}

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
