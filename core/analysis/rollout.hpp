// Attention rollout (Abnar & Zuidema 2020): how much each input token reaches each position after
// every layer, from one sequence's attention weights (an AttentionStack: the Train mode's snapshots,
// a forward of a checkpoint on its probe, or a model folder's forward a layer at a time). Each layer
// mixes tokens with its attention and keeps what each token carried through the residual stream, so
// one step is ½ (A + I), rows normalised, and the steps multiply:
//   Â_l = rownorm(½ (mean over heads of A_l + I)),   rollout_l = Â_l Â_{l-1} … Â_0   (T x T)
// rows: positions (queries) after layer l, columns: input tokens. The mean over heads is the paper's
// choice; the per-head path through two layers shows which earlier head a later head read through.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "attention/tensor.hpp"

namespace mhascope::analysis {

// One sequence's attention of every head: (L, h, T, T), row-major.
struct AttentionStack {
  int layers = 0, heads = 0, seq = 0;
  std::vector<float> weights;
};

// What every Circuits view and the command line show of a rollout: the rollout through every layer
// and the last layer's raw weights beside it, or why there is none.
struct Rollout {
  RowMatrix rolled;   // (T, T) rollout_{L-1}: rows positions, columns input tokens; empty: none
  RowMatrix rawLast;  // (T, T) the last layer's weights, mean over heads
  int layers = 0;     // L, the layers it went through
  int heads = 0;      // h, the heads rawLast is the mean of
  std::string why;    // why there is none ("" when rolled is filled, or nothing was asked)
  bool empty() const { return rolled.size() == 0; }
};

// rollout_l for every layer l (L matrices of T x T); the last one is the model's. A row whose keys
// were all blocked (all-zero weights) keeps only its own token. Empty for an empty stack.
std::vector<RowMatrix> attentionRollout(const AttentionStack& s);
// The last of them with the last layer's mean weights beside it (empty for an empty stack).
Rollout rolloutOf(const AttentionStack& s);

// One layer's step of the recursion, for weights that arrive a layer at a time (a model folder's
// forward): rolled (T x T, the identity before layer 0) ← rownorm(½ (meanA + I)) · rolled, meanA the
// layer's mean over heads (T x T). attentionRollout is this step over a stack's layers.
void rolloutStep(const RowMatrixD& meanA, RowMatrixD& rolled);

// The mean over heads of layer `layer`'s raw weights (T x T): what rollout starts from, shown beside
// it. Empty when the layer is out of range.
RowMatrix meanHeadWeights(const AttentionStack& s, int layer);

// The per-head path through two consecutive layers: head b of layer l+1 reading through head a of
// layer l, each with its residual, Â^x = rownorm(½ (A^x + I)): path = Â^b Â^a (T x T). Row t says
// which input tokens query t of head b reaches through head a — for an induction head b and a
// previous-token head a: the earlier copy of query t's own token.
// Empty when layer + 1 is not a layer or a head index is out of range.
RowMatrix pathRollout(const AttentionStack& s, int layer, int headA, int headB);

// The input tokens query `row` of a rollout matrix draws on most, strongest first, at most `count`
// (ties: the earlier token first): (token index, share).
std::vector<std::pair<int, float>> strongestSources(const RowMatrix& rollout, int row, int count);

// The rollout view's explanation, built from the numbers it explains: for query `row` after the last
// layer, the three input tokens it draws on most (index, label, share) against the raw last layer's
// strongest key, and how the two differ. `labels`: one per token (may be empty: indices only).
std::string rolloutText(const Rollout& r, const std::vector<std::string>& labels, int row);
std::string rolloutText(const std::vector<RowMatrix>& rolled, const RowMatrix& rawLast,
                        const std::vector<std::string>& labels, int row);
// The same from the last rollout alone and the number of layers it went through.
std::string rolloutText(const RowMatrix& rolledLast, int layers, const RowMatrix& rawLast,
                        const std::vector<std::string>& labels, int row);

}  // namespace mhascope::analysis
