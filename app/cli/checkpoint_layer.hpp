// `--checkpoint m.safetensors --layer L` for info / run / export / bench: the trained layer's MHA
// on its real input (see core/train/layer_model.hpp) as the CLI's model.
#pragma once

#include "model_options.hpp"
#include "train/model.hpp"

namespace mhascope::cli {

Result<ResolvedModel> resolveCheckpointLayer(const ModelOptions& o);

// The pipeline's ModelConfig that describes a trained layer on `batch` (sizes, causal mask, bias,
// the tokens' symbols as the text): the CLI's and the window's "Open in pipeline" share it.
ModelConfig checkpointLayerConfig(const train::GptConfig& g, const train::Batch& batch,
                                  const std::vector<std::vector<std::string>>& labels);

}  // namespace mhascope::cli
