// What the heads compute, read from their weights alone (Elhage et al. 2021, "A Mathematical
// Framework for Transformer Circuits"), from any source of layers (layer_source.hpp: a training
// checkpoint or a Hugging Face model folder). Attention rollout, which reads a forward's weights
// instead, is rollout.hpp; the words beside each view are circuit_texts.hpp.
//
// In the layout every source gives (y = x W): for head i, W_q^i = columns i·d_k … (i+1)·d_k − 1 of
// W_q (d_model x h d_k), likewise W_k^i and W_v^i (of K/V head i / (h / N)), W_o^i = rows i·d_k … of
// W_o (h d_k x d_model). Norm gains folded by the source; centring and biases left out, as in the paper.
//   QK^i = W_q^i W_k^iᵀ (d_model x d_model): query x_t scores key x_j with x_t QK^i x_jᵀ (unscaled)
//   OV^i = W_v^i W_o^i  (d_model x d_model): the head writes sum_j A_tj x_j OV^i
// (for PyTorch's storage y = x Wᵀ these are W_q^iᵀ W_k^i and W_v^iᵀ W_o^iᵀ: the same matrices).
// Composition of a later head b with an earlier head a (b's layer > a's):
//   Q = ||OV^a QK^b||_F / (||OV^a||_F ||QK^b||_F)     b's queries read what a wrote
//   K = ||QK^b OV^aᵀ||_F / (||OV^a||_F ||QK^b||_F)    b's keys read what a wrote
//   V = ||OV^a OV^b||_F / (||OV^a||_F ||OV^b||_F)     b's values read what a wrote
// Token space, with the embedding E (V x d_model) and unembedding U (d_model x V):
// E QK^i Eᵀ (V x V) and E OV^i U (V x V).
// Position space, for a model with a learned position table P (positions x d_model) added to E:
// P QK^i Pᵀ, rows the query's position, columns the key's — the part of the score that position
// alone gives (x_t = e_t + p_t, so x_t QK x_jᵀ = e QK eᵀ + e QK pᵀ + p QK eᵀ + p QK pᵀ; this is the
// last term), the norm handled as for E QK Eᵀ (gain folded into W_q and W_k, centring and the
// per-token scale left out). A previous-token head finds its key here: a bright sub-diagonal
// (query t, key t − 1). Cells above the diagonal are never used under a causal mask.
// Copying score: sum of OV's token-space eigenvalues over the sum of their moduli, in [-1, 1]; 1 when
// every eigenvalue is positive real. That is consistent with copying, not proof of it: a head that always
// raises one fixed token c has E OV U = 1·e_cᵀ, one eigenvalue 1, score 1, and copies nothing. The
// diagonal check beside it (diagonalTopShare) asks the copying question itself: does attending to token t
// raise t's own logit above every other token's?
// Virtual head of a pair (a earlier, b later): the path through both OVs, OV^a OV^b (d_model x d_model) —
// what b moves on when its values read what a wrote. Its copying score is the same ratio over the nonzero
// eigenvalues of E OV^a OV^b U = (E C_a)(D_a C_b)(D_b U) (OV = C D: W_v^i, W_o^i), which are those of the
// d_k x d_k matrix (D_b U E C_a)(D_a C_b): no V x V matrix is formed. Two heads that each lower the tokens
// they attend to (scores near −1) can copy together (near +1): a minus times a minus.
//
// Two computations over one source:
//   computeCircuits      every head and every pair of heads, in double (a trained toy model: a
//                        few heads of d_model 64) — the checkpoint's tables;
//   computeOneHeadCircuits  around ONE chosen head, by low-rank products in float (a real model is too
//                        large for all pairs: GPT-2 small has 144 heads of 768 x 768 QK and OV,
//                        Llama-3-8B 1024 of 4096 x 4096).
#pragma once

#include <complex>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "analysis/layer_source.hpp"
#include "analysis/rollout.hpp"
#include "attention/tensor.hpp"
#include "util/result.hpp"

