// gpt-oss (model_type "gpt_oss"), as transformers' configuration_gpt_oss.py and modeling_gpt_oss.py have it: the
// Llama decoder's attention with biases on q, k, v and o (attention_bias, true by default), a learned sink per head
// (self_attn.sinks (h): one more column of every row's softmax, dropped — the engine's sink_share stage), layers
// that alternate between a sliding window and the whole causal past (layer_types, else the even layers slide;
// sliding_window 128) and YaRN RoPE (rope_scaling rope_type "yarn", base 150000).
// Its MLP is a mixture of experts (mlp.router, mlp.experts.* stored as MXFP4 blocks + scales, which the weight
// store's readMxfp4 unpacks) that this file does not describe: the family is left out of the list (families.cpp)
// until the mixture-of-experts MLP gives it one, so a gpt-oss folder is refused by its model_type, never run
// without its MLP. What it describes is checked on both fixture layers' attention (tests/model/gpt_oss_attention_test).
#include <nlohmann/json.hpp>

#include "model/families/llama_decoder.hpp"

namespace mhascope::model::families {
namespace {

// GptOssConfig's defaults: head_dim 64, 131072 positions, rope_theta 150000, rms_norm_eps 1e-5, untied.
constexpr auto kGptOssKeys =
    llama_decoder::keysWith({.maxPositions = 131072, .normEps = 1e-5, .ropeTheta = 150000.0, .headDim = 64});

constexpr llama_decoder::Run1 kSinks = {{{TensorRole::Sinks, "model.layers.{i}.self_attn.sinks", Dim::HeadCount}}};

// The attention's table (the MLP's tensors are not described yet).
constexpr auto kGptOssTensors = joinTensors(llama_decoder::kEmbedding, llama_decoder::kInputNorm, llama_decoder::kAttention,
                                            kSinks, llama_decoder::kPostAttentionNorm, llama_decoder::kFinal);

void readGptOssRest(ConfigReader& r, ModelSpec& s) {
  if (r.flag("attention_bias", true)) s.qkvBias = s.outputBias = true;
  readRopeScaling(r, s);
  const int window = r.object().contains("sliding_window") ? r.positive("sliding_window") : 128;
  readLayerWindows(r, s, window, [](int i) { return i % 2 == 0; });
}

}  // namespace

extern const Family gpt_oss;
const Family gpt_oss = {
    .modelType = "gpt_oss",
    .displayName = "gpt-oss",
    .arch = Arch::Other,
    .keys = kGptOssKeys,
    .readRest = readGptOssRest,
    .tensors = kGptOssTensors,
    .skippedSuffixes = llama_decoder::kSkipped,
    .norm = NormKind::RmsNorm,
    .mlp = MlpKind::SwiGlu,  // a placeholder: the experts' MLP (each a SwiGLU of its own) replaces it with the mixture
    .positions = PositionKind::Rope,
};

}  // namespace mhascope::model::families
