// A trained layer as a first-class engine input: the MHA of block `layer` with its trained
// weights, on its real input — LN1 of the residual stream for a batch — with the causal mask and
// tokens labelled by their symbols. Running mhascope::forward on it reproduces exactly the
// attention the trained model computes there, so every stage, lesson and export works on it.
#pragma once

#include <string>
#include <vector>

#include "attention/model.hpp"
#include "train/checkpoint.hpp"

namespace mhascope::train {

// Errors: layer out of range (names the valid range), a batch that does not fit the model, a
// forward of the whole model on `batch` whose estimate passes the memory budget.
Result<Model> trainedLayerModel(const GptParams& p, const Batch& batch, int layer,
                                const std::vector<std::vector<std::string>>& labels,
                                std::uint64_t memoryBudgetBytes = kDefaultMemoryBudget);

// The probe sequence(s) of a checkpoint's task: `items` sequences of its probe batch, labelled
// by their symbols. The text task has no stored text: pass `text` (its characters must be in the
// checkpoint's alphabet; T = min(its length, the model's T)).
struct ProbeInput {
  Batch batch;
  std::vector<std::vector<std::string>> labels;
};
Result<ProbeInput> checkpointProbe(const Checkpoint& c, int items, const std::string& text);

}  // namespace mhascope::train
