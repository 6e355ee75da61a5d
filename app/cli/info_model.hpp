// `mhascope info --model DIR`: a Hugging Face model folder's architecture, sizes, parameter count
// and KV-cache bytes per token, read from its config.json and its weights' headers (no forward).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace mhascope::cli {

// `info` is the parsed subcommand: any of its other options (sizes, text, files) is refused,
// because the folder decides them.
int cmdInfoModel(const std::string& dir, const CLI::App& info);

}  // namespace mhascope::cli
