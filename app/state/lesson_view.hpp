// The lesson tabs' view state (what the user picked in them) and the lesson results the
// compute scheduler made for the shown trace. Panels read the results and edit the choices; the
// scheduler (shell/compute_scheduler.cpp) recomputes a result when its choice or the trace
// changes — never a draw call.
#pragma once

#include <cstdint>
#include <vector>

#include "attention/trace.hpp"
#include "lessons/lesson_results.hpp"

namespace mhascope::app {

struct LessonView {
  LessonChoices c;                         // the choices the results are computed for
  int splitHead = 0;                       // 1: the framed head (drawing only)
  float editScore = 16.0f;                 // 4: the score to set
  int sweepTo[3] = {256, 1024, 64};        // 7: per swept variable; c.sweepTo is the current one
  std::vector<std::uint8_t> headHidden;    // 8: 1 = head switched off
  std::uint64_t quizSerial = ~0ull;        // 10: the trace the answers below belong to
  std::vector<int> quizPicked;             //     -1 = not tried yet
};

// Keeps every choice inside the trace's sizes (b, token, dimension, head, query, key, sweep end),
// the same clamps the tabs apply when they draw.
void keepLessonChoicesInRange(LessonView& view, const Trace& trace, int batch);

// The lessons that rerun the pipeline (split, masks, pitfalls) run it two to four times: above
// this many recorded bytes per trace they are not computed (the tab says why), which bounds the
// time and memory they add to a configuration.
inline constexpr double kRecomputeLimitBytes = 64.0 * 1024 * 1024;
double recordedTraceBytes(const Trace& trace);

// Results of the shown trace, with what they were computed for.
struct LessonResults {
  std::uint64_t quickSerial = ~0ull;       // trace serial of `quick`
  LessonChoices quickChoices;
  QuickLessons quick;                      // 2, 3, 4, 7, 9
  struct Key {
    std::uint64_t serial = ~0ull;
    int variant = -1;
    bool operator==(const Key&) const = default;
  };
  Key recomputedKey[3];                    // per RecomputingLesson
  RecomputedLessons recomputed;            // 1, 5, 6
  // Whether `lesson` has a result for the trace with this serial (maybe for an older choice,
  // while the new one is computed).
  bool hasRecomputed(RecomputingLesson lesson, std::uint64_t traceSerial) const {
    return recomputedKey[static_cast<int>(lesson)].serial == traceSerial;
  }
};

}  // namespace mhascope::app
