// Mixtral (model_type "mixtral"), as transformers' configuration_mixtral.py and modeling_mixtral.py have it:
// Mistral's attention (the Llama decoder, a window W = sliding_window on every layer when set) with a mixture of
// experts for every MLP — block_sparse_moe.gate (E = num_local_experts, d_model) scores each token's normed
// stream, softmax over all E, the num_experts_per_tok highest, renormalised to sum 1; expert e is a SwiGLU MLP
// w2(silu(w1 m) · w3 m) of width intermediate_size. router_jitter_noise acts in training only.
#include "model/families/llama_decoder.hpp"

namespace mhascope::model::families {
namespace {

// MixtralConfig's defaults.
constexpr auto kMixtralKeys = llama_decoder::keysWith({.maxPositions = 4096 * 32, .normEps = 1e-5, .ropeTheta = 1e6});

constexpr std::array<TensorName, 4> kMixtralExperts = {{
    {TensorRole::Router, "model.layers.{i}.block_sparse_moe.gate.weight", Dim::Experts, Dim::Model},
    {TensorRole::ExpertIn, "model.layers.{i}.block_sparse_moe.experts.{e}.w1.weight", Dim::ExpertFf, Dim::Model},
    {TensorRole::ExpertUp, "model.layers.{i}.block_sparse_moe.experts.{e}.w3.weight", Dim::ExpertFf, Dim::Model},
    {TensorRole::ExpertOut, "model.layers.{i}.block_sparse_moe.experts.{e}.w2.weight", Dim::Model, Dim::ExpertFf},
}};

constexpr auto kMixtralTensors = joinTensors(llama_decoder::kEmbedding, llama_decoder::kInputNorm, llama_decoder::kAttention,
                                             llama_decoder::kPostAttentionNorm, kMixtralExperts, llama_decoder::kFinal);

void readMixtralRest(ConfigReader& r, ModelSpec& s) {
  llama_decoder::readMlp(r);
  readAttentionBias(r, s);
  if (r.has("sliding_window")) s.window = r.positive("sliding_window");
  readRopeScaling(r, s);
  // Every layer a mixture; each expert as wide as intermediate_size.
  readMixture(r, s, "num_local_experts", 8, false, 2, nullptr, 0);
  s.moe.rule = {.scores = RouterScores::Softmax, .renormalise = true};
}

}  // namespace

extern const Family mixtral;
const Family mixtral = {
    .modelType = "mixtral",
    .displayName = "Mixtral",
    .arch = Arch::Other,
    .keys = kMixtralKeys,
    .readRest = readMixtralRest,
    .tensors = kMixtralTensors,
    .skippedSuffixes = llama_decoder::kSkipped,
    .norm = NormKind::RmsNorm,
    .mlp = MlpKind::SwiGlu,
    .positions = PositionKind::Rope,
};

}  // namespace mhascope::model::families
