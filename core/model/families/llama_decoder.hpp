// The Llama decoder (Hugging Face's LlamaConfig and LlamaForCausalLM): the config keys and the tensor names
// Llama, Mistral and Qwen2 share word for word, so each of those families (llama.cpp, mistral.cpp,
// qwen2.cpp) says only what it changes. A family whose names differ writes a table of its own.
//
// RMSNorm, the SwiGLU MLP, RoPE, nn.Linear layers stored (out, in) and transposed as they are read,
// k and v (N d_k, d_model) for N K/V heads, biases on q, k, v (and o) only when the family or
// attention_bias says so, lm_head unless tie_word_embeddings.
#pragma once

#include <array>

#include "model/families/config_reader.hpp"
#include "model/families/family.hpp"

namespace mhascope::model::families::llama_decoder {

// The defaults a family's configuration class gives the Llama decoder's keys (LlamaConfig's: below).
struct KeyDefaults {
  double maxPositions = 2048, normEps = 1e-6, ropeTheta = 10000.0;
  bool tied = false;
  double headDim = 0;  // 0: d_model / h when head_dim is absent or null
};

// The Llama decoder's keys with a family's defaults.
constexpr std::array<ConfigKey, 11> keysWith(KeyDefaults d) {
  return {{
      {SpecField::DModel, "hidden_size"},
      {SpecField::Heads, "num_attention_heads"},
      {SpecField::KvHeads, "num_key_value_heads", sameAs(SpecField::Heads)},
      {SpecField::HeadDim, "head_dim", byDefault(d.headDim)},
      {SpecField::Layers, "num_hidden_layers"},
      {SpecField::DFf, "intermediate_size"},
      {SpecField::Vocab, "vocab_size"},
      {SpecField::MaxPositions, "max_position_embeddings", byDefault(d.maxPositions)},
      {SpecField::NormEps, "rms_norm_eps", byDefault(d.normEps)},
      {SpecField::RopeTheta, "rope_theta", byDefault(d.ropeTheta)},
      {SpecField::TiedEmbeddings, "tie_word_embeddings", byDefault(d.tied ? 1.0 : 0.0)},
  }};
}

inline constexpr std::array<ConfigKey, 11> kKeys = keysWith({});

// The table in runs, which the families whose names differ in part (Phi-3, OLMo 2, Gemma) join with their own.
using Run1 = std::array<TensorName, 1>;
inline constexpr Run1 kEmbedding = {{{TensorRole::TokenEmbedding, "model.embed_tokens.weight", Dim::Vocab, Dim::Model}}};
inline constexpr Run1 kInputNorm = {{{TensorRole::Norm1, "model.layers.{i}.input_layernorm.weight", Dim::Model}}};
inline constexpr std::array<TensorName, 8> kAttention = {{
    {TensorRole::Query, "model.layers.{i}.self_attn.q_proj.weight", Dim::Heads, Dim::Model},
    {TensorRole::Key, "model.layers.{i}.self_attn.k_proj.weight", Dim::Kv, Dim::Model},
    {TensorRole::Value, "model.layers.{i}.self_attn.v_proj.weight", Dim::Kv, Dim::Model},
    {TensorRole::Output, "model.layers.{i}.self_attn.o_proj.weight", Dim::Model, Dim::Heads},
    {TensorRole::QueryBias, "model.layers.{i}.self_attn.q_proj.bias", Dim::Heads, Dim::None, Stored::OutIn, Need::QkvBias},
    {TensorRole::KeyBias, "model.layers.{i}.self_attn.k_proj.bias", Dim::Kv, Dim::None, Stored::OutIn, Need::QkvBias},
    {TensorRole::ValueBias, "model.layers.{i}.self_attn.v_proj.bias", Dim::Kv, Dim::None, Stored::OutIn, Need::QkvBias},
    {TensorRole::OutputBias, "model.layers.{i}.self_attn.o_proj.bias", Dim::Model, Dim::None, Stored::OutIn,
     Need::OutputBias},
}};
// Llama's norm before the MLP; in post-norm and sandwich blocks the same name is the attention output's norm.
inline constexpr Run1 kPostAttentionNorm = {{{TensorRole::Norm2, "model.layers.{i}.post_attention_layernorm.weight", Dim::Model}}};
inline constexpr Run1 kAttentionOutNorm = {
    {{TensorRole::AttentionOutNorm, "model.layers.{i}.post_attention_layernorm.weight", Dim::Model}}};
inline constexpr Run1 kMlpOutNorm = {{{TensorRole::MlpOutNorm, "model.layers.{i}.post_feedforward_layernorm.weight", Dim::Model}}};
inline constexpr std::array<TensorName, 3> kMlp = {{
    {TensorRole::MlpIn, "model.layers.{i}.mlp.gate_proj.weight", Dim::Ff, Dim::Model},
    {TensorRole::MlpUp, "model.layers.{i}.mlp.up_proj.weight", Dim::Ff, Dim::Model},
    {TensorRole::MlpOut, "model.layers.{i}.mlp.down_proj.weight", Dim::Model, Dim::Ff},
}};
inline constexpr std::array<TensorName, 2> kFinal = {{
    {TensorRole::FinalNorm, "model.norm.weight", Dim::Model},
    {TensorRole::Unembedding, "lm_head.weight", Dim::Vocab, Dim::Model, Stored::OutIn, Need::Untied},
}};
// q_norm and k_norm of d_k, per head (Qwen3, Gemma 3).
inline constexpr std::array<TensorName, 2> kHeadQkNorms = {{
    {TensorRole::QueryNorm, "model.layers.{i}.self_attn.q_norm.weight", Dim::HeadDim},
    {TensorRole::KeyNorm, "model.layers.{i}.self_attn.k_norm.weight", Dim::HeadDim},
}};

inline constexpr auto kTensors = joinTensors(kEmbedding, kInputNorm, kAttention, kPostAttentionNorm, kMlp, kFinal);

// Older files keep each layer's RoPE frequencies.
inline constexpr const char* kSkipped[] = {"rotary_emb.inv_freq"};

// hidden_act silu (the SwiGLU MLP) and no mlp_bias.
inline void readMlp(ConfigReader& r) {
  acceptOnly(r, "hidden_act", {"silu"}, "(mhascope: silu, the SwiGLU MLP)");
  refuseFlag(r, "mlp_bias", true);
}

// What Llama reads besides the sizes, and the families that read it alike: the MLP's keys, attention_bias and
// rope_scaling.
inline void readLlamaKeys(ConfigReader& r, ModelSpec& s) {
  readMlp(r);
  readAttentionBias(r, s);
  readRopeScaling(r, s);
}

}  // namespace mhascope::model::families::llama_decoder
