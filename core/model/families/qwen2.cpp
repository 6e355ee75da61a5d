// Qwen2 (model_type "qwen2": Qwen 2 and 2.5): the Llama decoder (llama_decoder.hpp) with biases on q, k
// and v always (none on o; attention_bias is not read). Its sliding window applies to some layers only
// (max_window_layers), which this forward does not implement: use_sliding_window true is refused, and
// sliding_window is ignored while it is false, as Hugging Face ignores it.
#include "model/families/llama_decoder.hpp"

namespace mhascope::model::families {
namespace {

void readQwen2Rest(ConfigReader& r, ModelSpec& s) {
  llama_decoder::readMlp(r);
  s.qkvBias = true;
  refuseFlag(r, "use_sliding_window", true, " (a window on some layers only)");
  readRopeScaling(r, s);
}

}  // namespace

extern const Family qwen2;
const Family qwen2 = {
    .modelType = "qwen2",
    .displayName = "Qwen2",
    .arch = Arch::Qwen2,
    .keys = llama_decoder::kKeys,
    .readRest = readQwen2Rest,
    .tensors = llama_decoder::kTensors,
    .basePrefixes = {},
    .skippedSuffixes = llama_decoder::kSkipped,
    .norm = NormKind::RmsNorm,
    .mlp = MlpKind::SwiGlu,
    .positions = PositionKind::Rope,
    .ropeStyle = RopeStyle::Half,
};

}  // namespace mhascope::model::families
