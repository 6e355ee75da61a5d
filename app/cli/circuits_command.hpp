// `mhascope circuits --checkpoint F [--json OUT] [--export-dir DIR] [--force] [--text S]`: what a trained
// model's heads compute, from its weights alone (core/train/circuits.hpp): the composition of every
// pair of heads in different layers with the random baseline, each head's copying score, the
// strongest reads in words, and the attention rollout of the task's probe sequence (--text: the text
// task's input, which its checkpoint does not store); --json writes the scores, --export-dir the QK / OV matrices and their
// token-space versions as .npy and PNG heatmaps.
// `mhascope circuits --model DIR --text S|--text-file F --layer L --head H`: the same around one head
// of a Hugging Face model folder (core/model/model_circuits.hpp; circuits_model.cpp).
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
  bool force = false;  // replace an existing --json file
  std::optional<std::uint64_t> memoryBudgetMib;
};

int cmdCircuits(const CircuitsArgs& a);
// --model: circuits_model.cpp.
int cmdCircuitsModel(const CircuitsArgs& a);

}  // namespace mhascope::cli
