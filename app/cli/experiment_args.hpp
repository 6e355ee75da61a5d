// What `mhascope patch` and `mhascope attribute` share: the model folder's texts through its tokenizer, an answer
// token given as a text of one token (or "#id"), the export folder's kind and the heatmap of a grid.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "model_source/model_text.hpp"
#include "util/result.hpp"

namespace CLI {
class App;
}

namespace mhascope::cli {

// The options both commands share: --json (--force), --export-dir, --threads, --memory-budget.
struct ExperimentOutputArgs {
  std::string json, exportDir;
  bool force = false;
  int threads = 1;
  std::optional<std::uint64_t> memoryBudgetMib;
  std::uint64_t budgetBytes() const;  // --memory-budget, or the default budget
};
void addExperimentOutputOptions(CLI::App& cmd, ExperimentOutputArgs& o);

// The token id of `text` for this tokenizer: "#123" is the id 123; otherwise the text must encode to exactly one
// token (no BOS), and the message names the flag, the text and the pieces it gave.
Result<int> answerToken(const ModelText& mt, const std::string& flag, const std::string& text);

// Outputs: a --json file (an existing one only with force) and an --export-dir folder of an experiment (only its own
// files, written whole or not at all). Checked before any work; the export target in `target`.
Status checkExperimentOutputs(const ModelText& mt, const std::string& json, bool force, const std::string& exportDir,
                              std::filesystem::path& target);

// Writes `json` (when named) and, into the export folder, each (stem, rows, cols, values, row labels, column labels,
// title) as <stem>.npy and <stem>.png: signed values on the diverging map, `range` symmetric about 0 (0: the
// values' largest magnitude).
struct GridFile {
  std::string stem;
  int rows = 0, cols = 0;
  std::vector<float> values;  // (rows, cols)
  std::vector<std::string> rowLabels, colLabels;
  std::string rowAxis, colAxis, title;
  float range = 0;
};
Status writeExperimentOutputs(const std::string& json, const std::string& jsonText, const std::string& exportDir,
                              const std::filesystem::path& target, const std::vector<GridFile>& files,
                              const std::string& subtitle);

}  // namespace mhascope::cli