namespace mhascope::analysis {

struct HeadCircuit {
  int layer = 0, head = 0;
  RowMatrix qk;  // (d_model, d_model)  W_q^i W_k^iᵀ
  RowMatrix ov;  // (d_model, d_model)  W_v^i W_o^i
  // (V, V) E QK Eᵀ and E OV U; empty when V > kMaxTokenSpaceVocab (the copying score needs neither).
  RowMatrix qkTokens, ovTokens;
  // (P, P) P QK Pᵀ over positions 0 … P − 1 (P = Circuits::positions); empty without learned positions.
  RowMatrix qkPositions;
  // The nonzero part of E OV U's spectrum: E OV U = (E W_v)(W_o U) has the same nonzero eigenvalues
  // as the d_k x d_k matrix (W_o U)(E W_v) = W_o^i U E W_v^i, so that is what is solved (a V x V
  // solve would add V - d_k zeros that change neither sum).
  std::vector<std::complex<double>> eigenvalues;  // d_k of them
  double copying = 0;  // sum Re(lambda) / sum |lambda|; 0 when every eigenvalue is 0
  double diagonalTop = -1;  // diagonalTopShare(ovTokens); -1 when the token-space matrices are skipped
};

struct Composition {
  int fromLayer = 0, fromHead = 0;  // the earlier head a (writes)
  int toLayer = 0, toHead = 0;      // the later head b (reads)
  double q = 0, k = 0, v = 0;
  double virtualCopying = 0;  // the copying score of the virtual head OV^a OV^b (copyingScore of its spectrum)
};

// One pair's virtual head in full: its spectrum and, over some tokens, its token-space OV.
struct VirtualHead {
  int fromLayer = 0, fromHead = 0, toLayer = 0, toHead = 0;
  std::vector<std::complex<double>> eigenvalues;  // d_k of them: (D_b U E C_a)(D_a C_b)
  double copying = 0;                             // copyingScore(eigenvalues)
  RowMatrix ovTokens;        // (n, n) E_s OV^a OV^b U_s: rows attended token, columns predicted token
  double diagonalTop = -1;   // diagonalTopShare(ovTokens); -1 when ovTokens is empty
};

// A pair named by its two heads (a earlier, b later).
struct HeadPair {
  int fromLayer = 0, fromHead = 0, toLayer = 0, toHead = 0;
  bool operator==(const HeadPair&) const = default;
};

// Token-space matrices are V x V per head: above this V they are skipped (65536² floats is 16 GiB).
inline constexpr int kMaxTokenSpaceVocab = 2048;
// The cells of every pair's virtual E OV^a OV^b U together above which computeCircuits keeps none (64 MiB).
inline constexpr std::int64_t kMaxVirtualTokenCells = std::int64_t{1} << 24;
// The baseline's sample count and seed: fixed, so every run and every machine prints the same value.
inline constexpr int kBaselineSamples = 200;
inline constexpr std::uint64_t kBaselineSeed = 20211222;

// Every head and every pair (computeCircuits).
struct Circuits {
  int layers = 0, heads = 0, dModel = 0, dk = 0, vocab = 0;
  std::vector<HeadCircuit> perHead;  // layers * heads, index layer * heads + head
  // Every (earlier head, later head) pair in different layers: from-layer, from-head, to-layer,
  // to-head ascending, each with its virtual head's copying. Empty for a one-layer model.
  std::vector<Composition> pairs;
  // Per pair (same order), when tokenSpace: diagonalTopShare of the virtual head's E OV^a OV^b U over the
  // whole vocabulary (the V x V matrix is made and dropped pair by pair); empty otherwise.
  std::vector<double> virtualDiagonalTop;
  // Per pair (same order), E OV^a OV^b U (V, V) itself, kept when tokenSpace and every pair's fits in
  // kMaxVirtualTokenCells cells together (a toy model's vocabulary); empty otherwise.
  std::vector<RowMatrix> virtualOvTokens;
  // The mean composition score of random heads of the same shapes (compositionBaseline): a score
  // near it means "no more than chance".
  double baseline = 0;
  bool tokenSpace = false;  // qkTokens / ovTokens filled
  // Positions qkPositions covers: the learned table's rows, at most kMaxTokenSpaceVocab; 0 without one.
  int positions = 0;
  const HeadCircuit& at(int layer, int head) const { return perHead[static_cast<std::size_t>(layer * heads + head)]; }
  // The pair (a, b) in `pairs`, or nullptr when it is not one (same layer, b before a, out of range).
  const Composition* pair(const HeadPair& p) const;
};

// One head and what touches it (computeOneHeadCircuits).
struct OneHeadCircuits {
  int layers = 0, heads = 0, kvHeads = 0, dModel = 0, dk = 0, vocab = 0;
  int layer = 0, head = 0;  // the chosen head

  RowMatrix qk, ov;  // (d_model, d_model) of the chosen head
  std::vector<int> tokenIds;  // the token-space axes (distinct ids of the text, first occurrence first)
  RowMatrix qkTokens;  // (n, n) E_s QK E_sᵀ: rows query token, columns key token
  RowMatrix ovTokens;  // (n, n) E_s OV U_s: rows attended token, columns predicted token
  double diagonalTop = 0;  // diagonalTopShare(ovTokens): over the text's n distinct tokens
  // (p, p) P_s QK P_sᵀ over positions 0 … p − 1, p = min(text length, maxTokens, the table's rows):
  // rows query position, columns key position; empty without learned positions.
  RowMatrix qkPositions;
  std::vector<std::complex<double>> eigenvalues;  // the chosen head's d_k copying eigenvalues

