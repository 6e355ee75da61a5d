// What every lesson is made of, and the type list the window, the scheduler and the workspace
// iterate. A lesson is one struct in core/lessons/<name>.hpp (its .cpp beside it):
//
//   struct Masks {
//     static constexpr const char* kId = "masks";     // its one name: file, --view, lookups
//     static constexpr const char* kTitle = "Masks";  // the list's (and the tab's) text
//     static constexpr LessonGroup kGroup = LessonGroup::Basics;  // its group in the lesson list
//     static constexpr const char* kLearn = "What causal and padding masks block, ...";  // one line
//     static constexpr LessonCost kCost = LessonCost::Rerun;
//     struct Choices {  // what its tab lets the user pick
//       int kind = 0, padKeys = 0;
//       template <class C, class F> static void fields(C& c, F&& f);  // f("mask_kind", c.kind) ...
//       void keepInRange(const Trace& t);  // inside the trace's sizes
//       int variant() const;               // Rerun only: what the result depends on
//     };
//     using Result = MaskComparison;
//     static mhascope::Result<Result> compute(const Model& model, const Choices& c);
//     template <class Ui> static void drawTab(Ui& ui, const LessonOutcome<Result>& shown, Choices& c);
//   };
//
// compute() takes a LessonInput (the trace, its model, b), except for a Rerun lesson: it runs on a
// lesson thread while the window may replace the trace, so it takes the Model alone.
// `fields` names each choice under its workspace key ("mask_kind") so the workspace file writes
// and reads it without knowing the lesson. `drawTab` is defined by the window
// (app/lessons/<name>_tab.cpp): a template only so that core names no window type.
// Pure core: std only.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "attention/model.hpp"
#include "attention/trace.hpp"
#include "util/result.hpp"

namespace mhascope {

// How much a lesson's compute() costs, which decides when and where the app runs it.
enum class LessonCost {
  None,       // nothing to compute: the tab draws the recorded trace itself
  Quick,      // from the trace and its weights, microseconds: after every new trace or choice
  Rerun,      // reruns the whole pipeline 2-4 times: only while its tab is open, off the UI thread when big
  WithTrace,  // made by the compute worker together with each trace (ComputeOutcome)
};

// The lesson list's groups, in the order a newcomer takes them (lessonGroupTitle names them).
enum class LessonGroup {
  Basics,         // how multi-head attention works, step by step
  Today,          // what today's models change: positions, the KV cache, shared K/V heads, windows
  CheckYourself,  // the quiz
};
inline constexpr const char* lessonGroupTitle(LessonGroup g) {
  switch (g) {
    case LessonGroup::Basics: return "Basics";
    case LessonGroup::Today: return "Today's attention";
    case LessonGroup::CheckYourself: return "Check yourself";
  }
  return "";
}

// What the lesson list shows of one lesson: its id, title, group and one line of what it teaches.
struct LessonEntry {
  const char* id;
  const char* title;
  LessonGroup group;
  const char* learn;
};

// A lesson's chosen cell (head, query, key) moved inside the trace's heads and tokens.
inline void keepCellInRange(const Trace& t, int& head, int& query, int& key) {
  head = std::clamp(head, 0, std::max(0, t.heads - 1));
  query = std::clamp(query, 0, std::max(0, t.tq - 1));
  key = std::clamp(key, 0, std::max(0, t.tk - 1));
}

// A lesson starts from the configuration the user has: the controls' values that a lesson's own
// choices mirror (the GQA lesson's N, the Windows lesson's W and S). A Choices that mirrors any has
//   void startFrom(const ConfigStart& now, const std::optional<ConfigStart>& before);
// LessonChoices calls it when the first trace comes and whenever one of these values changes in
// the controls (`before`: what they were, none at the start); the lesson's own control then moves
// freely until the controls change again.
struct ConfigStart {
  int kvHeads = 0;  // N (h for multi-head attention)
  int window = 0;   // W, 0: none
  int sinks = 0;    // S
  bool operator==(const ConfigStart&) const = default;
};
inline ConfigStart configStartOf(const Trace& t) { return {t.kvHeads > 0 ? t.kvHeads : t.heads, t.window, t.sinks}; }
inline ConfigStart configStartOf(const ModelConfig& c) {
  return {c.kvHeads > 0 ? c.kvHeads : c.heads, c.window, c.sinks};
}
template <class C>
concept StartsFromConfig = requires(C c, const ConfigStart& now, const std::optional<ConfigStart>& before) {
  c.startFrom(now, before);
};
// A lesson's choices start from `now` if they mirror the controls (nothing otherwise).
template <class C>
void startChoicesFrom(C& c, const ConfigStart& now, const std::optional<ConfigStart>& before) {
  if constexpr (StartsFromConfig<C>) c.startFrom(now, before);
}

// Whether a lesson's compute() reads the layer's W_q, W_k, W_v (re-running it, or multiplying by them): a Rerun
// lesson does unless it says `static constexpr bool kReadsWeights = false` (it makes weights of its own from the
// layer's input and sizes), another lesson only when it says `kReadsWeights = true`. Such a lesson cannot run on a
// pass that is a model forward's record (a latent layer, whose model holds its input and options but no W_q, W_k,
// W_v): the window shows the reason instead.
template <class L>
constexpr bool readsLayerWeights() {
  if constexpr (requires { L::kReadsWeights; }) {
    return L::kReadsWeights;
  } else {
    return L::kCost == LessonCost::Rerun;
  }
}

// What a Quick (or WithTrace) lesson's compute() reads: the shown trace, the model it was
// computed from, and the batch item every view shows (b, already inside the trace).
struct LessonInput {
  const Trace& trace;
  const Model& model;
  int batch = 0;
};

// One lesson's value or the reason it has none.
template <class T>
struct LessonOutcome {
  std::optional<T> value;
  std::string error;  // why there is no value (empty when there is one)

  void assign(Result<T> r) {
    if (r) {
      value = std::move(r).value();
      error.clear();
    } else {
      value.reset();
      error = r.error().message;
    }
  }
  const T* get() const { return value ? &*value : nullptr; }
};

// The Result of a lesson that computes nothing (LessonCost::None).
struct NoResult {};

// A list of lesson types; forEach calls f(L{}) for each (the structs are empty tags).
template <class... L>
struct LessonList {
  using Choices = std::tuple<typename L::Choices...>;
  static constexpr std::size_t kCount = sizeof...(L);
  // Position of T in the list (kCount when absent).
  template <class T>
  static constexpr std::size_t indexOf() {
    std::size_t i = 0, found = kCount;
    ((std::is_same_v<T, L> ? (found = i, ++i) : ++i), ...);
    return found;
  }
  template <class F>
  static void forEach(F&& f) {
    (f(L{}), ...);
  }
  // Every lesson's entry, in list order.
  static constexpr std::array<LessonEntry, kCount> entries() { return {LessonEntry{L::kId, L::kTitle, L::kGroup, L::kLearn}...}; }
};

}  // namespace mhascope
