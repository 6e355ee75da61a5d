// Gemma 2 (model_type "gemma2"), as transformers' configuration_gemma2.py and modeling_gemma2.py have it: the
// Gemma decoder (gemma_decoder.hpp) with its scores softcapped, s = c tanh(s / c) after the scale and before the
// mask (c = attn_logit_softcapping, 50 by default; the engine's softcapped stage), the logits likewise
// (final_logit_softcapping, 30), and every other layer sliding from layer 0 on (layer_types, else sliding_window's
// W on the even layers).
#include "model/families/gemma_decoder.hpp"

namespace mhascope::model::families {
namespace {

// Gemma2Config's defaults: head_dim 256, 8192 positions, tied embeddings.
constexpr auto kGemma2Keys = llama_decoder::keysWith({.maxPositions = 8192, .tied = true, .headDim = 256});
constexpr auto kGemma2Tensors =
    joinTensors(llama_decoder::kEmbedding, llama_decoder::kInputNorm, llama_decoder::kAttention, gemma_decoder::kMiddleNorms,
                llama_decoder::kMlp, llama_decoder::kMlpOutNorm, llama_decoder::kFinal);

void readGemma2Rest(ConfigReader& r, ModelSpec& s) {
  gemma_decoder::readShared(r, s, 30.0);
  s.attnSoftcap = gemma_decoder::readSoftcap(r, "attn_logit_softcapping", 50.0);
  const int window = gemma_decoder::readWindow(r);
  readLayerWindows(r, s, window, [](int i) { return (i + 1) % 2 != 0; });
}

}  // namespace

extern const Family gemma2;
const Family gemma2 = {
    .modelType = "gemma2",
    .displayName = "Gemma 2",
    .arch = Arch::Other,
    .keys = kGemma2Keys,
    .readRest = readGemma2Rest,
    .tensors = kGemma2Tensors,
    .skippedSuffixes = llama_decoder::kSkipped,
    .norm = NormKind::RmsNorm,
    .mlp = MlpKind::GeGluTanh,
    .positions = PositionKind::Rope,
    .blockNorms = BlockNorms::Sandwich,
    .normGainOffset = 1.0f,
    .scaleEmbeddings = true,
};

}  // namespace mhascope::model::families
