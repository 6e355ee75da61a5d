// `mhascope info`: the configuration, its shape trace, parameters, memory, FLOPs and KV-cache bytes.
#pragma once

#include <optional>

#include "io/workspace.hpp"
#include "model_options.hpp"

namespace mhascope::cli {

int cmdInfo(const ModelOptions& mo, const std::optional<Workspace>& ws);

}  // namespace mhascope::cli
