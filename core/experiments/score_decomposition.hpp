// Why a head attends where it does: head i of layer l's pre-softmax score of query position q and key position k,
//   s(q, k) = scale · q_q · k_k          (scale: the layer's own, 1/√d_k unless the family sets another)
// split exactly into a table of query-side terms × key-side terms that sums to it. The stream before layer l at
// each position is a sum of what its writers wrote (experiments/stream_terms.hpp: the token and position
// embeddings, each earlier head through its W_o rows, each earlier output bias and MLP), and every step from that
// stream to q and k is made linear by freezing, at the run's own values for that row, the one number that is not:
//   the input norm    LayerNorm n(v) = (v − mean(v)) / σ ⊙ w with σ = sqrt(var(x) + eps) of the whole row x: the
//                     centring is linear and applied to each term, the norm's bias b is a term of its own;
//                     RMSNorm n(v) = v / rms(x) ⊙ w, rms(x) = sqrt(mean(x²) + eps)
//   the projection    n(v) W_q (head i's d_k columns; W_k: its K/V head's), the projection's bias a term of its own
//   the q/k norm      (Qwen3, Gemma 3, OLMo 2) u / rms(u_x) ⊙ g, rms(u_x) of the row's whole projection as the model
//                     computes it (its head's d_k features, or all h·d_k for a whole-projection norm)
//   RoPE              a rotation by the angles of the fixed position (q's or k's), linear, applied to each term
// so q = Σ_a q_a and k = Σ_b k_b, and cell (a, b) = scale · q_a · k_b. The terms sum to the model's own score up to
// float rounding (the forward computes in float32, the decomposition in double).
//
// With a second key k' (`versus`), the table is that of s(q, k) − s(q, k'): cell (a, b) = scale · q_a · (k_b(k) −
// k_b(k')), the same query terms against the difference of each key term at the two positions — why the query
// attends to k rather than k' (softmax weighs the two by e^{difference}).
//
// Defined for blocks that add their sublayers' outputs to the stream as they are, with per-head W_q and W_k (a
// norm after each sublayer, or latent attention, is refused with the reason), RoPE or learned positions (ALiBi's
// bias is refused: it is no product of a query and a key term). A layer that softcaps its scores is decomposed
// before the softcap (the softcap is not linear); the result says so.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attention/engine.hpp"
#include "experiments/stream_terms.hpp"
#include "model/model_folder.hpp"
#include "util/result.hpp"

namespace mhascope::experiments {

struct ScoreRequest {
  int layer = 0, head = 0;  // the head whose score is split
  std::int64_t query = 0, key = 0;
  std::int64_t versus = -1;  // a second key k' (-1: none, the score itself)
};

// One row or column of the table: a writer of the stream at that position, the input norm's bias, or the
// projection's bias (b_q on the query side, b_k on the key side).
enum class SideKind { Writer, NormBias, ProjectionBias };
struct SideTerm {
  SideKind kind = SideKind::Writer;
  StreamWriter writer;  // SideKind::Writer
};
// "head 0.3", "token embedding", "norm bias", "b_q" / "b_k"
std::string sideTermName(const SideTerm& t, bool querySide);

struct ScoreDecomposition {
  ScoreRequest request;
  int kvHead = 0;                   // the K/V head the query head reads (grouped-query attention)
  std::vector<SideTerm> queryTerms, keyTerms;  // (C_q), (C_k)
  std::vector<double> table;        // (C_q, C_k) row-major: see above
  std::vector<double> queryTotals;  // (C_q) each row's sum: what each query-side term adds against the whole key
  std::vector<double> keyTotals;    // (C_k) each column's sum
  double sum = 0;                   // every cell
  // The forward's own numbers, from the queries and keys its scores read (hooks): s(q, k), s(q, k') and the
  // decomposed value (s(q, k), or s(q, k) − s(q, k')); the attention weights A[q, k] and A[q, k'].
  double modelScore = 0, modelScoreVersus = 0, modelValue = 0;
  double weight = 0, weightVersus = 0;
  double scale = 0;                 // the layer's score scale
  double softcap = 0;               // the layer's score softcap (0: none); the decomposed score is before it
  double normScaleQuery = 0, normScaleKey = 0, normScaleVersus = 0;  // the frozen 1/σ or 1/rms of the input rows
  double streamGap = 0;             // StreamTerms::largestGap: how far the writers' sum is from the stream
  double at(std::size_t a, std::size_t b) const { return table[a * keyTerms.size() + b]; }
};

// Checks the request (layer, head, positions; a key after the query under a causal mask, or hidden by the layer's
// window, or the same as `versus` is an error naming the values), runs one forward with read hooks and splits.
Result<ScoreDecomposition> decomposeScore(const model::ModelFolder& model, const std::vector<int>& tokens,
                                          const ScoreRequest& request, int threads = 1,
                                          std::uint64_t memoryBudgetBytes = kDefaultMemoryBudget);

// The largest terms in words: "head 1.1 attends from «t» (12) to «y» (5) mostly because of what head 0.1 wrote at
// the key (K-composition) and the token embedding at the query (+3.1 of 4.2)", then the largest head term of
// each side summed over the other. `labels` (T): the tokens' pieces (empty: their ids).
std::string describeScore(const ScoreDecomposition& d, const std::vector<std::string>& labels);

// The cells in descending |value|, at most `count`: (query term, key term) index pairs.
std::vector<std::pair<std::size_t, std::size_t>> largestCells(const ScoreDecomposition& d, std::size_t count);

}  // namespace mhascope::experiments
