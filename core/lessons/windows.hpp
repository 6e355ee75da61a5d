// Lesson "Windows" — the sliding window and the attention sinks: which keys a query keeps, what the
// heads' weights become, the score cells (memory) kept as T grows, and how much weight the first
// token takes on the current configuration (the sink a trained model shows, random weights do not), beside
// the learned sink gpt-oss gives each head and its share on the same sentence. Reruns the pipeline.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "attention/trace.hpp"
#include "lessons/lesson.hpp"

namespace mhascope {

// Score cells one head keeps for T queries over T keys (self-attention), with window W (0: none)
// and S sinks, causal or not: what a kernel that skips blocked cells computes and holds, O(T·(W + S))
// instead of O(T²) (this engine computes every cell and masks).
std::int64_t visibleScoreCells(std::int64_t T, int window, int sinks, bool causal);

struct WindowMemoryRow {
  std::int64_t tokens = 0;        // T
  std::int64_t fullCells = 0;     // per head without a window: T(T+1)/2 causal, T² otherwise
  std::int64_t windowCells = 0;   // per head with the window and sinks
  std::int64_t cachedKeys = 0;    // keys a streaming decoder keeps in its cache: min(T, W + S)
};

// How much of each query's weight key 0 takes (in one head, or averaged over every head), against
// the share it would get if the query spread its weight evenly over the keys it sees. Over the
// queries that see key 0 and at least one other key (query 0 alone, under a causal mask, has no
// choice).
struct FirstKeyShare {
  double weight = 0;   // mean of A[t, 0]
  double uniform = 0;  // mean of 1 / (keys query t sees)
  int queries = 0;     // how many queries the means cover
  double ratio() const { return uniform > 0 ? weight / uniform : 0.0; }
};

struct WindowLesson {
  int window = 1, sinks = 0;
  bool causal = true;
  Trace full;      // the configuration with the chosen mask and no window
  Trace windowed;  // the same with window W and S sinks
  // (B, T_q, T_k): 1 = inside the window, 0.5 = outside it but kept as a sink, 0 = hidden (by the
  // window or any other rule: causal, padding).
  Tensor keep;
  std::int64_t keptCells = 0, fullCells = 0;  // per head, batch item 0: visible cells with / without the window
  std::vector<WindowMemoryRow> memory;        // this T, then longer sequences
  std::vector<FirstKeyShare> firstKey;        // per head, batch item 0, without the window
  FirstKeyShare firstKeyAll;                  // every head together
  double meanAbsOutputDiff = 0;               // windowed vs full outputs, over (B, T_q, d_model)
  double meanAbsOutputDiffNoSinks = 0;        // the same window with no sinks (= the first when S = 0)
  // The learned sink (gpt-oss), without the window: the controls' logits when they set one, else
  // kLessonSinkLogit in every head; each head's mean share on the sink over batch item 0's query rows.
  Trace sunk;
  bool sinkFromControls = false;
  std::vector<float> sinkLogits;   // (h) the logits used
  std::vector<double> sinkShare;   // (h) mean of 1 - Σ_k A[t, k]
  double sinkShareAll = 0;         // over every head
  FirstKeyShare firstKeySunk;      // the first key's share with the learned sink, every head
};
// The learned sink's logit the lesson uses when the controls set none.
inline constexpr float kLessonSinkLogit = 1.0f;
Result<WindowLesson> windowLesson(const Model& model, int window, int sinks, bool causal);
// What the window keeps, in words from the result: query T_q - 1's visible keys (window and sinks),
// the cells kept at this T and at the longest T of the table.
std::string windowKeepText(const WindowLesson& r);
// How much weight the first token takes here against a uniform share, and whether that is a sink.
std::string firstKeyText(const WindowLesson& r, int head);
// How far back L stacked windowed layers reach: each layer reads W - 1 positions back, so L · (W - 1).
std::int64_t windowReach(std::int64_t layers, std::int64_t window);
// Mistral-7B's sliding_window (mistralai/Mistral-7B-v0.1 config.json), the example of windowReachText.
inline constexpr std::int64_t kMistralWindow = 4096;
// The receptive field of stacked windows (this W, and Mistral-7B's) and the rolling-buffer cache.
std::string windowReachText(const WindowLesson& r);
// A published model's local and global layers as its config.json (and its family's defaults) lay them out: every
// layer a window of W (globalEvery 0), or layer i global — the whole causal past — when (i + 1) % globalEvery == 0
// and windowed otherwise (Gemma 2 and gpt-oss every other layer, Gemma 3 one in six).
struct PublishedLayerPattern {
  const char* name;
  int layers;       // num_hidden_layers
  int window;       // sliding_window
  int globalEvery;  // 0: no global layer
};
// Mistral-7B, Gemma-2-2B, Gemma-3-1B, Gemma-3-27B, gpt-oss-20b, gpt-oss-120b.
std::vector<PublishedLayerPattern> publishedLayerPatterns();
bool isGlobalLayer(const PublishedLayerPattern& p, int layer);
int globalLayerCount(const PublishedLayerPattern& p);  // its layers for which isGlobalLayer holds
// The keys a decoder caches at a context of n tokens, as a share of what every layer global would cache:
// (global · n + local · min(n, W)) / (layers · n).
double layerPatternCacheShare(const PublishedLayerPattern& p, std::int64_t n);
// The pattern of the first `count` layers, one letter each: "L" a local (windowed) layer, "G" a global one.
std::string layerPatternStrip(const PublishedLayerPattern& p, int count);
// The contexts the table gives the cache at.
inline constexpr std::int64_t kPatternShortContext = 8192, kPatternLongContext = 131072;
// What local and global layers are for, with Gemma 3 27B's counts and cache from the table.
std::string layerPatternsText();

// The learned sink (gpt-oss) beside the emergent one: its formula and its share on this sentence, from the engine.
std::string learnedSinkText(const WindowLesson& r, int head);
// The lesson's opening, and what StreamingLLM keeps and why.
const char* windowLessonIntro();
const char* streamingLlmText();
// Where the lesson's W and S started: from the controls' window, or, when they set none, at the
// lesson's own start (Choices::kStartWindow, kStartSinks), said as such.
std::string windowStartText(const Trace& trace);

namespace lessons {

struct Windows {
  static constexpr const char* kId = "windows";
  static constexpr const char* kTitle = "Windows";
  static constexpr LessonGroup kGroup = LessonGroup::Today;  // its group in the lesson list
  static constexpr const char* kLearn =  // the list's "what you will learn"
      "Sliding windows and attention sinks: which keys each query keeps";
  static constexpr LessonCost kCost = LessonCost::Rerun;
  struct Choices {
    // Where the lesson starts when the controls set no window (it compares a window with none).
    static constexpr int kStartWindow = 3, kStartSinks = 1;
    int window = kStartWindow;  // W >= 1; starts at the controls' W (and S) when they set one
    int sinks = kStartSinks;    // S >= 0
    int causal = 1;  // 1: under the causal mask, 0: none (|t - j| < W)
    template <class C, class F>
    static void fields(C& c, F&& f) {
      f("window_size", c.window);
      f("window_sinks", c.sinks);
      f("window_causal", c.causal);
    }
    void startFrom(const ConfigStart& now, const std::optional<ConfigStart>& before) {
      if (before && before->window == now.window && before->sinks == now.sinks) return;
      window = now.window > 0 ? now.window : kStartWindow;
      sinks = now.window > 0 ? now.sinks : kStartSinks;
    }
    void keepInRange(const Trace& t) {
      window = std::clamp(window, 1, std::max(1, t.tk));
      sinks = std::clamp(sinks, 0, std::max(0, t.tk));
      causal = causal ? 1 : 0;
    }
    // What the result depends on, below 2^25: W and S below 4096 (a rerun lesson's trace, at most
    // 64 MiB, holds far fewer tokens).
    int variant() const { return ((window & 0xfff) << 13) | ((sinks & 0xfff) << 1) | (causal ? 1 : 0); }
    bool operator==(const Choices&) const = default;
  };
  using Result = WindowLesson;
  static mhascope::Result<Result> compute(const Model& model, const Choices& c) {
    return windowLesson(model, c.window, c.sinks, c.causal != 0);
  }
  template <class Ui>
  static void drawTab(Ui& ui, const LessonOutcome<Result>& shown, Choices& choices);
};

}  // namespace lessons
}  // namespace mhascope
