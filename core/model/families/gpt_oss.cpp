// gpt-oss (model_type "gpt_oss"), as transformers' configuration_gpt_oss.py and modeling_gpt_oss.py have it: the
// Llama decoder's attention with biases on q, k, v and o (attention_bias, true by default), a learned sink per head
// (self_attn.sinks (h): one more column of every row's softmax, dropped — the engine's sink_share stage), layers
// that alternate between a sliding window and the whole causal past (layer_types, else the even layers slide;
// sliding_window 128) and YaRN RoPE (rope_scaling rope_type "yarn", base 150000; a config without the key gets
// GptOssConfig's YaRN x32).
// Every MLP is a mixture of experts (GptOssMLP): mlp.router (E = num_local_experts, d_model) with its bias scores
// each token's normed stream, the num_experts_per_tok highest logits are chosen and a softmax over those k weighs
// them; all E experts sit in one tensor per layer (GptOssExperts, x W + b with W (in, out)): gate_up_proj (E, d_model,
// 2F) whose columns interleave the gate (even) and the up (odd), then (u + 1) · g · σ(1.702 g) with the gate at most
// swiglu_limit and the up within ±swiglu_limit, then down_proj (E, F, d_model); F = intermediate_size. The released
// files store both matrices as MXFP4 blocks + scales (quantization_config quant_method "mxfp4"), which the weight
// store dequantises one expert at a time.
#include <nlohmann/json.hpp>

#include "model/families/llama_decoder.hpp"

namespace mhascope::model::families {
namespace {

// GptOssConfig's defaults: head_dim 64, 131072 positions, rope_theta 150000, rms_norm_eps 1e-5, untied.
constexpr auto kGptOssKeys =
    llama_decoder::keysWith({.maxPositions = 131072, .normEps = 1e-5, .ropeTheta = 150000.0, .headDim = 64});

constexpr llama_decoder::Run1 kSinks = {{{TensorRole::Sinks, "model.layers.{i}.self_attn.sinks", Dim::HeadCount}}};

constexpr std::array<TensorName, 6> kGptOssExperts = {{
    {TensorRole::Router, "model.layers.{i}.mlp.router.weight", Dim::Experts, Dim::Model},
    {TensorRole::RouterBias, "model.layers.{i}.mlp.router.bias", Dim::Experts},
    {TensorRole::ExpertGateUpFused, "model.layers.{i}.mlp.experts.gate_up_proj", Dim::Model, Dim::ExpertFfPair, Stored::InOut,
     Need::Always, ExpertStore::Stacked},
    {TensorRole::ExpertGateUpBias, "model.layers.{i}.mlp.experts.gate_up_proj_bias", Dim::ExpertFfPair, Dim::None,
     Stored::InOut, Need::Always, ExpertStore::Stacked},
    {TensorRole::ExpertOut, "model.layers.{i}.mlp.experts.down_proj", Dim::ExpertFf, Dim::Model, Stored::InOut, Need::Always,
     ExpertStore::Stacked},
    {TensorRole::ExpertOutBias, "model.layers.{i}.mlp.experts.down_proj_bias", Dim::Model, Dim::None, Stored::InOut,
     Need::Always, ExpertStore::Stacked},
}};

constexpr auto kGptOssTensors = joinTensors(llama_decoder::kEmbedding, llama_decoder::kInputNorm, llama_decoder::kAttention,
                                            kSinks, llama_decoder::kPostAttentionNorm, kGptOssExperts, llama_decoder::kFinal);

void readGptOssRest(ConfigReader& r, ModelSpec& s) {
  if (r.flag("attention_bias", true)) s.qkvBias = s.outputBias = true;
  // GptOssConfig's default when config.json has no rope_scaling key: YaRN x32, beta 32 / 1, not truncated.
  static const nlohmann::json kDefaultYarn = {
      {"rope_type", "yarn"}, {"factor", 32.0}, {"beta_fast", 32.0}, {"beta_slow", 1.0}, {"truncate", false}};
  readRopeScaling(r, s, &kDefaultYarn);
  const int window = r.object().contains("sliding_window") ? r.positive("sliding_window") : 128;
  readLayerWindows(r, s, window, [](int i) { return i % 2 == 0; });
  // GptOssConfig's defaults: 128 experts, 4 per token; each as wide as intermediate_size.
  readMixture(r, s, "num_local_experts", 128, false, 4, nullptr, 0);
  s.moe.rule = {.scores = RouterScores::Logits, .softmaxOfChosen = true, .renormalise = false};
  s.swigluLimit = r.positiveNumber("swiglu_limit", 7.0);
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
    .mlp = MlpKind::ClampedSwiGlu,
    .positions = PositionKind::Rope,
    .gateUp = GateUpOrder::Interleaved,
};

}  // namespace mhascope::model::families
