// Lesson "KV cache" — a decoding stepper: prefill P tokens at once, then one token per step; each
// step appends one row to the K and V caches and computes one query row against them. Checked
// against the full causal forward at every step. Reruns the pipeline (the decode from its prefill).
#pragma once

#include <algorithm>
#include <string>

#include "attention/decode.hpp"
#include "attention/trace.hpp"
#include "lessons/lesson.hpp"

namespace mhascope {

struct KvCacheLesson {
  int prefill = 1;  // P
  int steps = 0;    // tokens decoded one at a time after the prefill
  int tokens = 0;   // T: the text's tokens; P + steps of them are made
  DecodeSession session;  // the caches, outputs and per-step counts; lastWeights: the newest query row
  Trace full;             // the full causal forward over all T tokens (the same options)
  // Over the rows made so far: max |decode output - full causal output| (the running max), and the
  // newest row's weights against the full forward's row of the same query.
  double maxAbsOutputDiff = 0;
  double maxAbsWeightDiff = 0;
  double bytesPerToken = 0;  // cache bytes one token adds: 2 (K and V) · B · N · d_k · 4
  int length() const { return prefill + steps; }
  const DecodeStep& lastStep() const { return session.result.steps.back(); }
};
// steps is clamped to 0 .. T - P.
Result<KvCacheLesson> kvCacheLesson(const Model& model, int prefill, int steps);
// What the step just did, in words from the result: which token, the cache's rows, the one query
// row, FLOPs against recomputing, the cache's bytes and the check against the full forward.
std::string kvCacheStepText(const KvCacheLesson& r);
// The context of the worked example in kvCacheScaleText (8K tokens).
inline constexpr std::int64_t kKvExampleContext = 8192;
// The cache at scale: this text's bytes per sequence in one layer, a published model's per sequence
// at kKvExampleContext (kvCacheBytesPerSequence), and why decoding is bandwidth bound.
std::string kvCacheScaleText(const KvCacheLesson& r);
// The lesson's opening.
const char* kvCacheLessonIntro();

namespace lessons {

struct KvCache {
  static constexpr const char* kId = "kv_cache";
  static constexpr const char* kTitle = "KV cache";
  static constexpr LessonGroup kGroup = LessonGroup::Today;  // its group in the lesson list
  static constexpr const char* kLearn =  // the list's "what you will learn"
      "How decoding reuses past keys and values: one new query row per step";
  static constexpr LessonCost kCost = LessonCost::Rerun;
  struct Choices {
    int prefill = 3;  // P, 1 .. T
    int steps = 0;    // tokens decoded after the prefill ("Next token" adds one, "Reset" sets 0)
    template <class C, class F>
    static void fields(C& c, F&& f) {
      f("kv_prefill", c.prefill);
      f("kv_steps", c.steps);
    }
    void keepInRange(const Trace& t) {
      prefill = std::clamp(prefill, 1, std::max(1, t.tk));
      steps = std::clamp(steps, 0, std::max(0, t.tk - prefill));
    }
    // What the result depends on, below 2^24: P and the steps below 4096 (a rerun lesson's trace, at
    // most 64 MiB, holds far fewer tokens).
    int variant() const { return ((prefill & 0xfff) << 12) | (steps & 0xfff); }
    bool operator==(const Choices&) const = default;
  };
  using Result = KvCacheLesson;
  static mhascope::Result<Result> compute(const Model& model, const Choices& c) {
    return kvCacheLesson(model, c.prefill, c.steps);
  }
  template <class Ui>
  static void drawTab(Ui& ui, const LessonOutcome<Result>& shown, Choices& choices);
};

}  // namespace lessons
}  // namespace mhascope
