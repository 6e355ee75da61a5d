// Lesson "GQA / MQA" — grouped-query attention: N K/V heads shared by the h query heads (N = h is
// multi-head attention, N = 1 multi-query). Which query heads read which K/V head, what that saves
// in parameters and in KV-cache bytes per token (live, and for published models from their sizes),
// and the engine rerun with N K/V heads on the current configuration. Reruns the pipeline.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "attention/layer_counts.hpp"
#include "attention/trace.hpp"
#include "lessons/lesson.hpp"

namespace mhascope {

// The attention sizes of one published model, as its config.json gives them.
struct PublishedAttention {
  const char* name;
  int layers;   // num_hidden_layers (n_layer)
  int dModel;   // hidden_size (n_embd)
  int heads;    // num_attention_heads (n_head): h
  int kvHeads;  // num_key_value_heads: N (h for multi-head attention, 1 for multi-query)
  int headDim = 0;  // head_dim when the config sets one other than hidden_size / heads; 0: d_model / h
};
// GPT-2 small, Llama-2-7B, Llama-2-70B, Llama-3-8B, Mistral-7B, Qwen2.5-7B, Falcon-7B, SmolLM-135M,
// Qwen3-0.6B and Gemma-2-2B (heads wider than d_model / h).
std::vector<PublishedAttention> publishedAttentionConfigs();
// The entry of publishedAttentionConfigs() called `name` (the lessons' worked examples); nullopt if none is.
std::optional<PublishedAttention> publishedAttention(std::string_view name);

// A published model's attention computed from its sizes.
struct PublishedRow {
  PublishedAttention model;
  int dk = 0;                          // d_model / h
  int groupSize = 0;                   // h / N query heads per K/V head
  LayerCounts params;                  // one layer (its weights(): biases left out, not every model has them)
  std::int64_t kvBytesPerToken = 0;    // 2 · layers · N · d_k · 2 bytes (16-bit)
  std::int64_t mhaKvBytesPerToken = 0; // the same with N = h
};
PublishedRow publishedRow(const PublishedAttention& m);

struct GqaLesson {
  int dModel = 0, heads = 0, dk = 0;
  int kvHeads = 0;             // N, the chosen number of K/V heads
  int modelKvHeads = 0;        // N of the configuration itself
  std::vector<int> divisors;   // every valid N: the divisors of h, largest first
  std::vector<int> kvHeadOf;   // (h) which K/V head query head i reads, from the engine's kv_groups stage
  int layers = 1, bytesPerValue = 2;
  LayerCounts params, mhaParams;  // with N, and with N = h (their weights(): W_q, W_k, W_v, W_o)
  std::int64_t kvBytesPerToken = 0, mhaKvBytesPerToken = 0;  // 2 · layers · N · d_k · bytes
  std::vector<PublishedRow> published;
  // The engine on the current configuration with the K/V projections of N heads made by averaging
  // the K/V heads of each group (the GQA paper's first step, before it uptrains the grouped model),
  // against the configuration's own weights with every query head given its own K/V head.
  Trace mha;                   // one K/V head per query head: the configuration's own numbers (its K/V
                               // heads copied when it is grouped)
  Trace grouped;               // N K/V heads
  double maxWeightChange = 0;  // max |weights(N) - weights(N = h)| over every cell
  double maxOutputChange = 0;  // over (B, T_q, d_model)
  // Per query head i: max |weights of head i - weights of the head after it in its group| (N run);
  // -1 when head i is the last of its group.
  std::vector<double> mateDifference;
};

// The weights with N K/V heads: the model's K/V projection columns expanded to one K/V head per
// query head (the model may itself be grouped), then averaged over each group of h/N query heads.
// N = the model's own N gives its weights unchanged.
MhaWeights weightsWithKvHeads(const MhaWeights& w, int heads, int modelKvHeads, int kvHeads);

Result<GqaLesson> gqaLesson(const Model& model, int kvHeads, int layers, int bytesPerValue);

// The other query head of head's group (the next one, or the previous for the group's last), -1
// when head is alone with its K/V head; and the max |difference| of their weights (-1: none).
int groupMate(const GqaLesson& r, int head);
double mateDifference(const GqaLesson& r, int head);

// The lesson's opening: what GQA and MQA are, and what they save.
const char* gqaLessonIntro();
// Which query heads read which K/V head, the weight sizes and the KV-cache bytes, with the live numbers.
std::string gqaSharingText(const GqaLesson& r);
// Two query heads of one group: same keys and values, different weights (their own W_q), with the number.
std::string gqaMatesText(const GqaLesson& r, int head);
// What the chosen N is compared with (GqaLesson::mha, the left map): "N = h" when the configuration
// is multi-head, else "this configuration (N = 2)" — its own K/V heads, one copy per query head.
std::string gqaReferenceName(const GqaLesson& r);
// The left map's title for query head `head`: "head 0, N = h: its own K/V head" or
// "head 0, this configuration (N = 2): K/V head 0".
std::string gqaReferenceTitle(const GqaLesson& r, int head);
// For a grouped configuration, what the comparison shows (empty for a multi-head one): an N that
// is a multiple of the configuration's only copies its K/V heads, so nothing changes; a smaller
// one averages them.
std::string gqaReferenceText(const GqaLesson& r);

namespace lessons {

struct Gqa {
  static constexpr const char* kId = "gqa";
  static constexpr const char* kTitle = "GQA / MQA";
  static constexpr LessonGroup kGroup = LessonGroup::Today;  // its group in the lesson list
  static constexpr const char* kLearn =  // the list's "what you will learn"
      "How h query heads share N K/V heads (GQA, MQA), and what that saves";
  static constexpr LessonCost kCost = LessonCost::Rerun;
  struct Choices {
    int kvHeads = 1;   // N: snapped to a divisor of h; starts at the controls' N
    int layers = 32;   // layers counted in the KV cache
    int bytes = 2;     // bytes per cached number: 2 (16-bit) or 4 (32-bit)
    template <class C, class F>
    static void fields(C& c, F&& f) {
      f("gqa_kv_heads", c.kvHeads);
      f("gqa_layers", c.layers);
      f("gqa_bytes", c.bytes);
    }
    void startFrom(const ConfigStart& now, const std::optional<ConfigStart>& before) {
      if (!before || before->kvHeads != now.kvHeads) kvHeads = now.kvHeads;
    }
    void keepInRange(const Trace& t) {
      kvHeads = nearestKvHeads(std::max(1, t.heads), kvHeads);
      layers = std::clamp(layers, 1, 256);
      bytes = bytes >= 4 ? 4 : 2;
    }
    int variant() const { return (bytes * 1000 + layers) * 100000 + kvHeads; }
    // The divisor of h nearest to n (the lower one on a tie): where a dragged or typed N lands.
    static int nearestKvHeads(int h, int n) {
      int best = 1;
      for (int d = 1; d <= h; ++d)
        if (h % d == 0 && std::abs(d - n) < std::abs(best - n)) best = d;
      return best;
    }
    // The N the slider offers: the divisors of h, h first (multi-head) down to 1 (multi-query).
    static std::vector<int> validKvHeads(int h) {
      std::vector<int> out;
      for (int n = h; n >= 1; --n)
        if (h % n == 0) out.push_back(n);
      return out;
    }
    bool operator==(const Choices&) const = default;
  };
  using Result = GqaLesson;
  static mhascope::Result<Result> compute(const Model& model, const Choices& c) {
    return gqaLesson(model, c.kvHeads, c.layers, c.bytes);
  }
  template <class Ui>
  static void drawTab(Ui& ui, const LessonOutcome<Result>& shown, Choices& choices);
};

}  // namespace lessons
}  // namespace mhascope
