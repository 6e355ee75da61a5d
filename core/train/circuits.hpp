// What a trained head computes, read from its weights alone (Elhage et al. 2021, "A Mathematical
// Framework for Transformer Circuits"); attention rollout, which reads a forward's weights instead,
// is train/rollout.hpp. Unlike train/circuit.hpp, which names the induction circuit from the probe
// scores of a run (what the heads DO on sequences), this reads the matrices (what they CAN do).
//
// Row vectors and PyTorch storage (y = x W^T): for head i of a layer, W_q^i = rows i*d_k …
// (i+1)*d_k - 1 of W_q (d_k x d_model), likewise W_k^i and W_v^i (blocks of in_proj_weight), and
// W_o^i = columns i*d_k … of W_o (d_model x d_k). LayerNorm and biases are left out, as in the paper.
//   QK^i = W_q^iT W_k^i  (d_model x d_model): query x_t scores key x_j with x_t QK^i x_jT (unscaled)
//   OV^i = W_v^iT W_o^iT (d_model x d_model): the head writes sum_j A_tj x_j OV^i
// Composition of a later head b with an earlier head a (b's layer > a's):
//   Q = ||OV^a QK^b||_F / (||OV^a||_F ||QK^b||_F)     b's queries read what a wrote
//   K = ||QK^b OV^aT||_F / (||OV^a||_F ||QK^b||_F)    b's keys read what a wrote
//   V = ||OV^a OV^b||_F / (||OV^a||_F ||OV^b||_F)     b's values read what a wrote
// Token space, with the embedding E = emb.weight (V x d_model) and unembedding U = out.weightT
// (d_model x V): E QK^i ET (V x V) and E OV^i U (V x V).
// Copying score: sum of OV's token-space eigenvalues over the sum of their moduli, in [-1, 1];
// 1 when every eigenvalue is positive real (the head raises the logit of the token it attends to).
#pragma once

#include <complex>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "attention/tensor.hpp"
#include "train/params.hpp"
#include "util/result.hpp"

namespace mhascope::train {

struct HeadCircuit {
  int layer = 0, head = 0;
  RowMatrix qk;  // (d_model, d_model)  W_q^iT W_k^i
  RowMatrix ov;  // (d_model, d_model)  W_v^iT W_o^iT
  // (V, V) E QK ET and E OV U; empty when V > kMaxTokenSpaceVocab (the copying score needs neither).
  RowMatrix qkTokens, ovTokens;
  // The nonzero part of E OV U's spectrum: E OV U = (E W_vT)(W_oT U) has the same nonzero eigenvalues
  // as the d_k x d_k matrix (W_oT U)(E W_vT) = W_o^iT U E W_v^iT, so that is what is solved (a V x V
  // solve would add V - d_k zeros that change neither sum).
  std::vector<std::complex<double>> eigenvalues;  // d_k of them
  double copying = 0;  // sum Re(lambda) / sum |lambda|; 0 when every eigenvalue is 0
};

struct Composition {
  int fromLayer = 0, fromHead = 0;  // the earlier head a (writes)
  int toLayer = 0, toHead = 0;      // the later head b (reads)
  double q = 0, k = 0, v = 0;
};

// Token-space matrices are V x V per head: above this V they are skipped (65536² floats is 16 GiB).
inline constexpr int kMaxTokenSpaceVocab = 2048;
// The baseline's sample count and seed: fixed, so every run and every machine prints the same value.
inline constexpr int kBaselineSamples = 200;
inline constexpr std::uint64_t kBaselineSeed = 20211222;

struct Circuits {
  int layers = 0, heads = 0, dModel = 0, dk = 0, vocab = 0;
  std::vector<HeadCircuit> perHead;  // layers * heads, index layer * heads + head
  // Every (earlier head, later head) pair in different layers: from-layer, from-head, to-layer,
  // to-head ascending. Empty for a one-layer model.
  std::vector<Composition> pairs;
  // The mean composition score of random heads of the same shapes (compositionBaseline): a score
  // near it means "no more than chance".
  double baseline = 0;
  bool tokenSpace = false;  // qkTokens / ovTokens filled
  const HeadCircuit& at(int layer, int head) const { return perHead[static_cast<std::size_t>(layer * heads + head)]; }
};

// QK and OV of one head, computed in double and stored as float.
RowMatrix headQK(const GptParams& p, int layer, int head);
RowMatrix headOV(const GptParams& p, int layer, int head);

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

// What the definitions need: W_q, W_k, W_v of every head (in_proj_weight of 3 d_model rows) and
// W_o of d_model columns. A model whose K/V heads are shared by groups of query heads is refused
// with one line for now (its OV and QK pair a query head with another head's keys and values).
Status checkCircuitsInput(const GptParams& p);

// Everything above for every head and pair. Sizes come from p.cfg (validated by whoever made p;
// checkCircuitsInput first). `baseline`: compositionBaseline(d_model, d_k) already computed (it
// costs far more than a small model's circuits and depends on the sizes alone); nullopt computes it.
Circuits computeCircuits(const GptParams& p, std::optional<double> baseline = std::nullopt);

// Composition scores by kind: 'Q', 'K' or 'V'.
double compositionScore(const Composition& c, char kind);
// What a kind of composition means, one sentence ("K-composition: the later head's keys read ...").
const char* compositionMeaning(char kind);
// sum Re(lambda) / sum |lambda| of a head's copying eigenvalues; 0 when every eigenvalue is 0.
double copyingScore(const std::vector<std::complex<double>>& eigenvalues);

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
const Composition* strongestPair(const Circuits& c, char kind);

// The explanations in words beside each view, built from the numbers they explain (tests compare
// the two). "layer 0 head 1"-style names; scores with three decimals.
std::string headName(int layer, int head);
// The composition view of one kind: its strongest pair, its score against the baseline, what the
// kind means; a one-layer model says there are no pairs.
std::string compositionText(const Circuits& c, char kind);
// The copying scores: the highest and the lowest head, and what the score means.
std::string copyingText(const Circuits& c);
// One head's matrices: its copying score, ||QK||_F and ||OV||_F, and how to read the token-space
// pictures.
std::string headCircuitText(const Circuits& c, int layer, int head);

}  // namespace mhascope::train
