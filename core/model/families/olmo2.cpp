// OLMo 2 (model_type "olmo2"), as transformers' configuration_olmo2.py and modeling_olmo2.py have it: the Llama
// decoder's projections, MLP and RoPE in post-norm blocks — no norm before attention or the MLP,
// x + post_attention_layernorm(attention(x)) and x + post_feedforward_layernorm(mlp(x)) — and the q/k norm over the
// whole projection: q_norm (h d_k) and k_norm (N d_k) RMSNorm each token's q and k before the split into heads,
// so the statistics mix heads (the engine's q_normed and k_normed stages, their whole-projection form).
#include "model/families/llama_decoder.hpp"

namespace mhascope::model::families {
namespace {

// Olmo2Config's defaults: 2048 positions, rms_norm_eps 1e-5, an untied lm_head.
constexpr auto kOlmo2Keys = llama_decoder::keysWith({.normEps = 1e-5});

constexpr TensorName kOlmo2Tensors[] = {
    {TensorRole::TokenEmbedding, "model.embed_tokens.weight", Dim::Vocab, Dim::Model},
    {TensorRole::Query, "model.layers.{i}.self_attn.q_proj.weight", Dim::Heads, Dim::Model},
    {TensorRole::Key, "model.layers.{i}.self_attn.k_proj.weight", Dim::Kv, Dim::Model},
    {TensorRole::Value, "model.layers.{i}.self_attn.v_proj.weight", Dim::Kv, Dim::Model},
    {TensorRole::Output, "model.layers.{i}.self_attn.o_proj.weight", Dim::Model, Dim::Heads},
    {TensorRole::QueryBias, "model.layers.{i}.self_attn.q_proj.bias", Dim::Heads, Dim::None, Stored::OutIn, Need::QkvBias},
    {TensorRole::KeyBias, "model.layers.{i}.self_attn.k_proj.bias", Dim::Kv, Dim::None, Stored::OutIn, Need::QkvBias},
    {TensorRole::ValueBias, "model.layers.{i}.self_attn.v_proj.bias", Dim::Kv, Dim::None, Stored::OutIn, Need::QkvBias},
    {TensorRole::OutputBias, "model.layers.{i}.self_attn.o_proj.bias", Dim::Model, Dim::None, Stored::OutIn,
     Need::OutputBias},
    {TensorRole::QueryNorm, "model.layers.{i}.self_attn.q_norm.weight", Dim::Heads},
    {TensorRole::KeyNorm, "model.layers.{i}.self_attn.k_norm.weight", Dim::Kv},
    {TensorRole::AttentionOutNorm, "model.layers.{i}.post_attention_layernorm.weight", Dim::Model},
    {TensorRole::MlpIn, "model.layers.{i}.mlp.gate_proj.weight", Dim::Ff, Dim::Model},
    {TensorRole::MlpUp, "model.layers.{i}.mlp.up_proj.weight", Dim::Ff, Dim::Model},
    {TensorRole::MlpOut, "model.layers.{i}.mlp.down_proj.weight", Dim::Model, Dim::Ff},
    {TensorRole::MlpOutNorm, "model.layers.{i}.post_feedforward_layernorm.weight", Dim::Model},
    {TensorRole::FinalNorm, "model.norm.weight", Dim::Model},
    {TensorRole::Unembedding, "lm_head.weight", Dim::Vocab, Dim::Model, Stored::OutIn, Need::Untied},
};

void readOlmo2Rest(ConfigReader& r, ModelSpec& s) {
  llama_decoder::readMlp(r);
  readAttentionBias(r, s);
  readRopeScaling(r, s);
}

}  // namespace

extern const Family olmo2;
const Family olmo2 = {
    .modelType = "olmo2",
    .displayName = "OLMo 2",
    .arch = Arch::Other,
    .keys = kOlmo2Keys,
    .readRest = readOlmo2Rest,
    .tensors = kOlmo2Tensors,
    .basePrefixes = {},
    .skippedSuffixes = llama_decoder::kSkipped,
    .norm = NormKind::RmsNorm,
    .mlp = MlpKind::SwiGlu,
    .positions = PositionKind::Rope,
    .ropeStyle = RopeStyle::Half,
    .qkNorm = QkNormKind::WholeProjection,
    .blockNorms = BlockNorms::Post,
};

}  // namespace mhascope::model::families
