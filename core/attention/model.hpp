// ModelConfig: everything a user sets (text, sizes, seed, masks, scaling) in one plain struct,
// shared by the CLI, the GUI and presets; buildModel() turns it into engine inputs + weights.
// Presets are JSON files in assets/presets/ with the same fields.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "attention/engine.hpp"
#include "util/result.hpp"

namespace mhascope {

enum class MaskKind { None, Causal };
const char* maskName(MaskKind m);  // "none" | "causal"
Result<MaskKind> maskFromName(std::string_view name);
Result<ScaleKind> scaleFromName(std::string_view name);

// Hand-set scores (the "specialist heads" lesson and its score-cell editor): cells of Q K^T that
// are replaced before scaling (AttentionOptions::scoresOverride). Precedence: `other` for every
// cell, then `self` on the diagonal (query position == key position), then the listed cells.
// A cell names its query and key by position or by token text (every position holding that
// token). Cells that do not fit the current sizes — a head >= h, a position >= T, a word that is
// not in the sentence — match nothing, so the sliders and the text stay free to move;
// countAppliedScoreCells() tells how many apply.
struct ScoreCell {
  int head = 0;                      // 0-based
  int query = -1, key = -1;          // 0-based positions, used when the token text is empty
  std::string queryToken, keyToken;  // token text, matched exactly
  float score = 0.0f;                // the raw score, before the / sqrt(d_k) scaling
};
struct ScoreOverride {
  std::optional<float> other;  // every cell not set otherwise (absent: the computed q . k)
  std::optional<float> self;   // the diagonal cells
  std::vector<ScoreCell> cells;
  bool empty() const { return !other && !self && cells.empty(); }
};

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
  ScoreOverride scoreOverride;  // preset key "score_override"; empty: every score is q . k
};

// Everything forward() takes.
struct Model {
  AttentionInputs inputs;
  MhaWeights weights;
  AttentionOptions options;
};

// Checks the config (sizes, divisibility, tokens, memory) before anything is allocated.
Status validateConfig(const ModelConfig& cfg, const MemoryUse& use = {});
// Tokenises, embeds (per-token deterministic vector + optional positions), initialises weights.
Result<Model> buildModel(const ModelConfig& cfg, const MemoryUse& use = {});
// How many of cfg.scoreOverride.cells set at least one score cell of this model's sizes and tokens.
int countAppliedScoreCells(const ModelConfig& cfg, const Model& model);

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
std::string assetsDir();  // $MHASCOPE_ASSETS, <prefix>/share/mhascope/assets beside the binary, or the source tree's

// Parameter counts for the current sizes.
struct ParamCount {
  std::int64_t withoutBias = 0;  // 4 * d_model^2
  std::int64_t withBias = 0;     // + 4 * d_model
};
ParamCount countParams(std::int64_t dModel);

}  // namespace mhascope
