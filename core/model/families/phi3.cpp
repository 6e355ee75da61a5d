// Phi-3 (model_type "phi3": Phi-3 and Phi-3.5 mini and medium), as transformers' configuration_phi3.py and
// modeling_phi3.py have it: the Llama decoder (llama_decoder.hpp) with q, k and v in one fused qkv_proj whose
// rows are [q: h d_k | k: N d_k | v: N d_k], the SwiGLU's gate and up in one gate_up_proj with rows
// [gate: F | up: F], no biases, and the window sliding_window on every layer when set. Long-context
// checkpoints stretch RoPE with rope_scaling ("longrope", "su", "yarn"), which this forward does not
// implement: any rope_scaling is refused with its value, as is a partial_rotary_factor other than 1.
#include <nlohmann/json.hpp>

#include "model/families/llama_decoder.hpp"

namespace mhascope::model::families {
namespace {

// Phi3Config's defaults: 4096 positions, rms_norm_eps 1e-5, an untied lm_head.
constexpr auto kPhi3Keys = llama_decoder::keysWith({.maxPositions = 4096, .normEps = 1e-5});

// q | k | v in one matrix, gate | up in another; o_proj, the norms and down_proj are the Llama decoder's.
constexpr std::array<TensorName, 2> kPhi3Attention = {{
    {TensorRole::QkvFused, "model.layers.{i}.self_attn.qkv_proj.weight", Dim::Qkv, Dim::Model},
    llama_decoder::kAttention[3],  // o_proj
}};
constexpr std::array<TensorName, 2> kPhi3Mlp = {{
    {TensorRole::MlpGateUpFused, "model.layers.{i}.mlp.gate_up_proj.weight", Dim::FfPair, Dim::Model},
    llama_decoder::kMlp[2],  // down_proj
}};
constexpr auto kPhi3Tensors = joinTensors(llama_decoder::kEmbedding, llama_decoder::kInputNorm, kPhi3Attention,
                                          llama_decoder::kPostAttentionNorm, kPhi3Mlp, llama_decoder::kFinal);

void readPhi3Rest(ConfigReader& r, ModelSpec& s) {
  llama_decoder::readMlp(r);
  if (r.has("sliding_window")) s.window = r.positive("sliding_window");
  readRopeParameters(r, s);
  if (r.has("rope_scaling")) r.refuse("rope_scaling " + r.object().at("rope_scaling").dump() + " (long-context RoPE)");
  if (r.positiveNumber("partial_rotary_factor", 1.0) != 1.0) {
    r.refuse("partial_rotary_factor " + r.object().at("partial_rotary_factor").dump() + " (RoPE on part of each head)");
  }
}

}  // namespace

extern const Family phi3;
const Family phi3 = {
    .modelType = "phi3",
    .displayName = "Phi-3",
    .arch = Arch::Other,
    .keys = kPhi3Keys,
    .readRest = readPhi3Rest,
    .tensors = kPhi3Tensors,
    .skippedSuffixes = llama_decoder::kSkipped,
    .norm = NormKind::RmsNorm,
    .mlp = MlpKind::SwiGlu,
    .positions = PositionKind::Rope,
};

}  // namespace mhascope::model::families