  std::vector<double> copying;  // layers * heads, index layer * heads + head (whole vocabulary)

  // The chosen head against every head of another layer (a writes, b reads), each with its virtual
  // head's copying over the whole vocabulary:
  std::vector<Composition> reads;   // b = the chosen head, a in layers 0 .. layer-1, ascending
  std::vector<Composition> readBy;  // a = the chosen head, b in layers layer+1 .. L-1, ascending
  // The pair OneHeadOptions::pair named (any two heads, not only the chosen one's), its token-space OV
  // over tokenIds; nullopt when none was named.
  std::optional<VirtualHead> picked;
  double baseline = 0;  // compositionBaseline(d_model, d_k)

  // Attention rollout of the text through every layer and the last layer's mean over heads beside it;
  // empty with the reason in rollout.why when skipped. The weights alone cannot give it: the source's
  // forward fills it (model/circuits_source.hpp).
  Rollout rollout;

  double copyingAt(int l, int h) const { return copying[static_cast<std::size_t>(l * heads + h)]; }
};

// The three scores from the matrices (any heads of one d_model; b later than a).
Composition compose(const RowMatrix& ovA, const RowMatrix& qkB, const RowMatrix& ovB);

// A head's QK or OV by its rank-k factors X = P Q (P: d_model x k, Q: k x d_model) and their Gram
// matrices, which is all the Frobenius norm of a product of two such matrices needs:
//   ||P1 Q1 P2 Q2||_F² = ||P1 M Q2||_F² = tr(Mᵀ (P1ᵀP1) M (Q2 Q2ᵀ)),  M = Q1 P2 (k x k),
// so composition costs d_model·k² instead of d_model³ (a 4096-wide model: 128² against 4096²).
struct LowRank {
  RowMatrixD p, q;          // (d_model, k), (k, d_model)
  RowMatrixD pGram, qGram;  // (k, k) PᵀP and Q Qᵀ
  double norm2 = 0;         // ||P Q||_F² = tr(PᵀP Q Qᵀ)
};
LowRank lowRank(RowMatrixD p, RowMatrixD q);
// ||L M R||_F² from L's Gram LᵀL (k1, k1), M (k1, k2) and R's Gram R Rᵀ (k2, k2): tr(Mᵀ (LᵀL) M (R Rᵀ)),
// never below 0 (rounding).
double factoredNorm2(const RowMatrixD& leftGram, const RowMatrixD& m, const RowMatrixD& rightGram);
// compose() of the factored matrices: the same three scores up to rounding.
Composition composeLowRank(const LowRank& ovA, const LowRank& qkB, const LowRank& ovB);
// A composition score from squared Frobenius norms: ||product||_F / (||x||_F ||y||_F), 0 when
// x or y is zero.
double compositionRatio(double product2, double x2, double y2);
// A virtual head's d_k nonzero eigenvalues from its two small factors: those of (D_b U E C_a)(D_a C_b),
// the cyclic turn of E C_a D_a C_b D_b U (both d_k x d_k).
std::vector<std::complex<double>> virtualSpectrum(const RowMatrixD& dbUECa, const RowMatrixD& daCb);

// The expected composition score of random heads of these shapes: W_q, W_k, W_v (d_k x d_model)
// and W_o (d_model x d_k) with i.i.d. N(0, 1) entries (the scores do not depend on the scale),
// estimated as the mean over `samples` random (a, b) pairs of their Q, K and V scores — the three
// have one distribution, since each is ||X Y||_F / (||X||_F ||Y||_F) for two independent
// rank-d_k products of Gaussian factors. Seeded SplitMix64: the same value everywhere.
// About 1/sqrt(d_model) whatever d_k: for independent rotation-invariant X and Y,
// E||X Y||² = ||X||² ||Y||² / d_model; low ranks sit a little below it (the ratio varies more, and
// the mean of a square root is below the root of the mean: rank 1 gives about 0.8/sqrt(d_model)).
// Computed on the factors (composeLowRank), so a 4096-wide model's baseline takes seconds, not hours;
// the samples are shared out over `threads` (each sample's draws start where a single stream would
// be, and the samples are summed in order: the value does not depend on the thread count).
double compositionBaseline(int dModel, int dk, int samples = kBaselineSamples, std::uint64_t seed = kBaselineSeed,
                           int threads = 1);
// The same, sampled in kBaselineChunks chunks with progress(chunks done, kBaselineChunks) called on the
// calling thread after each; returning false stops it (nullopt). The value does not depend on it.
inline constexpr int kBaselineChunks = 10;
std::optional<double> compositionBaseline(int dModel, int dk, int samples, std::uint64_t seed, int threads,
                                          const std::function<bool(int done, int total)>& progress);

// sum Re(lambda) / sum |lambda| of a head's copying eigenvalues; 0 when every eigenvalue is 0.
double copyingScore(const std::vector<std::complex<double>>& eigenvalues);
// The share of the rows of a square token-space OV matrix (E OV U: rows attended token, columns predicted
// token) whose diagonal cell is strictly above every other cell of the row: the share of tokens whose
// own logit attending to them raises most. 1 for a copier (E OV U = I); 1/V for a head that raises one
// fixed token whatever it attends to; 0 for an empty matrix or a dead head.
double diagonalTopShare(const RowMatrix& ovTokens);

// Every head and pair of `source` in double (the whole embedding is read; token-space matrices only
// up to kMaxTokenSpaceVocab). `baseline`: compositionBaseline(d_model, d_k) already computed (it
// costs far more than a small model's circuits and depends on the sizes alone); nullopt computes it.
Result<Circuits> computeCircuits(const LayerSource& source, std::optional<double> baseline = std::nullopt);

struct OneHeadOptions {
  int layer = 0, head = 0;  // the chosen head (in range: the caller names the limits in its own words)
  int maxTokens = 64;       // token-space axes: at most this many of the text's distinct tokens (>= 1)
  int threads = 1;
  // compositionBaseline(d_model, d_k) when the caller already has it; nullopt computes it.
  std::optional<double> baseline;
  // Called with steps done and their total (oneHeadSteps + laterSteps); returning false cancels:
  // the result is then the error kCircuitsCancelled.
  std::function<bool(int done, int total)> progress;
  int laterSteps = 0;  // the caller's own steps after these (a forward's layers), counted in the total
  // A pair whose virtual head to compute in full (OneHeadCircuits::picked): checked by checkPair first.
  std::optional<HeadPair> pair;
};
inline constexpr const char* kCircuitsCancelled = "cancelled";
// The steps computeOneHeadCircuits reports: the vocabulary's blocks, the layers, the baseline's chunks.
int oneHeadSteps(const SourceShape& shape, const OneHeadOptions& opt);
// Rows of E and U converted at a time (the weights pass holds two such blocks).
inline constexpr std::int64_t kVocabBlock = 4096;

// Around one head, on the text's tokens (ids in [0, V)). Every layer's weights are read once, the
// chosen head's first; nothing of size d_model x d_model is formed but the chosen head's two matrices
// and U·E's (d_model x d_model) product, accumulated over the vocabulary a block of rows at a time,
// and every composition score comes from d_k x d_k products through the low-rank identity. The
// rollout is left empty.
Result<OneHeadCircuits> computeOneHeadCircuits(const LayerSource& source, const std::vector<int>& tokens,
                                         const OneHeadOptions& opt);

// Of a position map P QK Pᵀ (p, p): how many query rows t = 1 … p − 1 score key t − 1 highest among
// the keys 0 … t a causal query sees — p − 1 for a head that finds the previous token by position.
int previousPositionRows(const RowMatrix& positionMap);

// A pair of a model of `layers` x `heads`: "" when a is in an earlier layer than b and both are in range,
// else what is wrong, naming the value and the limit ("layer 2 is outside the model's 2 layers (0 .. 1)").
std::string checkPair(const HeadPair& p, int layers, int heads);
// The pairs of `pairs` by their virtual head, the `n` with the highest V-composition first (ties keep the
// order): the chains of heads the V scores point at.
std::vector<const Composition*> topValuePairs(const std::vector<Composition>& pairs, int n);
// Every pair through the chosen head of a OneHeadCircuits: its reads, then its readers.
std::vector<Composition> pairsThrough(const OneHeadCircuits& c);
// How many of them the views and the command line list.
inline constexpr int kTopVirtualPairs = 3;

// Composition scores by kind: 'Q', 'K' or 'V'.
double compositionScore(const Composition& c, char kind);

// The strongest of one pair's three scores: which side of the later head reads the earlier one.
struct Read {
  const Composition* pair = nullptr;
  char kind = 'K';  // 'Q', 'K', 'V'
  double score = 0;
};
Read strongestRead(const Composition& c);
// Every pair's strongest read, strongest first (ties keep the table's order).
std::vector<Read> readsByStrength(const Circuits& c);
// The pair with the highest score of one kind; nullptr when there are no pairs (ties: the first).
const Composition* strongestPair(const std::vector<Composition>& pairs, char kind);
inline const Composition* strongestPair(const Circuits& c, char kind) { return strongestPair(c.pairs, kind); }

}  // namespace mhascope::analysis
