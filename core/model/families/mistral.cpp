// Mistral (model_type "mistral"): the Llama decoder (llama_decoder.hpp) with a sliding window on every
// layer: query t sees the keys t - W < j <= t, W = sliding_window (absent or null: no window).
#include "model/families/llama_decoder.hpp"

namespace mhascope::model::families {
namespace {

void readMistralRest(ConfigReader& r, ModelSpec& s) {
  llama_decoder::readMlp(r);
  readAttentionBias(r, s);
  if (r.has("sliding_window")) s.window = r.positive("sliding_window");
  readRopeScaling(r, s);
}

}  // namespace

extern const Family mistral;
const Family mistral = {
    .modelType = "mistral",
    .displayName = "Mistral",
    .arch = Arch::Mistral,
    .keys = llama_decoder::kKeys,
    .readRest = readMistralRest,
    .tensors = llama_decoder::kTensors,
    .basePrefixes = {},
    .skippedSuffixes = llama_decoder::kSkipped,
    .norm = NormKind::RmsNorm,
    .mlp = MlpKind::SwiGlu,
    .positions = PositionKind::Rope,
    .ropeStyle = RopeStyle::Half,
};

}  // namespace mhascope::model::families
