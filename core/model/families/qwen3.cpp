// Qwen3 (model_type "qwen3"), as transformers' configuration_qwen3.py and modeling_qwen3.py have it: the Llama
// decoder (llama_decoder.hpp) with heads of head_dim (128 by default, whatever d_model / h is) and the q/k norm —
// q_norm and k_norm, RMSNorm gains of d_k, on each head's query and key after the split and before RoPE (the
// engine's q_normed and k_normed stages). attention_bias puts biases on q, k, v and o. A window W =
// sliding_window counts only with use_sliding_window, on the layers layer_types marks "sliding_attention"
// (absent: the layers from max_window_layers on).
#include "model/families/llama_decoder.hpp"

namespace mhascope::model::families {
namespace {

// Qwen3Config's defaults: head_dim 128, 32768 positions, an untied lm_head.
constexpr auto kQwen3Keys = llama_decoder::keysWith({.maxPositions = 32768, .headDim = 128});

constexpr auto kQwen3Tensors =
    joinTensors(llama_decoder::kEmbedding, llama_decoder::kInputNorm, llama_decoder::kAttention,
                llama_decoder::kHeadQkNorms, llama_decoder::kPostAttentionNorm, llama_decoder::kMlp, llama_decoder::kFinal);

void readQwen3Rest(ConfigReader& r, ModelSpec& s) {
  llama_decoder::readLlamaKeys(r, s);
  readQwen3Window(r, s);
}

}  // namespace

extern const Family qwen3;
const Family qwen3 = {
    .modelType = "qwen3",
    .displayName = "Qwen3",
    .arch = Arch::Other,
    .keys = kQwen3Keys,
    .readRest = readQwen3Rest,
    .tensors = kQwen3Tensors,
    .skippedSuffixes = llama_decoder::kSkipped,
    .norm = NormKind::RmsNorm,
    .mlp = MlpKind::SwiGlu,
    .positions = PositionKind::Rope,
    .qkNorm = QkNormKind::PerHead,
};

}  // namespace mhascope::model::families
