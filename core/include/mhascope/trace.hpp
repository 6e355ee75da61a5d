// Trace: everything one forward pass computed, recorded as plain data in pipeline order —
// every stage's tensor with its shape and axis names, plus the tokens and the rows that were
// fully masked. Panels and exporters only read a Trace; they never compute attention.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mhascope/result.hpp"
#include "mhascope/tensor.hpp"

namespace mhascope {

// The pipeline, in order. The names (stageName) are what the CLI and the dump use.
enum class StageId : int {
  Query,         // (B, T_q, d_model)
  Key,           // (B, T_k, d_model)
  Value,         // (B, T_k, d_model)
  QProj,         // (B, T_q, d_model)  X W_q + b_q
  KProj,         // (B, T_k, d_model)
  VProj,         // (B, T_k, d_model)
  QHeads,        // (B, h, T_q, d_k)   reshape + transpose
  KHeads,        // (B, h, T_k, d_k)
  VHeads,        // (B, h, T_k, d_k)
  Scores,        // (B, h, T_q, T_k)   Q K^T
  ScaledScores,  // (B, h, T_q, T_k)   / sqrt(d_k)
  MaskedScores,  // (B, h, T_q, T_k)   blocked cells = -inf
  Weights,       // (B, h, T_q, T_k)   softmax over T_k
  HeadOutputs,   // (B, h, T_q, d_k)   weights V
  Concat,        // (B, T_q, d_model)  heads side by side
  Output,        // (B, T_q, d_model)  concat W_o + b_o
};
inline constexpr int kStageCount = 16;

// What the numbers are: picks the colormap (signed → diverging about 0, weights → sequential).
enum class DataKind { Signed, Probability };

struct StageInfo {
  StageId id;
  const char* name;         // "scaled_scores"
  const char* title;        // "Scale"
  const char* formula;      // "S' = S / sqrt(d_k)"
  const char* explanation;  // one paragraph, our own words
  const char* pseudocode;   // a few lines; the stage's own line starts with '>'
  DataKind kind;
};

const StageInfo& stageInfo(StageId id);
const std::array<StageInfo, kStageCount>& allStages();
std::optional<StageId> stageFromName(std::string_view name);
std::string stageNamesList();  // "query, key, ..." for error messages
// The whole forward pass as PyTorch-like pseudocode, one line per step; a stage's own line is
// pseudocodeLineOf(id) (-1 for the input stages, which have no line of their own).
const std::vector<std::string>& pseudocodeListing();
int pseudocodeLineOf(StageId id);

enum class ScaleKind { SqrtDk, SqrtDModel, None };
const char* scaleName(ScaleKind s);  // "sqrt-dk" | "sqrt-dmodel" | "none"

struct Stage {
  StageId id;
  Tensor tensor;
};

struct Trace {
  int batch = 0;    // B
  int tq = 0;       // T_q
  int tk = 0;       // T_k
  int dModel = 0;   // d_model
  int heads = 0;    // h
  int dk = 0;       // d_k = d_model / h
  bool selfAttention = true;
  bool causal = false;
  ScaleKind scale = ScaleKind::SqrtDk;
  float scaleFactor = 1.0f;  // the number scores are multiplied by, e.g. 1/sqrt(d_k)

  std::vector<Stage> stages;                          // kStageCount entries, pipeline order
  std::vector<std::vector<std::string>> queryTokens;  // (B, T_q) labels
  std::vector<std::vector<std::string>> keyTokens;    // (B, T_k) labels
  std::vector<std::uint8_t> blocked;                  // (B, T_q, T_k) 1 = key blocked for query
  std::vector<std::uint8_t> fullyMasked;              // (B, T_q) 1 = every key blocked: weights row 0
  std::uint64_t generation = 0;                       // ++ on every recompute

  const Tensor& tensor(StageId id) const { return stages[static_cast<std::size_t>(id)].tensor; }
  Tensor& tensor(StageId id) { return stages[static_cast<std::size_t>(id)].tensor; }
  bool isBlocked(int b, int q, int k) const {
    return blocked[(static_cast<std::size_t>(b) * tq + q) * tk + k] != 0;
  }
  bool isFullyMasked(int b, int q) const { return fullyMasked[static_cast<std::size_t>(b) * tq + q] != 0; }
};

// A 2-D view into one stage for one batch item (and one head for per-head stages):
// rows × cols floats, row-major, with the axis names and a label per row and column.
struct Slice2D {
  StageId stage;
  int batchIndex = 0;
  int head = -1;  // -1 for stages without a head axis
  int rows = 0, cols = 0;
  const float* data = nullptr;  // points into the trace; valid while the trace is unchanged
  std::string rowAxis, colAxis;  // "T_q", "T_k", "d_k", "d_model"
  std::vector<std::string> rowLabels, colLabels;
  // (rows) 1 = a query row whose every key is blocked (weights 0, output 0): pictures flag it.
  // Empty unless the rows are T_q.
  std::vector<std::uint8_t> flaggedRows;
  float at(int r, int c) const { return data[static_cast<std::size_t>(r) * cols + c]; }
};

bool stageHasHeads(StageId id);
// Errors name the bad index and the valid range.
Result<Slice2D> sliceStage(const Trace& trace, StageId stage, int batchIndex, int head);

// Mean over heads of the weights: (T_q, T_k) for one batch item — what PyTorch returns with
// average_attn_weights=True.
RowMatrix averagedWeights(const Trace& trace, int batchIndex);

}  // namespace mhascope
