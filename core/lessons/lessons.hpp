// Lessons: the numbers behind the ten teaching views, computed from the live model and
// trace — never hard-coded. One function per lesson, one file per lesson in core/lessons/ (the
// helpers they share in common.hpp/.cpp); the GUI panels and `mhascope info` only show what these
// return. Pure core: Eigen + std. This header is the umbrella for all of them.
//
//   1 perHeadLoopVsVectorized  split.cpp     one big matrix = h small ones; what a skipped transpose does
//   2 parameterTable           attention/model.hpp: where the parameters go (shared with `info`)
//   3 mixThenSplit             mix.cpp       every input feature feeds output dimension j; the split picks its head
//   4 setScoreCell             roles.cpp     the score-cell editor (the "specialists" preset holds the hand-set cells)
//   5 maskComparison           masks.cpp     mask on / off, causal or key padding
//   6 runPitfall               pitfalls.cpp  the pitfall lab: a wrong pipeline next to the right one, with checks
//   7 costSweep                cost.cpp      parameters, FLOPs and score memory as T, d_model or h moves
//   9 cellBreakdown            cell.cpp      one score cell taken apart, and its row's softmax
//  10 makeQuiz                 quiz.cpp      questions with the live numbers
// (8, the token lines, draws the recorded weights directly.)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attention/engine.hpp"
#include "attention/model.hpp"
#include "util/result.hpp"
#include "attention/trace.hpp"

