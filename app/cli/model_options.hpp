// The MODEL options every subcommand shares (--preset, --text, --d-model, --heads, masks, raw
// .npy inputs, .safetensors weights, a checkpoint's or a model folder's layer …) and how they
// become a core Model. Their command-line flags (CLI11) are in cli/options.hpp, which only the
// command-line files include.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "attention/model.hpp"
#include "io/input_files.hpp"
#include "model_source/model_source.hpp"

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
  // Attention as today's models run it: N K/V heads, positions inside attention, a sliding window.
  std::optional<int> kvHeads, headDim, window, sinks;
  std::optional<double> softcap;  // the scores' softcap c (Gemma 2)
  bool qkNorm = false;            // q/k norm per head (Qwen3)
  std::optional<double> sink;     // the learned sink's logit, every head's (gpt-oss)
  std::optional<std::string> positions, ropeStyle;
  std::optional<double> ropeBase;
  InputFiles files;             // --query … --checkpoint/--layer (app/cli/checkpoint_layer.cpp), --model
  std::string textFile;         // --text-file: with --model, the text read verbatim from a file
  std::string saveWeightsFile;
  bool presetGiven = false;     // --preset on the command line (it wins over --workspace's config)
  std::string workspace, saveWorkspace;       // --workspace FILE, --save-workspace FILE (workspace_options.cpp)
  std::optional<ModelConfig> workspaceConfig;  // --workspace's config: the base instead of the preset
  bool layerFromWorkspace = false;             // files.layer is the workspace's, not a --layer given here
};

// Integers are decimal only (a leading zero is not octal: "032" is 32) and range-checked
// ("--head 4294967298" is an error, not head 2); the rule of an integer held in a string (e.g.
// "--head 3" besides "--head all").
Result<long long> parseDecimal(const std::string& text, const std::string& flag, long long lo, unsigned long long hi);

// What a command writes, so resolveModel can check the budget for it and refuse outputs that
// would overwrite an input.
struct OutputPlan {
  bool stageFile = false;         // run --dump: one stage encoded at a time
  bool allHeads = false;          // export --head all: h heatmaps in one picture
  bool picture = false;           // export: the picture's surface and encoded bytes
  std::vector<std::string> files;  // files the command writes (export --out, --save-workspace)
  std::string folder;             // run --dump DIR
  bool describeOnly = false;      // info: sizes and shapes only (a model folder's earlier layers are not run)
  bool recordedLatentLayer = false;  // run: a latent layer comes as the model forward's record (SourcedModel::recorded)
};

// The config after preset + overrides, and the model built from it (with files applied): the
// model source's result (core/model_source/model_source.hpp), the window's too.
using ResolvedModel = SourcedModel;
// One line for info, bench, trace.json and the pictures' subtitle: configSummary() (the window's
// subtitle too) plus describeNote.
std::string describe(const ResolvedModel& r, const Trace& t);
Result<ResolvedModel> resolveModel(const ModelOptions& o, const OutputPlan& plan = {});
// Steps 1 and 2 of resolveModel: options that contradict each other, then preset + overrides (the
// window's command line uses them before its first compute).
Status checkOptionConflicts(const ModelOptions& o);
Result<ModelConfig> configFromOptions(const ModelOptions& o);

// Writes --save-weights (if given) from the weights used; call only when the command succeeded.
Status saveWeightsIfAsked(const ModelOptions& o, const ResolvedModel& r);

// The config as trace.json records it: only the values this run used (no text for raw inputs,
// no seed when neither embeddings nor weights came from it, no kv_text without cross-attention),
// plus the input files.
std::string usedConfigJson(const ModelOptions& o, const ResolvedModel& r);

// Input files named by the options (--query, --key, --value, masks, --weights, --preset FILE).
std::vector<std::pair<std::string, std::string>> inputFiles(const ModelOptions& o);
// Every file the command reads, which no output may replace (--force included): inputFiles, plus
// each file of a --model folder (modelFolderFiles) and --text-file.
std::vector<std::pair<std::string, std::string>> filesRead(const ModelOptions& o);

}  // namespace mhascope::cli
