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
Result<RopeStyle> ropeStyleFromName(std::string_view name);  // "half" | "interleaved"

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
  AttnPositions attnPositions = AttnPositions::None;  // RoPE or ALiBi inside attention
  float ropeBase = 10000.0f;
  RopeStyle ropeStyle = RopeStyle::Half;
  int kvHeads = 0;           // N K/V heads; 0 = h (multi-head attention)
  int headDim = 0;           // d_k, each head's width; 0 = d_model / h (the usual choice, not a rule)
  int window = 0;            // sliding window W; 0 = none
  int sinks = 0;             // attention sinks S (with a window)
  float softcap = 0.0f;      // c: the scaled scores become c tanh(s / c) before the mask (Gemma 2); 0: none
  bool qkNorm = false;       // RMSNorm of each head's q and k after the split (Qwen3, Gemma 3), gains 1
  bool learnedSink = false;  // a learned sink (gpt-oss): one more softmax column of logit sinkLogit in every head
  float sinkLogit = 0.0f;    // s, the same for every head (random weights have no learned ones to read)
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
// The one place where a config's rules become engine options and weights, around inputs made
// from its text (buildModel) or loaded from files (the CLI's --query): heads, scaling, the causal
// mask, key padding (`paddedKeys` (B, T_k) nonzero, e.g. the <pad> tokens that even out a batch,
// plus the last cfg.padLastKeys keys), the memory budget, seeded weights and the hand-set scores
// (matched against inputs.queryTokens/keyTokens). The caller has validated the sizes.
Model modelFromInputs(const ModelConfig& cfg, AttentionInputs inputs, const std::vector<std::uint8_t>& paddedKeys = {});
// How many of cfg.scoreOverride.cells set at least one score cell of this model's sizes and tokens.
int countAppliedScoreCells(const ModelConfig& cfg, const Model& model);

// The configuration line under every picture, one wording for the window's export and the
// CLI's: "B=1  T_q=6  d_model=8  h=2  d_k=4  mask=causal+pad2  scale=sqrt-dk  bias  seed=42".
// Sizes, masks, scaling and bias come from the trace (what the pass used); the padding count and
// the seed from `cfg`. T_k is named when it can differ from T_q (cross-attention); `+padding`
// marks key padding other than the last-n rule (uneven batch items, a mask file), `+attn_mask` an
// attention mask. `seedUsed` false (raw inputs with loaded weights, a trained checkpoint) leaves
// the seed out.
std::string configSummary(const Trace& t, const ModelConfig& cfg, bool seedUsed = true);

// --positions: sinusoidal (codes added to the inputs), rope, alibi or none, as the config's two
// fields say it ("sinusoidal+rope" when a config has both).
std::string positionsName(const ModelConfig& cfg);
// Sets both fields from a --positions name; an unknown name is an error listing the four.
Status setPositions(ModelConfig& cfg, std::string_view name);
// The engine options of the config's variants (N, positions, window, sinks) into `opt`.
void applyVariants(const ModelConfig& cfg, AttentionOptions& opt);

// Token embedding: a deterministic vector per distinct token string (hash of its bytes and the
// seed), ~N(0, 1) per feature, so the same word gets the same vector wherever it appears.
void embedToken(std::string_view token, std::uint64_t seed, float* out, int dModel);
// Sinusoidal position code of "Attention Is All You Need": sin on even features, cos on odd.
void addPositionCode(int position, float* row, int dModel);

// Where the parameters go (the Params lesson, `mhascope info`): what the layer holds (layerCounts,
// attention/layer_counts.hpp) and, beside it, what it would hold if every head had full-width
// projections. With N K/V heads, h query heads read W_q's h blocks of d_k columns and N K/V heads
// W_k's and W_v's N blocks.
struct ParameterTable {
  LayerCounts counts;
  std::int64_t oneHeadProjection = 0;  // one head's block of W_q: d_model * d_k
  std::int64_t qkvFullPerHead = 0;     // (h + 2N) * d_model^2: every Q and K/V head d_model wide
  std::int64_t qkvReducedPerHead = 0;  // (h + 2N) * d_model * d_k: each head d_k wide
  std::int64_t qkvReal = 0;            // W_q + W_k + W_v as the layer holds them (= the line above)
};
// Errors like validateSizes (d_model >= 1, h >= 1 and, when d_k is 0 (d_model / h), h dividing
// d_model) and, for N, 1 <= N dividing h (kvHeads 0 means N = h).
Result<ParameterTable> parameterTable(const LayerSizes& sizes);

}  // namespace mhascope
