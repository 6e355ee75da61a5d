// Trace: everything one forward pass computed, recorded as plain data in pipeline order —
// every stage's tensor with its shape and axis names, plus the tokens and the rows that were
// fully masked. Panels and exporters only read a Trace; they never compute attention.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.hpp"
#include "attention/data_kind.hpp"
#include "attention/tensor.hpp"

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
  KHeads,        // (B, N, T_k, d_k)   N K/V heads (N = h: multi-head attention)
  VHeads,        // (B, N, T_k, d_k)
  QNormed,       // (B, h, T_q, d_k)   q/k norm: each query scaled to unit RMS (per head, or over all h·d_k), · g
  KNormed,       // (B, N, T_k, d_k)
  QRotated,      // (B, h, T_q, d_k)   RoPE: each pair of features turned by its position's angle
  KRotated,      // (B, N, T_k, d_k)
  KvGroups,      // (1, h, N)          1 where query head i reads K/V head i // (h/N)
  Scores,        // (B, h, T_q, T_k)   Q K^T
  ScaledScores,  // (B, h, T_q, T_k)   / sqrt(d_k)
  SoftCapped,    // (B, h, T_q, T_k)   c tanh(S' / c): the scores' softcap (Gemma 2)
  PositionBias,  // (1, h, T_q, T_k)   ALiBi: -m_i (t - j) added to the scaled scores
  WindowMask,    // (1, T_q, T_k)      1 where the sliding window hides the key (sinks excepted)
  MaskedScores,  // (B, h, T_q, T_k)   (+ bias), blocked cells = -inf
  Weights,       // (B, h, T_q, T_k)   softmax over T_k (and the learned sink's column, dropped)
  SinkShare,     // (B, h, T_q, 1)     the learned sink's share of each row, 1 - sum_k A[t, k] (gpt-oss)
  HeadOutputs,   // (B, h, T_q, d_k)   weights V
  Concat,        // (B, T_q, d_model)  heads side by side
  Output,        // (B, T_q, d_model)  concat W_o + b_o
};
inline constexpr int kStageCount = 25;
// The stages of the variants (q/k norm, RoPE, grouped K/V heads, the softcap, ALiBi, the sliding window, the learned
// sink) are recorded only
// when the variant is used; otherwise they are empty (shape {0}) and the stepper, the dump and the
// shape trace leave them out.
bool stageIsVariant(StageId id);

