// Latent attention — DeepSeek's multi-head latent attention on this sentence: what a decoder caches
// per token (one latent of r numbers and one rotary key of d_r, for every head at once) against the
// keys and values multi-head, grouped-query and multi-query attention would cache, for this layer
// and for DeepSeek's published configurations; and the absorbed computation (W_uk folded into the
// query, W_uv applied after the weighted sum of latents) giving the expanded one's weights and output.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "attention/latent.hpp"
#include "lessons/lesson.hpp"

namespace mhascope {

// A published model's latent attention (its config.json: num_hidden_layers, num_attention_heads,
// kv_lora_rank, qk_rope_head_dim, qk_nope_head_dim, v_head_dim).
struct PublishedLatent {
  const char* name;
  int layers, heads, kvRank, ropeDim, nopeDim, valueDim;
};
// DeepSeek-V2-Lite, DeepSeek-V2, DeepSeek-V3.
std::vector<PublishedLatent> publishedLatentConfigs();

// Numbers cached per token and layer by each kind of attention with the same h heads of these
// widths: keys d_n + d_r wide and values d_v wide for every head (MHA), for N heads (GQA), for one
// (MQA); the latent and the shared rotary key (MLA).
struct LatentCacheRow {
  std::string kind;        // "MLA (r + d_r)", "MHA (h K/V heads)", …
  std::int64_t numbers = 0;
};
std::vector<LatentCacheRow> latentCacheRows(const LatentSizes& s, int gqaKvHeads);

struct LatentLesson {
  LatentSizes sizes;           // h and d_n = d_v = d_k from the trace; r and d_r chosen
  LatentResult result;         // on batch item 0's inputs, seeded random weights
  std::vector<LatentCacheRow> cache;   // this layer, numbers per token
  std::vector<PublishedLatent> published;
  std::vector<std::string> tokens;     // batch item 0's
};

Result<LatentLesson> latentLesson(const Model& model, int kvRank, int ropeDim);

// The lesson's opening: what is cached and why that is enough.
const char* latentLessonIntro();
// The chosen sizes' cache against MHA with the live numbers, and the absorbed form's equality.
std::string latentCacheText(const LatentLesson& r);
std::string latentAbsorbedText(const LatentLesson& r);

namespace lessons {

struct Latent {
  static constexpr const char* kId = "latent_attention";
  static constexpr const char* kTitle = "Latent attention";
  static constexpr LessonGroup kGroup = LessonGroup::Today;
  static constexpr const char* kLearn =
      "What DeepSeek's latent attention caches instead of keys and values, and why it computes the same";
  static constexpr LessonCost kCost = LessonCost::Rerun;
  static constexpr bool kReadsWeights = false;  // its latent's weights are its own: it runs on a latent layer too
  struct Choices {
    int kvRank = 8;   // r, the latent's width
    int ropeDim = 4;  // d_r, the shared rotary key's width (even)
    template <class C, class F>
    static void fields(C& c, F&& f) {
      f("latent_rank", c.kvRank);
      f("latent_rope", c.ropeDim);
    }
    void keepInRange(const Trace&) {
      kvRank = std::clamp(kvRank, 1, 256);
      ropeDim = std::clamp(ropeDim / 2 * 2, 2, 64);
    }
    int variant() const { return kvRank * 100 + ropeDim; }
    bool operator==(const Choices&) const = default;
  };
  using Result = LatentLesson;
  static mhascope::Result<Result> compute(const Model& model, const Choices& c) {
    return latentLesson(model, c.kvRank, c.ropeDim);
  }
  template <class Ui>
  static void drawTab(Ui& ui, const LessonOutcome<Result>& shown, Choices& choices);
};

}  // namespace lessons
}  // namespace mhascope
