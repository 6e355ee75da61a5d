// ModelConfig: everything a user sets (text, sizes, seed, masks, scaling) in one plain struct,
// shared by the CLI, the GUI and presets; buildModel() turns it into engine inputs + weights.
// Presets are JSON files in assets/presets/ with the same fields.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "mhascope/engine.hpp"
#include "mhascope/result.hpp"

namespace mhascope {

enum class MaskKind { None, Causal };
const char* maskName(MaskKind m);  // "none" | "causal"
Result<MaskKind> maskFromName(std::string_view name);
Result<ScaleKind> scaleFromName(std::string_view name);

struct ModelConfig {
  std::string name = "default";
  std::string description;
  std::string text = "The cat sat on the mat";  // batch items separated by '|' or newlines
  bool crossAttention = false;
  std::string kvText;        // key/value sentence(s) when crossAttention
  int tokens = 0;            // 0 = as the text has; else cut/extend every item to this many
  int dModel = 8;            // d_model
  int heads = 2;             // h
  int batch = 0;             // B; 0 = one item per sentence; more items cycle the sentences
  std::uint64_t seed = 42;
  bool bias = true;
  bool positions = true;     // add sinusoidal position codes to the embeddings
  MaskKind mask = MaskKind::None;
  int padLastKeys = 0;       // key padding: ignore the last n keys of every batch item
  ScaleKind scale = ScaleKind::SqrtDk;
  std::uint64_t memoryBudgetBytes = kDefaultMemoryBudget;
};

// Everything forward() takes.
struct Model {
  AttentionInputs inputs;
  MhaWeights weights;
  AttentionOptions options;
};

// Checks the config (sizes, divisibility, tokens, memory) before anything is allocated.
Status validateConfig(const ModelConfig& cfg);
// Tokenises, embeds (per-token deterministic vector + optional positions), initialises weights.
Result<Model> buildModel(const ModelConfig& cfg);

// Token embedding: a deterministic vector per distinct token string (hash of its bytes and the
// seed), ~N(0, 1) per feature, so the same word gets the same vector wherever it appears.
void embedToken(std::string_view token, std::uint64_t seed, float* out, int dModel);
// Sinusoidal position code of "Attention Is All You Need": sin on even features, cos on odd.
void addPositionCode(int position, float* row, int dModel);

// Presets ---------------------------------------------------------------------------------------
inline constexpr int kPresetVersion = 1;
// Strict: unknown/duplicate keys, wrong types, negative sizes, future versions are errors that
// name the JSON path. Nothing is half-applied: either a whole config or an error.
Result<ModelConfig> parsePresetJson(std::string_view json, const std::string& what);
std::string presetToJson(const ModelConfig& cfg);
// A bundled preset by name ("cat") or a path to a .json file.
Result<ModelConfig> loadPreset(const std::string& nameOrPath);
std::vector<std::string> presetNames();  // bundled, sorted, "default" first
std::string assetsDir();                  // $MHASCOPE_ASSETS or the source tree's assets/

// Parameter counts for the current sizes.
struct ParamCount {
  std::int64_t withoutBias = 0;  // 4 * d_model^2
  std::int64_t withBias = 0;     // + 4 * d_model
};
ParamCount countParams(std::int64_t dModel);

}  // namespace mhascope
