// `--checkpoint m.safetensors --layer L` for info / run / export / bench: the trained layer's MHA
// on its real input (see core/train/layer_model.hpp) as the CLI's model.
#pragma once

#include "model_options.hpp"

namespace mhascope::cli {

Result<ResolvedModel> resolveCheckpointLayer(const ModelOptions& o);

}  // namespace mhascope::cli
