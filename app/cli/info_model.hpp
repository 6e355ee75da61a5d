// `mhascope info --model DIR`: a Hugging Face model folder's architecture, sizes, parameter count
// and KV-cache bytes per token, read from its config.json and its weights' headers (no forward).
// With a text (`--text`, `--text-file`, `--layer`), `info` shows that and the layer's pipeline.
#pragma once

#include <string>

#include "util/result.hpp"

namespace CLI {
class App;
}

namespace mhascope::cli {

// `info` is the parsed subcommand: any of its other options (sizes, text, files) is refused,
// because the folder decides them.
int cmdInfoModel(const std::string& dir, const CLI::App& info);
// The summary alone (architecture, sizes, parameters, KV cache), printed to stdout; `info --model
// DIR --text …` prints it above the layer's pipeline info.
Status printModelFolderSummary(const std::string& dir);

}  // namespace mhascope::cli
