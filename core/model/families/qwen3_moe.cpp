// Qwen3-MoE (model_type "qwen3_moe"), as transformers' configuration_qwen3_moe.py and modeling_qwen3_moe.py have
// it: Qwen3's attention (q_norm and k_norm per head before RoPE, its window rule) with a mixture of experts as the
// MLP — mlp.gate (E = num_experts, d_model) scores each token's normed stream, softmax over all E, the
// num_experts_per_tok highest, renormalised to sum 1 only when norm_topk_prob; expert e is a SwiGLU MLP of width
// moe_intermediate_size (mlp.experts.{e}.gate_proj / up_proj / down_proj). Layer i is dense instead (Qwen3's MLP
// of intermediate_size) when mlp_only_layers lists it or (i + 1) is not a multiple of decoder_sparse_step, and
// every layer is dense when num_experts is 0.
#include "model/families/llama_decoder.hpp"

namespace mhascope::model::families {
namespace {

// Qwen3MoeConfig's defaults: 32768 positions, rope_theta 10000, an untied lm_head; head_dim d_model / h when absent.
constexpr auto kQwen3MoeKeys = llama_decoder::keysWith({.maxPositions = 32768});

constexpr std::array<TensorName, 4> kQwen3MoeExperts = {{
    {TensorRole::Router, "model.layers.{i}.mlp.gate.weight", Dim::Experts, Dim::Model},
    {TensorRole::ExpertIn, "model.layers.{i}.mlp.experts.{e}.gate_proj.weight", Dim::ExpertFf, Dim::Model},
    {TensorRole::ExpertUp, "model.layers.{i}.mlp.experts.{e}.up_proj.weight", Dim::ExpertFf, Dim::Model},
    {TensorRole::ExpertOut, "model.layers.{i}.mlp.experts.{e}.down_proj.weight", Dim::Model, Dim::ExpertFf},
}};

// The dense MLP's names (kMlp) serve the dense layers, the experts' the others.
constexpr auto kQwen3MoeTensors =
    joinTensors(llama_decoder::kEmbedding, llama_decoder::kInputNorm, llama_decoder::kAttention, llama_decoder::kHeadQkNorms,
                llama_decoder::kPostAttentionNorm, llama_decoder::kMlp, kQwen3MoeExperts, llama_decoder::kFinal);

void readQwen3MoeRest(ConfigReader& r, ModelSpec& s) {
  llama_decoder::readLlamaKeys(r, s);
  readQwen3Window(r, s);
  readMixture(r, s, "num_experts", 128, true, 8, "moe_intermediate_size", 768);
  s.moe.rule = {.scores = RouterScores::Softmax, .renormalise = r.flag("norm_topk_prob", false)};
  const int step = r.positive("decoder_sparse_step", 1);
  const std::vector<int> denseOnly = readLayerList(r, "mlp_only_layers", s.layers);
  if (r.failed() || s.moe.experts == 0) return;
  s.moe.denseLayers.assign(static_cast<std::size_t>(s.layers), false);
  for (int l = 0; l < s.layers; ++l) s.moe.denseLayers[static_cast<std::size_t>(l)] = (l + 1) % step != 0;
  for (int l : denseOnly) s.moe.denseLayers[static_cast<std::size_t>(l)] = true;
}

}  // namespace

extern const Family qwen3_moe;
const Family qwen3_moe = {
    .modelType = "qwen3_moe",
    .displayName = "Qwen3-MoE",
    .arch = Arch::Other,
    .keys = kQwen3MoeKeys,
    .readRest = readQwen3MoeRest,
    .tensors = kQwen3MoeTensors,
    .skippedSuffixes = llama_decoder::kSkipped,
    .norm = NormKind::RmsNorm,
    .mlp = MlpKind::SwiGlu,
    .positions = PositionKind::Rope,
    .qkNorm = QkNormKind::PerHead,
};

}  // namespace mhascope::model::families