struct StageInfo {
  StageId id;
  const char* name;         // "scaled_scores"
  const char* title;        // "Scale"
  const char* shortName;    // "÷√d_k": the pipeline stepper's button
  // "scale": the step of the pipeline it belongs to, the stepper's label over its buttons; the
  // stages of one step are consecutive in StageId order.
  const char* group;
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

// Given: a factor a model's config decides (Gemma: query_pre_attn_scalar^-1/2), AttentionOptions::scaleFactor.
enum class ScaleKind { SqrtDk, SqrtDModel, None, Given };
const char* scaleName(ScaleKind s);  // "sqrt-dk" | "sqrt-dmodel" | "none" | "given"
// The Scale stage as the window's stage strip and title name it under this scale: "÷√d_k" and
// "S'_i = S_i / sqrt(d_k)"; "÷√d_model"; "×1" and "S'_i = S_i (not scaled)"; a given factor "×0.204"
// and "S'_i = S_i · 0.204124 (the model's own scale)".
std::string scaleChip(ScaleKind kind, float factor);
std::string scaleFormula(ScaleKind kind, float factor);

// Positions that act inside attention (the sinusoidal codes are added to the inputs instead):
// RoPE turns q and k, ALiBi adds a bias to the scaled scores.
enum class AttnPositions { None, Rope, Alibi };
// RoPE's pairing of the d_k features: (i, i + d_k/2) as Hugging Face Llama's rotate_half, or
// (2i, 2i + 1) as the original Llama code's complex numbers.
enum class RopeStyle { Half, Interleaved };
const char* ropeStyleName(RopeStyle s);  // "half" | "interleaved"

struct Stage {
  StageId id;
  Tensor tensor;
};

// Learned parameters in the textbook layout y = x W + b, so W_q[i, j] multiplies input feature i
// into output feature j. With N K/V heads (grouped-query attention) W_k and W_v are
// (d_model, N·d_k) and b_k, b_v (1, N·d_k); N = h gives the square matrices of multi-head attention. PyTorch stores the transpose (out, in): see weights_io.hpp. A trace holds
// the ones its pass used, so the window and `export` show the very numbers the pass multiplied
// by, never a recomputation.
struct MhaWeights {
  int dModel = 0;
  bool hasBias = false;
  RowMatrix wq, wk, wv, wo;  // W_q (d_model, h·d_k), W_k, W_v (d_model, N·d_k), W_o (h·d_k, d_model)
  RowVector bq, bk, bv, bo;  // (1, h·d_k), (1, N·d_k), (1, N·d_k), (1, d_model); zeros when !hasBias
  std::int64_t qWidth() const { return wq.cols(); }   // h·d_k (d_model unless the heads are set wider or narrower)
  std::int64_t kvWidth() const { return wk.cols(); }  // N·d_k
};

enum class WeightId : int { Wq, Wk, Wv, Wo, Bq, Bk, Bv, Bo };
inline constexpr int kWeightCount = 8;
const char* weightName(WeightId id);     // "w_q" — CLI (`export --weight`) and file names
const char* weightSymbol(WeightId id);   // "W_q" — what the window and pictures show
const char* weightMeaning(WeightId id);  // one line: what the matrix does
std::optional<WeightId> weightFromName(std::string_view name);
std::string weightNamesList();           // "w_q, w_k, ..." for error messages

// One learned table of a trace, read-only: W_* (d_model_in, d_model_out) or b_* (1, d_model_out),
// row-major. data null: the trace holds no weights.
struct WeightTable {
  const float* data = nullptr;
  int rows = 0, cols = 0;
};

// Scaled, softcapped and masked scores are kept lazily: a recorded trace stores only their shape and axes and
// derives every number from Scores when asked, with the very float operations the forward used
// (scaled = s * scaleFactor; capped = c tanh(scaled / c); masked = -inf where blocked, else capped or scaled),
// so they read, dump and
// export bit for bit as if recorded, at two (B, h, T_q, T_k) tables less memory.
bool stageIsLazy(StageId id);

struct Trace {
  int batch = 0;    // B
  int tq = 0;       // T_q
  int tk = 0;       // T_k
  int dModel = 0;   // d_model
  int heads = 0;    // h
  int dk = 0;       // d_k (usually d_model / h; a model may set it)
  bool selfAttention = true;
  bool causal = false;
  bool keyPadding = false;  // a key padding mask was applied (some keys blocked for every query)
  bool attnMask = false;    // an explicit (T_q, T_k) attention mask was applied
  ScaleKind scale = ScaleKind::SqrtDk;
  float scaleFactor = 1.0f;  // the number scores are multiplied by, e.g. 1/sqrt(d_k)
  float softcap = 0.0f;      // c of the softcapped scores c tanh(S' / c) (0: none)
  int kvHeads = 0;           // N K/V heads (N = h: multi-head attention)
  AttnPositions positions = AttnPositions::None;
  RopeStyle ropeStyle = RopeStyle::Half;
  float ropeBase = 10000.0f;
  int window = 0;            // sliding window W (0: none)
  int sinks = 0;             // keys 0 .. S-1 stay visible past the window
  std::vector<float> sinkLogits;  // (h) the learned sink's logit s_i per head (AttentionOptions::sinkLogits); empty: none
  int layer = -1;            // the model's layer these numbers are (AttentionOptions::layer); -1: none
  // A latent-attention layer's record (core/attention/latent.hpp): every head's keys and values made from one latent
  // of r numbers per token, beside one rotary key of d_r shared by the heads; 0: the usual N K/V heads.
  int latentRank = 0, latentRopeDim = 0;

