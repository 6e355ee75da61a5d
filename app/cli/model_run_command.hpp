// A Hugging Face model folder on the user's own text, headless:
//   run --model DIR --text "…" --layer L --dump OUT   layer L's attention stages, as `run --dump`
//                                                      writes them, plus token_ids.npy (1, T) int64
//   predict --model DIR --text "…" [--top k] [--json F]  per position the top-k next tokens, and the
//                                                      logit lens (each layer's stream through the
//                                                      final norm and unembedding, top-1 per cell)
// The text goes to the folder's tokenizer verbatim (newlines, tabs and '|' are text, not batch
// separators); a BOS is put first only when the tokenizer's post-processor template asks for one,
// as Hugging Face's tokenizer does by default. Options the folder decides (sizes, heads, positions,
// weights, masks, …) are refused in one line naming them.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>

namespace mhascope::cli {

// `run` with --model: `run` is the parsed subcommand, so any option the folder decides that was
// given is named in the refusal.
int cmdRunModel(const std::string& modelDir, const std::optional<std::string>& text, const std::string& textFile,
                std::optional<int> layer, std::optional<std::uint64_t> memoryBudgetMib, const std::string& dumpDir,
                const CLI::App& run);

struct PredictArgs {
  std::string modelDir;
  std::optional<std::string> text;
  std::string textFile;
  int top = 5;
  std::string json;
  bool force = false;
  std::optional<std::uint64_t> memoryBudgetMib;
};

CLI::App* addPredictCommand(CLI::App& app, PredictArgs& a);
int cmdPredict(const PredictArgs& a);

}  // namespace mhascope::cli
