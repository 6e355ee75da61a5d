// Gemma 3's text model (model_type "gemma3_text": Gemma 3 1B, and the language model of the larger ones), as
// transformers' configuration_gemma3.py and modeling_gemma3.py (Gemma3ForCausalLM) have it: the Gemma decoder
// (gemma_decoder.hpp) with the q/k norm per head — q_norm and k_norm of d_k, with Gemma's (1 + w) — and local
// and global layers: layer_types, else sliding_window_pattern n (6: layer i is local unless (i + 1) % n = 0,
// five local to one global). A local layer sees the last sliding_window keys and turns q and k with
// rope_local_base_freq; a global one sees every key and turns with rope_theta. No softcap on the scores: that
// file keeps attn_logit_softcapping but never hands it to the attention, so a value is refused rather than
// guessed; the logits are capped when final_logit_softcapping is set (null by default).
#include "model/families/gemma_decoder.hpp"

namespace mhascope::model::families {
namespace {

// Gemma3TextConfig's defaults: head_dim 256, 131072 positions, rope_theta 1e6, tied embeddings.
constexpr auto kGemma3Keys =
    llama_decoder::keysWith({.maxPositions = 131072, .ropeTheta = 1000000.0, .tied = true, .headDim = 256});
constexpr auto kGemma3Tensors =
    joinTensors(llama_decoder::kEmbedding, llama_decoder::kInputNorm, llama_decoder::kAttention, llama_decoder::kHeadQkNorms,
                gemma_decoder::kMiddleNorms, llama_decoder::kMlp, llama_decoder::kMlpOutNorm, llama_decoder::kFinal);

void readGemma3Rest(ConfigReader& r, ModelSpec& s) {
  gemma_decoder::readShared(r, s, 0.0);
  if (r.has("attn_logit_softcapping")) {
    r.refuse("attn_logit_softcapping " + r.object().at("attn_logit_softcapping").dump() +
             " (Gemma 3's attention does not apply it)");
  }
  const double localBase = r.positiveNumber("rope_local_base_freq", 10000.0);
  const int window = gemma_decoder::readWindow(r);
  // The pattern's older name has a leading underscore.
  const char* patternKey = r.has("sliding_window_pattern") || !r.has("_sliding_window_pattern")
                               ? "sliding_window_pattern"
                               : "_sliding_window_pattern";
  const int pattern = r.positive(patternKey, 6);
  const std::vector<bool> local = readLayerWindows(r, s, window, [pattern](int i) { return (i + 1) % pattern != 0; });
  for (std::size_t i = 0; i < local.size(); ++i) s.layerKinds[i].ropeTheta = local[i] ? localBase : 0.0;
}

}  // namespace

extern const Family gemma3_text;
const Family gemma3_text = {
    .modelType = "gemma3_text",
    .displayName = "Gemma 3",
    .arch = Arch::Other,
    .keys = kGemma3Keys,
    .readRest = readGemma3Rest,
    .tensors = kGemma3Tensors,
    .skippedSuffixes = llama_decoder::kSkipped,
    .norm = NormKind::RmsNorm,
    .mlp = MlpKind::GeGluTanh,
    .positions = PositionKind::Rope,
    .qkNorm = QkNormKind::PerHead,
    .blockNorms = BlockNorms::Sandwich,
    .normGainOffset = 1.0f,
    .scaleEmbeddings = true,
};

}  // namespace mhascope::model::families