namespace mhascope {

// ---------------------------------------------------------------------------------------------
// 1. One big matrix = h small ones
// ---------------------------------------------------------------------------------------------

struct StageDifference {
  StageId stage;
  double maxAbsDiff = 0;  // over every element; two -inf (masked) cells count as equal
};

// Where one number of a wrongly split head came from in the projection (B, T, d_model).
struct FeatureSource {
  int token = 0;    // t in 0 .. T-1
  int feature = 0;  // column in 0 .. d_model-1
};

struct LoopVsVectorized {
  int heads = 0, tq = 0, tk = 0, dModel = 0, dk = 0;
  // Per-head loop (slice W_q[:, i*d_k:(i+1)*d_k], attend, collect, concatenate, W_o) against the
  // engine's vectorized forward(): q_heads .. output. Every entry must be ~0 (float rounding).
  std::vector<StageDifference> loopVsVectorized;
  double loopMaxAbsDiff = 0;
  // The same pipeline with view(B, h, T, d_k) in place of view(B, T, h, d_k).transpose(1, 2) on
  // the split (and the matching wrong merge): heads are built from the wrong numbers.
  std::vector<StageDifference> skippedVsCorrect;
  double skippedOutputMaxAbsDiff = 0;
  // Where head i's (row t, column c) of the wrongly split Q came from, batch item 0:
  // skippedSources[(i * T_q + t) * d_k + c]. With the transpose it would be (t, i*d_k + c).
  std::vector<FeatureSource> skippedSources;  // (h, T_q, d_k)
  // How many of those entries come from another token than the row they now sit in.
  int skippedWrongToken = 0;
  FeatureSource skippedSource(int head, int row, int col) const {
    return skippedSources[(static_cast<std::size_t>(head) * tq + row) * dk + col];
  }
};

// Runs forward() and the per-head loop on the same model. The skipped-transpose result equals
// the correct one when h = 1 or T = 1 (the transpose then moves nothing).
Result<LoopVsVectorized> perHeadLoopVsVectorized(const Model& model);

// Why d_model is cut into h heads of d_k: the parameter and FLOP budget of one full-width head
// spent on h patterns, each of rank at most d_k; nothing in the layer forces heads apart (the
// parameters lesson and the quiz show the same words).
const char* headSplitReasonText();
// The Learned tab's note: where head i looks depends only on W_QK^(i) = W_q^(i) W_k^(i)^T, what it
// writes only on W_OV^(i) = W_v^(i) W_o^(i); W_q^(i) M with W_k^(i) M^-T gives the same scores.
// With the live d_model, h, d_k and whether the biases are on.
std::string headCircuitsText(int dModel, int heads, bool hasBias);

// ---------------------------------------------------------------------------------------------
// 2. Where the parameters go
// ---------------------------------------------------------------------------------------------

// ParameterTable and parameterTable() live in attention/model.hpp (the CLI's `info` prints the
// same table).

// ---------------------------------------------------------------------------------------------
// 3. Mix, then split
// ---------------------------------------------------------------------------------------------

struct MixTerm {
  int feature = 0;  // i
  float x = 0;      // x[t, i]
  float w = 0;      // W_q[i, j]
  double product = 0;
};

struct MixThenSplit {
  int batchIndex = 0, token = 0, outputDim = 0;  // b, t, j
  int ownerHead = 0;     // floor(j / d_k): the split hands column j to this head ...
  int columnInHead = 0;  // ... as its column j % d_k
  std::vector<MixTerm> terms;  // d_model terms x[t, i] * W_q[i, j]
  double sumOfTerms = 0;
  float bias = 0;              // b_q[j]
  double total = 0;            // sumOfTerms + bias
  float recorded = 0;          // q_proj[b, t, j] from the trace
  float recordedInHead = 0;    // q_heads[b, ownerHead, t, columnInHead]: the same number
};
// `weights` must be the weights the trace was computed with.
Result<MixThenSplit> mixThenSplit(const Trace& trace, const MhaWeights& weights, int batchIndex, int token,
                                  int outputDim);

// ---------------------------------------------------------------------------------------------
// 4. Specialist heads: the score-cell editor
// ---------------------------------------------------------------------------------------------

// Sets (or replaces) the hand-set raw score of cell (head, query position, key position).
void setScoreCell(ModelConfig& cfg, int head, int query, int key, float score);
// Removes the hand-set cell at these positions, if one names them by position.
void clearScoreCell(ModelConfig& cfg, int head, int query, int key);

// The numerical rank of head `head`'s raw score table (T_q, T_k) of batch item b: singular values
// above 1e-4 of the largest. A q . k table has rank <= d_k; hand-set cells can exceed it.
int scoreTableRank(const Trace& trace, int batchIndex, int head);
// The specialists lesson's note: each shown head's score-table rank against d_k, and why a real
// head (a bilinear form of rank <= d_k) cannot draw a table of higher rank.
std::string scoreRankText(const Trace& trace, int batchIndex);
// Roles trained heads are found to take, for the specialists lesson: previous-token, duplicate-token
// and induction heads, the ways two layers compose (K-, Q-, V-composition), redundancy, and what a
// head that looks at the first token is (a shortcut in small runs; an attention sink in language models).
const char* trainedHeadRolesText();

// ---------------------------------------------------------------------------------------------
// 5. Mask on / off
// ---------------------------------------------------------------------------------------------

enum class MaskLesson { Causal, KeyPadding };

struct MaskComparison {
  MaskLesson kind = MaskLesson::Causal;
  int paddedKeys = 0;  // key padding: the last n keys are ignored
  Trace unmasked;      // no mask at all
  Trace masked;        // only this lesson's mask
  Tensor weightDiff;   // (B, h, T_q, T_k) masked - unmasked weights
  double maxAbsWeightDiff = 0;
  double meanAbsOutputDiff = 0;  // over (B, T_q, d_model)
  double maxAbsOutputDiff = 0;
  int blockedCells = 0;          // per batch item and head: cells the mask blocks
  int fullyMaskedRows = 0;
};
// paddedKeys <= 0 picks max(1, T_k / 3).
Result<MaskComparison> maskComparison(const Model& model, MaskLesson kind, int paddedKeys = 0);
// What the masked picture shows, read from the masked trace (batch item 0): which keys the first
// and the last query see, and whether the last row changed (causal); which key columns are blocked
// and that the padded tokens' query rows still get outputs (key padding).
std::string maskComparisonText(const MaskComparison& r);
// The masks lesson's opening: what a mask does, and each API's convention.
const char* maskLessonIntro();
// What other code gives for a query row with every key blocked (mhascope: weights 0).
const char* fullyMaskedRowElsewhereText();

// ---------------------------------------------------------------------------------------------
// 6. Pitfall lab
// ---------------------------------------------------------------------------------------------

enum class Pitfall {
  ScaleBySqrtDModel,  // / sqrt(d_model) instead of / sqrt(d_k): flatter by sqrt(h)
  NoScaling,          // no division: sharper by sqrt(d_k)
  SumHeads,           // add the head outputs instead of putting them side by side
  SkipOutputProjection,
  MaskAfterSoftmax,   // zero the blocked weights after the softmax: rows no longer sum to 1
  SoftmaxOverQueries, // normalise over T_q (columns) instead of T_k (rows)
  NoMaxSubtraction,   // exp of large logits in float overflows: inf / inf = NaN
};
inline constexpr int kPitfallCount = 7;
const char* pitfallTitle(Pitfall p);
const char* pitfallExplanation(Pitfall p);  // why it goes wrong, our words

struct WeightChecks {
  double maxRowSumError = 0;  // max |sum over T_k - 1| over rows that are not fully masked
  int rowsNotSummingToOne = 0;  // |sum - 1| > 1e-3 (or NaN)
  double meanRowEntropy = 0;  // nats, over rows with finite weights
  std::int64_t nanCount = 0, infCount = 0;
};

struct PitfallResult {
  Pitfall pitfall = Pitfall::NoScaling;
  bool maskAdded = false;  // MaskAfterSoftmax on an unmasked model: a causal mask was added to both
  float logitGain = 1.0f;  // NoMaxSubtraction: scores multiplied by this so the logits are large
  Trace correct;           // the right pipeline (with the mask / large logits above, if added)
  Tensor weights;          // (B, h, T_q, T_k) the pitfall's weights
  Tensor output;           // (B, T_q, d_model) the pitfall's output
  Tensor weightDiff;       // (B, h, T_q, T_k) pitfall - correct (NaN where either is NaN)
  WeightChecks correctChecks, pitfallChecks;
  double maxAbsWeightDiff = 0;  // inf when the mistake turned a finite cell into NaN/inf
  double maxAbsOutputDiff = 0;  // likewise
  std::int64_t outputNanCount = 0, outputInfCount = 0;
  // SumHeads only: sum over heads i of O_i W_o[i*d_k:(i+1)*d_k, :] + b_o — the sum that IS right —
  // against the recorded output (~0).
  double blockSumMaxAbsDiff = 0;
};
Result<PitfallResult> runPitfall(const Model& model, Pitfall pitfall);

WeightChecks checkWeights(const Tensor& weights /*(B,h,T_q,T_k)*/, const std::vector<std::uint8_t>& fullyMasked);

// ---------------------------------------------------------------------------------------------
// 7. Cost counters
// ---------------------------------------------------------------------------------------------

enum class SweepVariable { Tokens, DModel, Heads };
const char* sweepVariableName(SweepVariable v);  // "T", "d_model", "h"

struct CostSizes {
  std::int64_t batch = 1, tq = 1, tk = 1, dModel = 8, heads = 2;
};
CostSizes costSizesOf(const Trace& trace);

struct CostPoint {
  std::int64_t value = 0;  // the swept variable's value
  CostSizes sizes;
  std::int64_t params = 0;        // with biases: 4 d_model^2 + 4 d_model
  double projectionFlops = 0;     // Q, K, V, W_o
  double attentionFlops = 0;      // Q K^T and A V
  double scoreBytes = 0;          // one (B, h, T_q, T_k) float tensor
  double traceBytes = 0;          // every recorded stage
  // B * h * T_q * T_k: how many scores scale, mask, exp and softmax each touch. Unlike the
  // matmul FLOPs this grows with h.
  std::int64_t scoreCount = 0;
};
// Points from `from` to `to` (inclusive, at most `maxPoints`, evenly spaced; for h only the
// divisors of d_model; for d_model only multiples of h). T moves T_q and T_k together.
Result<std::vector<CostPoint>> costSweep(const CostSizes& base, SweepVariable variable, std::int64_t from,
                                         std::int64_t to, int maxPoints = 32);
CostPoint costAt(const CostSizes& sizes);

// Projections cost O(B*T*d_model^2) FLOPs, the attention matmuls (Q K^T, A V) O(B*T^2*d_model).
// Both from countFlops(): with T_q = T_k = T the attention matmuls cost more once T > crossoverTokens
// (= 2 * d_model).
// With a transformer block's 4x MLP (d_model -> 4 d_model -> d_model: 16*B*T*d_model^2 FLOPs) also
// linear in T, the attention matmuls outgrow projections + MLP only once T > 6 * d_model.
struct CostCrossover {
  double crossoverTokens = 0;           // this attention layer alone: 2 * d_model
  double blockCrossoverTokens = 0;      // with the block's 4x MLP counted: 6 * d_model
  double projectionsOverAttention = 0;  // at the given sizes (T_q, T_k as they are)
};
CostCrossover costCrossover(const CostSizes& sizes);
// The Cost lesson's sentence about it, with the live numbers.
std::string costCrossoverText(const CostSizes& sizes);
// The Cost lesson's opening: what grows with what; T^2 FLOPs always, T^2 memory only when the
// score table is stored.
const char* costLessonIntro();

// The active scaling rule in words with its number: "divided by sqrt(d_k) = 2",
// "divided by sqrt(d_model) = 3.464", "not scaled (factor 1)".
std::string scalingRuleText(ScaleKind kind, int dModel, int heads);
// The live size of the scaling: "here d_k = 64, so unscaled logits are sqrt(64) = 8 times larger
// than sqrt(d_k)-scaled ones", plus what the trace's own rule does.
std::string unscaledLogitsText(ScaleKind kind, int dModel, int heads);
// The specialists lesson's note: what a gap of `gap` between two raw scores does to their
// weights under the trace's scaling rule.
std::string scoreGapText(const Trace& trace, double gap);

// ---------------------------------------------------------------------------------------------
// 9. One cell, taken apart
// ---------------------------------------------------------------------------------------------

struct CellBreakdown {
  int batchIndex = 0, head = 0, query = 0, key = 0;
  std::vector<float> q, k;        // (d_k) q_heads[b, h, q, :] and k_heads[b, h, k, :]
  std::vector<double> products;   // (d_k) q_i * k_i
  double dot = 0;                 // sum of the products
  float recordedScore = 0;        // scores[b, h, q, k]
  bool handSet = false;           // recorded score differs from q . k: set by hand (score override)
  float scaleFactor = 1;          // the trace's factor, e.g. 1 / sqrt(d_k)
  double scaled = 0;              // recordedScore * scaleFactor
  float recordedScaled = 0;       // scaled_scores[b, h, q, k]
  bool blocked = false;           // the mask blocks this cell
  // The whole row (query q over all T_k keys), max-subtracted softmax written out:
  std::vector<float> rowLogits;   // masked scores (-inf where blocked)
  double rowMax = 0;
  std::vector<double> rowExp;     // exp(logit - max)
  double rowExpSum = 0;
  std::vector<double> rowSoftmax;  // rowExp / rowExpSum (0 for a fully masked row)
  std::vector<float> rowRecorded;  // weights[b, h, q, :]
  double rowMaxAbsDiff = 0;        // |rowSoftmax - rowRecorded|
};
Result<CellBreakdown> cellBreakdown(const Trace& trace, int batchIndex, int head, int query, int key);
// The cell lesson's opening: a dot product, scaled (what the scaling keeps, and under which
// assumption), then compared with its row by the softmax.
const char* cellLessonIntro();

// ---------------------------------------------------------------------------------------------
// 10. Quiz
// ---------------------------------------------------------------------------------------------

struct QuizQuestion {
  std::string question;
  std::vector<std::string> choices;  // distinct
  int correct = 0;                   // index into choices
  std::string explanation;           // shown after a try
};
// About fifteen questions; the numbers (d_k, shapes, counts, which key a query looks at most)
// come from this trace and these weights. Deterministic for the same trace. Head, query and key
// indices are 0-based. A distractor that would be just as true for this configuration (e.g. "every
// h-th column" when h = 1, a shape equal to the answer up to size-1 axes) is left out, and a
// question that cannot be asked fairly (e.g. a tie for the most-weighted key) is skipped.
std::vector<QuizQuestion> makeQuiz(const Trace& trace, const MhaWeights& weights);

}  // namespace mhascope
