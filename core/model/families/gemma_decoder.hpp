// The Gemma decoder (Hugging Face's Gemma2 and Gemma3ForCausalLM): the tensor names and the keys Gemma 2 and
// Gemma 3 share, so each of those families (gemma2.cpp, gemma3.cpp) says only what it changes.
//
// Four RMSNorms per block — x + post_attention_layernorm(attention(input_layernorm(x))), then
// x + post_feedforward_layernorm(mlp(pre_feedforward_layernorm(x))) — each computing x / rms(x) · (1 + w) with
// the zero-centred w the files store; the embeddings times √d_model; scores times query_pre_attn_scalar^-½
// instead of d_k^-½; the MLP down(gelu_tanh(gate) · up) (gelu_pytorch_tanh); sliding and global layers.
#pragma once

#include <array>

#include "model/families/config_reader.hpp"
#include "model/families/family.hpp"
#include "model/families/llama_decoder.hpp"  // the keys' names and most of the table's

namespace mhascope::model::families::gemma_decoder {

// The two norms between attention and the MLP: the attention output's (post_attention_layernorm) and the MLP
// input's (pre_feedforward_layernorm); the others are the Llama decoder's runs (llama_decoder.hpp).
inline constexpr std::array<TensorName, 2> kMiddleNorms = {{
    llama_decoder::kAttentionOutNorm[0],
    {TensorRole::Norm2, "model.layers.{i}.pre_feedforward_layernorm.weight", Dim::Model},
}};

// What a key's absence or null means for a softcap: `absent` when it is not in the file, none (0) when null.
inline double readSoftcap(ConfigReader& r, const char* key, double absent) {
  if (!r.object().contains(key)) return absent;
  return r.has(key) ? r.positiveNumber(key, absent) : 0.0;
}

// The keys both read alike: hidden_activation gelu_pytorch_tanh, attention_bias (on q, k, v and o), query_pre_attn_scalar
// (default 256), the final logits' softcap (`finalCap` when absent, none when null), no rope_scaling and no
// per-layer-type rope_parameters.
inline void readShared(ConfigReader& r, ModelSpec& s, double finalCap) {
  acceptOnly(r, "hidden_activation", {"gelu_pytorch_tanh"}, "(mhascope: gelu_pytorch_tanh, the tanh GELU)");
  readAttentionBias(r, s);
  s.queryPreAttnScalar = r.positiveNumber("query_pre_attn_scalar", 256.0);
  s.finalSoftcap = readSoftcap(r, "final_logit_softcapping", finalCap);
  if (r.has("rope_scaling")) r.refuse("rope_scaling " + r.object().at("rope_scaling").dump());
  if (r.has("rope_parameters")) r.refuse("rope_parameters " + r.object().at("rope_parameters").dump());
}

// The window of a sliding layer: sliding_window (default 4096; null: none).
inline int readWindow(ConfigReader& r) {
  if (!r.object().contains("sliding_window")) return 4096;
  return r.has("sliding_window") ? r.positive("sliding_window") : 0;
}

}  // namespace mhascope::model::families::gemma_decoder
