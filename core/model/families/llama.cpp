// Llama (model_type "llama": Llama 2 and 3.x, TinyLlama, SmolLM2): the Llama decoder (llama_decoder.hpp)
// with attention_bias (biases on q, k, v and o) and Llama 3.1's rope_scaling.
#include "model/families/llama_decoder.hpp"

namespace mhascope::model::families {

extern const Family llama;
const Family llama = {
    .modelType = "llama",
    .displayName = "Llama",
    .arch = Arch::Llama,
    .keys = llama_decoder::kKeys,
    .readRest = llama_decoder::readLlamaKeys,
    .tensors = llama_decoder::kTensors,
    .basePrefixes = {},
    .skippedSuffixes = llama_decoder::kSkipped,
    .norm = NormKind::RmsNorm,
    .mlp = MlpKind::SwiGlu,
    .positions = PositionKind::Rope,
    .ropeStyle = RopeStyle::Half,
};

}  // namespace mhascope::model::families
