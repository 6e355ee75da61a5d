// Latent attention: the lesson's numbers (latent.hpp) from core/attention/latent.
#include "lessons/latent.hpp"

#include "attention/engine.hpp"
#include "lessons/common.hpp"

namespace mhascope {

using namespace lesson_detail;  // NOLINT(google-build-using-namespace): the lessons' shared helpers

std::vector<PublishedLatent> publishedLatentConfigs() {
  // Each model's config.json on the Hugging Face Hub.
  return {
      {"DeepSeek-V2-Lite", 27, 16, 512, 64, 128, 128},  // deepseek-ai/DeepSeek-V2-Lite (q_lora_rank null)
      {"DeepSeek-V2", 60, 128, 512, 64, 128, 128},      // deepseek-ai/DeepSeek-V2
      {"DeepSeek-V3", 61, 128, 512, 64, 128, 128},      // deepseek-ai/DeepSeek-V3
  };
}

std::vector<LatentCacheRow> latentCacheRows(const LatentSizes& s, int gqaKvHeads) {
  const std::int64_t perHead = static_cast<std::int64_t>(s.nopeDim) + s.ropeDim + s.valueDim;
  std::vector<LatentCacheRow> rows = {
      {"MLA: the latent and one rotary key (r + d_r)", s.cachedPerToken()},
      {"MHA: keys and values of all " + std::to_string(s.heads) + " heads", s.heads * perHead},
  };
  if (gqaKvHeads > 1 && gqaKvHeads < s.heads) {
    rows.push_back({"GQA: " + std::to_string(gqaKvHeads) + " K/V heads", gqaKvHeads * perHead});
  }
  rows.push_back({"MQA: one K/V head", perHead});
  return rows;
}

Result<LatentLesson> latentLesson(const Model& model, int kvRank, int ropeDim) {
  const Tensor& q = model.inputs.query;  // (B, T, d_model): batch item 0
  const std::int64_t T = q.dim(1), d = q.dim(2);
  LatentLesson r;
  r.sizes.dModel = static_cast<int>(d);
  r.sizes.heads = model.options.heads;
  r.sizes.kvRank = kvRank;
  r.sizes.ropeDim = ropeDim;
  r.sizes.nopeDim = r.sizes.valueDim = static_cast<int>(headDimOf(model.options, d));
  // The weights are random: the equality of the two forms and the cache's size hold for any.
  auto out = latentAttention(ConstMatrixMap(q.ptr(), T, d), randomLatentWeights(r.sizes, 7), r.sizes);
  if (!out) return out.error();
  r.result = std::move(*out);
  r.cache = latentCacheRows(r.sizes, r.sizes.heads % 2 == 0 ? r.sizes.heads / 2 : 1);
  r.published = publishedLatentConfigs();
  if (!model.inputs.queryTokens.empty()) r.tokens = model.inputs.queryTokens[0];
  return r;
}

const char* latentLessonIntro() {
  return "A decoder keeps every past token's keys and values (the KV cache): h heads x (d_k keys + d_k values) "
         "numbers per token and layer. DeepSeek-V2 and V3 keep one latent vector c of r numbers per token instead, "
         "made from the token by W_kva and normed; every head's keys and values are linear in it (k_i = c W_uk^i, "
         "v_i = c W_uv^i), so they need not be kept. Positions cannot go through that shared latent (RoPE's "
         "rotation, which depends on both tokens' places, would sit between the query and W_uk^i, so W_uk^i could no "
         "longer be folded into the query), so each query has a small "
         "rotary part of d_r features that meets one rotary key k_r, the same for every head and cached beside c: "
         "r + d_r numbers per token (512 + 64 = 576 in DeepSeek-V3, against 128 heads x (192 + 128) = 40,960 for "
         "multi-head attention with the same heads). The scores are (q_nope_i . k_nope_i + q_rope_i . k_r) / "
         "sqrt(d_n + d_r). At decoding, W_uk^i can be folded into the query and W_uv^i applied after the weighted "
         "sum of latents (the absorbed form): the keys and values are never made, and the numbers are the same.";
}

std::string latentCacheText(const LatentLesson& r) {
  const LatentSizes& s = r.sizes;
  const std::int64_t mha = s.expandedPerToken(), mqa = mha / s.heads;
  return "Here r = " + std::to_string(s.kvRank) + " and d_r = " + std::to_string(s.ropeDim) + ": " +
         std::to_string(s.cachedPerToken()) + " numbers per token and layer, against " + std::to_string(mha) +
         " for the keys (d_n + d_r = " + std::to_string(s.nopeDim + s.ropeDim) + ") and values (d_v = " +
         std::to_string(s.valueDim) + ") of all " + std::to_string(s.heads) + " heads: " +
         num(static_cast<double>(mha) / static_cast<double>(s.cachedPerToken()), 3) +
         " times less. One K/V head for all (MQA) would cache " + std::to_string(mqa) + (mqa < s.cachedPerToken()
                                                                                           ? ", fewer"
                                                                                           : mqa == s.cachedPerToken() ? ", as many" : ", more") +
         ", but gives every head the same keys and values; here each head still has its own, made from the latent "
         "(DeepSeek-V3: 576 against MQA's 320). The latent is a bottleneck if r is small against what the heads need; "
         "DeepSeek trains with it, so the model learns to fit its keys and values into r numbers.";
}

std::string latentAbsorbedText(const LatentLesson& r) {
  return "Expanded (k_nope and v made for every token) and absorbed (q_nope W_uk^T meets the " +
         std::to_string(r.sizes.kvRank) + "-number latents directly; W_uv after the weighted sum): max difference " +
         num(r.result.maxWeightDiff, 3) + " in any weight and " + num(r.result.maxOutputDiff, 3) +
         " in the output — float rounding: the same attention, computed in another order.";
}

}  // namespace mhascope