  // kStageCount entries, pipeline order. A lazy stage (isLazy) holds its shape and axes only:
  // read its numbers through tensor(), readCells() or cell(), never through .data.
  std::vector<Stage> stages;
  // The learned parameters the pass used, read-only: the caller's own when it passed them shared
  // (forward's shared_ptr overload: no copy, no compare), else a copy the trace holds. Biases are
  // zeros when the model has none (hasBias false). Null: a trace that holds none.
  std::shared_ptr<const MhaWeights> weights;
  bool hasBias = false;
  std::vector<std::vector<std::string>> queryTokens;  // (B, T_q) labels
  std::vector<std::vector<std::string>> keyTokens;    // (B, T_k) labels
  std::vector<std::uint8_t> blocked;                  // (B, T_q, T_k) 1 = key blocked for query
  std::vector<std::uint8_t> fullyMasked;              // (B, T_q) 1 = every key blocked: weights row 0
  std::uint64_t generation = 0;                       // ++ on every recompute

  // A stored stage's whole table. A lazy stage has none to give: its readers use copyOf,
  // readCells, cell, forEachBlock or a slice (asking here throws std::logic_error).
  const Tensor& tensor(StageId id) const;
  Tensor& tensor(StageId id);
  WeightTable weight(WeightId id) const;  // one of them; data null when the trace holds none
  // Shape and axis names without touching the numbers (cheap for every stage).
  const Shape& shapeOf(StageId id) const { return stages[static_cast<std::size_t>(id)].tensor.shape; }
  const std::vector<std::string>& axesOf(StageId id) const { return stages[static_cast<std::size_t>(id)].tensor.axes; }
  // True when the stage's numbers are derived from Scores on demand (not stored).
  bool isLazy(StageId id) const;
  // Cells [first, first + count) of the stage in flat row-major order, into out: copied, or for a
  // lazy stage computed from Scores. cell(): one of them.
  void readCells(StageId id, std::int64_t first, std::int64_t count, float* out) const;
  float cell(StageId id, std::int64_t index) const;
  // Cells [first, first + count) of a stage in blocks, fn(data, n, at) for each block in order
  // (`at`: the flat index of data[0]): a stored stage's own numbers, a lazy stage's made from the
  // scores 65 536 cells at a time, so whole-stage scans never make a whole lazy table.
  void forEachBlock(StageId id, std::int64_t first, std::int64_t count,
                    const std::function<void(const float*, std::int64_t, std::int64_t)>& fn) const;
  // The stage's whole table as a Tensor of its own (a lazy stage's is made from Scores and not
  // kept: for a reader that needs one table at a time, like the dump).
  Tensor copyOf(StageId id) const;
  // Bytes of numbers held: every stored stage, weights (held or shared) and mask flags.
  std::uint64_t residentBytes() const;
  bool isBlocked(int b, int q, int k) const {
    return blocked[(static_cast<std::size_t>(b) * tq + q) * tk + k] != 0;
  }
  bool isFullyMasked(int b, int q) const { return fullyMasked[static_cast<std::size_t>(b) * tq + q] != 0; }
};

// A stage's button text and formula as this pass ran it: the stage table's, except the Scale stage's,
// which follow the trace's scale (scaleChip, scaleFormula).
std::string stageChip(const Trace& t, StageId id);
std::string stageFormula(const Trace& t, StageId id);

// A 2-D view into one stage for one batch item (and one head for per-head stages):
// rows × cols floats, row-major, with the axis names and a label per row and column.
struct Slice2D {
  StageId stage;
  std::optional<WeightId> weight;  // set: a learned matrix (stage, batch and head do not apply)
  int batchIndex = 0;
  int head = -1;  // -1 for stages without a head axis
  int layer = -1;  // the trace's layer of a model (Trace::layer), named in titles; -1: none
  int rows = 0, cols = 0;
  // Points into the trace (valid while the trace is unchanged) or, for a lazy stage, into `owned`,
  // the slice's own copy of its numbers (shared by copies of the slice, so they stay valid).
  const float* data = nullptr;
  std::shared_ptr<const std::vector<float>> owned;
  std::string rowAxis, colAxis;  // "T_q", "T_k", "d_k", "d_model": what labels and titles say
  AxisKind rowKind = AxisKind::Other, colKind = AxisKind::Other;  // axisKind(rowAxis/colAxis): what code asks
  std::vector<std::string> rowLabels, colLabels;
  // (rows) 1 = a query row whose every key is blocked (weights 0, output 0): pictures flag it.
  // Empty unless the rows are T_q.
  std::vector<std::uint8_t> flaggedRows;
  // (rows * cols) 1 = the key is blocked by the mask for this query, or null: none is. Only on the
  // masked scores and the weights (T_q x T_k), where every view draws such a cell the same way:
  // the blocked colour with a cross (blockedCellColor / the export's and the heatmap's cross).
  // Points into the trace's flags (Trace::blocked, valid while the trace is unchanged, like `data`:
  // a copy was 16 MiB of fresh pages per slice at T = 4096, ~100 ms of page faults on the UI thread
  // when the picture came) or into ownBlocked, a slice's own flags (setBlockedCells): a lazy
  // stage's slice, which owns its numbers, owns its flags too.
  const std::uint8_t* blockedCells = nullptr;
  std::shared_ptr<const std::vector<std::uint8_t>> ownBlocked;
  void setBlockedCells(std::vector<std::uint8_t> cells);  // rows * cols flags of the slice's own
  bool isBlockedCell(int r, int c) const {
    return blockedCells && blockedCells[static_cast<std::size_t>(r) * cols + c] != 0;
  }
  float at(int r, int c) const { return data[static_cast<std::size_t>(r) * cols + c]; }
};

bool stageHasHeads(StageId id);
// False for a variant's stage that this trace did not record (stageIsVariant, shape {0}); true for
// every other stage.
bool stageRecorded(const Trace& trace, StageId id);
// Errors name the bad index and the valid range.
Result<Slice2D> sliceStage(const Trace& trace, StageId stage, int batchIndex, int head);
// A learned matrix as a slice: W_* (d_model_in x d_model_out), b_* (1 x d_model_out).
Result<Slice2D> sliceWeight(const Trace& trace, WeightId id);
// Fills s.blockedCells from the trace's mask (masked scores and weights only).
void markBlockedCells(const Trace& trace, Slice2D& s);

// How a person reads one selection — the same words in the window's label, an exported
// picture's title and its file name. Every index is 0-based, as typed (`--head 1` is "head 1").
// The stage is named both ways: its title as the stepper shows it and its CLI name, which the
// file name uses ("Softmax (weights)" ↔ weights_b0_h1.png).
struct SelectionName {
  std::string title;     // "Softmax (weights) · head 1 · batch 0"; grids: "… · all 4 heads · batch 0"
  std::string fileStem;  // "weights_b0_h1"; grids: "weights_b0_all_heads"; learned: "w_q"
};
// Where the numbers come from, in the words every title and file name uses for it: a layer of a
// model (Trace::layer >= 0) is "layer 3" / "layer3"; a layer of its own (random weights, a preset,
// files of one layer: layer -1) has no words, so its titles name the stage, head and batch alone.
SelectionName nameSource(int layer);
// gridHeads > 0: every head of a per-head stage in one grid. layer: Trace::layer, said after the
// stage ("Softmax (weights) · layer 3 · head 1 · batch 0", weights_layer3_b0_h1).
SelectionName nameSelection(StageId stage, int batchIndex, int head, int gridHeads = 0, int layer = -1);
SelectionName nameWeight(WeightId id, int layer = -1);  // "W_q (learned matrix) · layer 3", w_q_layer3
SelectionName nameSlice(const Slice2D& s, int gridHeads = 0);  // either of the above, with s.layer

// Whether the columns of this stage belong to heads: the Q/K/V projections (head i will get
// columns i·d_k … (i+1)·d_k − 1), the split heads, the per-head stages and the merged heads.
// False for the inputs (every head sees every input column through W_q, W_k, W_v) and the
// output (W_o has mixed the heads).
bool headsOwnColumns(StageId stage);
// Why a d_model column has no head, for the stages where headsOwnColumns is false.
const char* noHeadOwnerNote(StageId stage);

// Why a cell of a T_q x T_k stage has the value it must have, in words, or "" when nothing
// forces it: a blocked key ("blocked by the causal mask: key t = 3 > query t = 1"), a query
// with one visible key (its weight is exactly 1), a query with none.
std::string forcedCellReason(const Trace& trace, StageId stage, int batchIndex, int q, int k);

// Mean over heads of the weights: (T_q, T_k) for one batch item — what PyTorch returns with
// average_attn_weights=True.
RowMatrix averagedWeights(const Trace& trace, int batchIndex);

}  // namespace mhascope
