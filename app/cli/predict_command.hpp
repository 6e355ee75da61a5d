// `mhascope predict --model DIR --text "…" [--top k] [--json F]`: a Hugging Face model folder's
// next-token predictions on the user's text — per position the top-k next tokens — and the logit
// lens (each layer's stream through the final norm and unembedding, top-1 per cell). The text goes
// to the folder's tokenizer verbatim, as for `run --model` (model_run_command.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace CLI {
class App;
}

namespace mhascope::cli {

struct PredictArgs {
  std::string modelDir;
  std::optional<std::string> text;
  std::string textFile;
  int top = 5;
  std::string json;
  bool force = false;
  std::optional<std::uint64_t> memoryBudgetMib;
};

void addPredictOptions(CLI::App* c, PredictArgs& a);
int cmdPredict(const PredictArgs& a);

}  // namespace mhascope::cli
