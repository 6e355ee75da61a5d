// The lesson tabs' view state (every lesson's Choices, core/lessons/lessons.hpp) and the lesson
// results the compute scheduler made for the shown trace, one slot per lesson of AllLessons.
// Tabs read their slot and edit their choices; the scheduler (shell/compute_scheduler.cpp)
// recomputes a slot when its choices or the trace change — never a draw call.
#pragma once

#include <cstdint>
#include <tuple>

#include "attention/trace.hpp"
#include "lessons/lessons.hpp"

namespace mhascope::app {

struct LessonView {
  LessonChoices c;  // what the tabs let the user pick; the results are computed for these
};

// The Rerun lessons (split, masks, pitfalls) run the pipeline two to four times: above this many
// recorded bytes per trace they are not computed (the tab says why), which bounds the time and
// memory they add to a configuration.
inline constexpr double kRecomputeLimitBytes = 64.0 * 1024 * 1024;
double recordedTraceBytes(const Trace& trace);

// Which result a Rerun lesson holds: the trace's serial and the choices' variant().
struct LessonKey {
  std::uint64_t serial = ~0ull;
  int variant = -1;
  bool operator==(const LessonKey&) const = default;
};

// One lesson's result with what it was computed for.
template <class L>
struct LessonSlot {
  LessonOutcome<typename L::Result> outcome;
  std::uint64_t serial = ~0ull;  // the trace serial (~0: nothing yet)
  int variant = -1;              // Rerun: the choices' variant()
  int batch = -1;                // Quick: b ...
  typename L::Choices choices{};  //        ... and the choices
  LessonKey key() const { return {serial, variant}; }
};

template <class List>
struct LessonSlots;
template <class... L>
struct LessonSlots<LessonList<L...>> {
  using type = std::tuple<LessonSlot<L>...>;
};

// Results of the shown trace, one slot per lesson.
struct LessonResults {
  LessonSlots<AllLessons>::type slots;

  template <class L>
  LessonSlot<L>& of() {
    return std::get<LessonSlot<L>>(slots);
  }
  template <class L>
  const LessonSlot<L>& of() const {
    return std::get<LessonSlot<L>>(slots);
  }
  // Whether lesson L has a result for the trace with this serial (maybe for an older choice,
  // while the new one is computed).
  template <class L>
  bool has(std::uint64_t traceSerial) const {
    return of<L>().serial == traceSerial;
  }
};

}  // namespace mhascope::app
