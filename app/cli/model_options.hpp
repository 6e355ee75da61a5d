// The MODEL options every subcommand shares (--preset, --text, --d-model, --heads, masks, raw
// .npy inputs, .safetensors weights …) and how they become a core Model.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "mhascope/model.hpp"

namespace mhascope::cli {

struct ModelOptions {
  std::string preset = "default";
  std::optional<std::string> text, kvText;
  std::optional<int> dModel, heads, tokens, batch, padLast;
  std::optional<std::uint64_t> seed;
  bool bias = false, noBias = false;  // --bias / --no-bias override the preset
  std::optional<std::string> mask, scale;
  std::optional<std::uint64_t> memoryBudgetMib;
  bool noPositions = false;
  std::string queryFile, keyFile, valueFile;
  std::string keyPaddingMaskFile, attnMaskFile;
  std::string weightsFile, saveWeightsFile;
  std::string checkpointFile;  // --checkpoint: a trained layer (app/cli/checkpoint_layer.cpp)
  std::optional<int> layer;
};

void addModelOptions(CLI::App& cmd, ModelOptions& o);

// The config after preset + overrides, and the model built from it (with files applied).
struct ResolvedModel {
  ModelConfig config;
  Model model;
  std::string describe;  // one line: "B=1 T_q=4 T_k=4 d_model=8 h=2 d_k=4 mask=none scale=sqrt-dk"
};
Result<ResolvedModel> resolveModel(const ModelOptions& o);

}  // namespace mhascope::cli
