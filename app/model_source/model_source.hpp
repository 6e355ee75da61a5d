// One model source for the command line and the window: a configuration (preset + settings)
// plus the files named in InputFiles (raw .npy inputs, .npy masks, .safetensors weights, a
// checkpoint layer) → the engine's Model. The CLI's resolveModel (app/cli/model_options.cpp)
// and the window's compute worker (app/shell/compute_worker.cpp) both call modelFromSource, so
// the same files give the same model and the same messages (each names its file and flag).
// GUI-free: it links core and mhascope_train only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "attention/engine.hpp"
#include "attention/model.hpp"
#include "io/input_files.hpp"
#include "train/model.hpp"

namespace mhascope {

// The model with the config it was built from (sizes and bias as the files decided them).
struct SourcedModel {
  ModelConfig config;
  Model model;
  bool seedUsed = true;      // false: neither embeddings nor weights came from config.seed
  std::string describeNote;  // appended to the summary, e.g. "; trained layer 1 of 2 (…)"
};

struct ModelRequest {
  ModelConfig config;  // preset + settings; memoryBudgetBytes is the budget every file is read under
  InputFiles files;
  MemoryUse use;
  // The command line: d_model given explicitly (--d-model), checked against a --query file.
  std::optional<int> requiredDModel;
  // The window: a weights file sets d_model (its controls show it fixed) instead of having to
  // match the control. The command line keeps d_model from the options and checks the file.
  bool weightsDecideDModel = false;
  // A checkpoint's probe input: how many items and (text task) which text.
  int checkpointItems = 1;
  std::string checkpointText;
};

Result<SourcedModel> modelFromSource(const ModelRequest& r);

// A trained checkpoint layer (`--checkpoint F --layer L`; the Train mode's "Open in pipeline"
// builds the same from the parameters in memory).
// Reading the file, the forward and the model's config all use `memoryBudgetBytes`.
Result<SourcedModel> checkpointLayerSource(const std::string& path, int layer, int items, const std::string& text,
                                           std::uint64_t memoryBudgetBytes);
// The pipeline's ModelConfig that describes a trained layer on `batch` (sizes, causal mask, bias,
// the tokens' symbols as the text).
ModelConfig checkpointLayerConfig(const train::GptConfig& g, const train::Batch& batch,
                                  const std::vector<std::vector<std::string>>& labels);

// Why a control of the configuration cannot be changed while these files are in use, or "" when
// it can. `control`: "text", "d_model", "heads", "bias", "seed", "mask", "scale", "batch" …
std::string fixedByFiles(const InputFiles& files, const std::string& control);

}  // namespace mhascope
