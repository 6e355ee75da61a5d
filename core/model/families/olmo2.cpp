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

// q_norm and k_norm over the whole projection.
constexpr std::array<TensorName, 2> kOlmo2QkNorms = {{
    {TensorRole::QueryNorm, "model.layers.{i}.self_attn.q_norm.weight", Dim::Heads},
    {TensorRole::KeyNorm, "model.layers.{i}.self_attn.k_norm.weight", Dim::Kv},
}};
constexpr auto kOlmo2Tensors =
    joinTensors(llama_decoder::kEmbedding, llama_decoder::kAttention, kOlmo2QkNorms, llama_decoder::kAttentionOutNorm,
                llama_decoder::kMlp, llama_decoder::kMlpOutNorm, llama_decoder::kFinal);

}  // namespace

extern const Family olmo2;
const Family olmo2 = {
    .modelType = "olmo2",
    .displayName = "OLMo 2",
    .arch = Arch::Other,
    .keys = kOlmo2Keys,
    .readRest = llama_decoder::readLlamaKeys,
    .tensors = kOlmo2Tensors,
    .skippedSuffixes = llama_decoder::kSkipped,
    .norm = NormKind::RmsNorm,
    .mlp = MlpKind::SwiGlu,
    .positions = PositionKind::Rope,
    .qkNorm = QkNormKind::WholeProjection,
    .blockNorms = BlockNorms::Post,
};

}  // namespace mhascope::model::families
