// Attention rollout (Abnar & Zuidema 2020): how much each input token reaches each position after
// every layer, from one sequence's attention weights (a Snapshot: the Train mode's pictures, or a
// forward of a checkpoint on its probe). Each layer mixes tokens with its attention and keeps what
// each token carried through the residual stream, so one step is ½ (A + I), rows normalised, and
// the steps multiply:
//   Â_l = rownorm(½ (mean over heads of A_l + I)),   rollout_l = Â_l Â_{l-1} … Â_0   (T x T)
// rows: positions (queries) after layer l, columns: input tokens. The mean over heads is the paper's
// choice; the per-head path through two layers shows which earlier head a later head read through.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attention/tensor.hpp"
#include "train/model.hpp"
#include "train/probes.hpp"

namespace mhascope::train {

// rollout_l for every layer l (L matrices of T x T); the last one is the model's. A row whose keys
// were all blocked (all-zero weights) keeps only its own token. Empty for an empty snapshot.
std::vector<RowMatrix> attentionRollout(const Snapshot& s);

// One layer's step of the recursion, for weights that arrive a layer at a time (a model folder's
// forward): rolled (T x T, the identity before layer 0) ← rownorm(½ (meanA + I)) · rolled, meanA the
// layer's mean over heads (T x T). attentionRollout is this step over a snapshot's layers.
void rolloutStep(const RowMatrixD& meanA, RowMatrixD& rolled);

// The mean over heads of layer `layer`'s raw weights (T x T): what rollout starts from, shown beside
// it. Empty when the layer is out of range.
RowMatrix meanHeadWeights(const Snapshot& s, int layer);

// The per-head path through two consecutive layers: head b of layer l+1 reading through head a of
// layer l, each with its residual, Â^x = rownorm(½ (A^x + I)): path = Â^b Â^a (T x T). Row t says
// which input tokens query t of head b reaches through head a — for an induction head b and a
// previous-token head a: the earlier copy of query t's own token.
// Empty when layer + 1 is not a layer or a head index is out of range.
RowMatrix pathRollout(const Snapshot& s, int layer, int headA, int headB);

// The attention of `p` on one sequence (item 0 of `batch`) as a snapshot: a forward under `budget`.
Result<Snapshot> sequenceSnapshot(const GptParams& p, const Batch& batch, std::uint64_t budgetBytes);

// The input tokens query `row` of a rollout matrix draws on most, strongest first, at most `count`
// (ties: the earlier token first): (token index, share).
std::vector<std::pair<int, float>> strongestSources(const RowMatrix& rollout, int row, int count);

// The rollout view's explanation, built from the numbers it explains: for query `row` after the last
// layer, the three input tokens it draws on most (index, label, share) against the raw last layer's
// strongest key, and how the two differ. `labels`: one per token (may be empty: indices only).
std::string rolloutText(const std::vector<RowMatrix>& rolled, const RowMatrix& rawLast,
                        const std::vector<std::string>& labels, int row);
// The same from the last rollout alone and the number of layers it went through.
std::string rolloutText(const RowMatrix& rolledLast, int layers, const RowMatrix& rawLast,
                        const std::vector<std::string>& labels, int row);

}  // namespace mhascope::train
