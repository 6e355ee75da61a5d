// `mhascope circuits --checkpoint F [--json OUT] [--export-dir DIR] [--force] [--text S]`: what a trained
// model's heads compute, from its weights alone (core/analysis over core/train/circuits_source.hpp):
// every pair of heads, the copying scores, the strongest reads in words and the rollout of the task's
// probe sequence.
// `mhascope circuits --model DIR --text S|--text-file F --layer L --head H`: the same around one head
// of a Hugging Face model folder (core/analysis over core/model/circuits_source.hpp).
// The checkpoint source and the options: circuits_command.cpp; the model folder: circuits_model.cpp;
// what both share: circuits_files.hpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace CLI {
class App;
}

namespace mhascope::cli {

struct CircuitsArgs {
  std::string checkpoint, json, exportDir;
  std::optional<std::string> text;  // the rollout's input for a text-task checkpoint; a model's text
  std::string modelDir, textFile;   // --model DIR, --text-file F (the model's text, verbatim)
  int layer = 0, head = 0;          // --model: the chosen head
  std::string pair;                 // --pair "0.0,1.1": a pair whose virtual head to show ("" = none)
  bool force = false;  // replace an existing --json file
  std::optional<std::uint64_t> memoryBudgetMib;
};

int cmdCircuits(const CircuitsArgs& a);

}  // namespace mhascope::cli
