// Every layer and head of a model folder on one token sequence, summarised in one call — what
// the window's Model tab shows: each head's role scores (analysis/head_scores.hpp: previous-token,
// prefix matching, the first-token "sink", entropy; and copying, analysis/head_roles.hpp, which
// reads the head's output through the final norm and the unembedding) and a thumbnail of its
// attention, the model's top next tokens per position and the logit lens (predictions.hpp).
//
// One forward pass with keepAttention off: each layer's weights (1, h, T, T) and its heads'
// outputs are summarised while the layer runs (ForwardOptions::onAttention), so L·h·T² floats are
// never held at once; only every layer's residual stream (L × (T, d_model), for the lens) and the
// logits (T, V) are kept.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "attention/engine.hpp"
#include "analysis/head_scores.hpp"
#include "model/forward.hpp"
#include "model/model_folder.hpp"
#include "model/predictions.hpp"
#include "util/result.hpp"

namespace mhascope::model {

// Copying for every head up to this cost: a small model's whole grid. One head of a
// GPT-2-small-sized model (d_model 768, V 50 257) on 64 repeated tokens (31 queries) alone costs
// 2.4·10⁹, and its 144 heads 3.4·10¹¹ — several times the rest of the view — so there copying is
// measured only where the induction rule needs it.
inline constexpr double kCopyingEveryHeadFlops = 2e9;

struct ModelViewOptions {
  // Each head's attention downsampled to at most thumbnail × thumbnail by the heatmaps' rule for
  // probabilities (color/downsample.hpp): each entry is its block's largest weight, so a single
  // strong weight survives at any T.
  int thumbnail = 64;
  int top = 5;  // predictions per position
  std::uint64_t memoryBudgetBytes = kDefaultMemoryBudget;
  int threads = 1;
  // Called with the steps done and their total (the L layers of the forward, then the L layers of
  // the logit lens); returning false cancels: the result is then the error kForwardCancelled.
  std::function<bool(int done, int total)> progress;
  // Copying (analysis/head_roles.hpp) is measured for every head when that costs at most this many
  // floating-point operations (per query, the head's output through W_o^i and the whole
  // unembedding); above it, only where the induction rule needs it (inductionNeedsCopying).
  double copyingEveryHeadFlops = kCopyingEveryHeadFlops;
  // Set: the forward skips the MLPs of layers whose next residual stream an earlier forward of
  // this folder and sequence kept, and keeps its own (ForwardOptions::residuals).
  std::shared_ptr<ResidualCache> residuals;
};

struct HeadView {
  HeadScores scores;
  int thumbRows = 0, thumbCols = 0;
  std::vector<float> thumbnail;  // (thumbRows, thumbCols) row-major, weights in [0, 1] (0 above the diagonal)
};

struct ModelView {
  std::vector<int> ids;              // (T)
  std::vector<std::string> labels;   // (T) the tokens as shown
  int layers = 0, heads = 0, kvHeads = 0;
  std::vector<HeadView> headViews;   // layers × heads, index layer * heads + head
  // Chance level of every role score on these tokens: a head spreading each row evenly over its
  // keys (analysis uniformHeadScores), the same for every head.
  HeadScores uniform;
  // Each head's scores.copying is measured where the induction rule needs it (a head in layer 1
  // or later whose prefix matching passes, analysis/head_roles.hpp inductionNeedsCopying) — or for
  // every head when that is cheap (true here: a small model or few repeats).
  bool copyingEveryHead = false;
  std::vector<std::vector<Candidate>> predictions;  // T × top: what follows each position
  LogitLens lens;                    // layers × T
  // The text of every token id the predictions and the lens name, as `labels` spells the input
  // (filled by nameTokens by whoever holds the tokenizer; an id missing here is shown as "#id").
  std::map<int, std::string> tokenTexts;
  std::string nonFinite;  // ForwardResult::nonFinite: where float32 overflowed (empty: nowhere)
  std::string textNote;   // what was done to a text that is not valid UTF-8 (empty: nothing)
  const HeadView& head(int layer, int head) const {
    return headViews[static_cast<std::size_t>(layer) * static_cast<std::size_t>(heads) + static_cast<std::size_t>(head)];
  }
};

// Bytes computeModelView holds at once for T tokens: the forward's (estimateForwardBytes with
// keepHidden) plus the view's thumbnails, predictions, lens and the lens's block of logits.
double estimateModelViewBytes(const ModelSpec& spec, std::int64_t T, const ModelViewOptions& opt);

// `ids` in [0, V), at most the model's positions; `labels` one per id (empty: the ids as text).
// An estimate above opt.memoryBudgetBytes is refused naming the estimate and the budget before
// anything is allocated.
Result<ModelView> computeModelView(const ModelFolder& model, const std::vector<int>& ids,
                                   const std::vector<std::string>& labels, const ModelViewOptions& opt);

// The sentence every view of `v` shows when float32 overflowed (empty when it did not).
std::string nonFiniteWarning(const ModelView& v);

// Fills v.tokenTexts with text(id) for every id in v.predictions, the lens's top-1s and its final
// top-1s (at most T · (top + L + 1) ids, never the whole vocabulary).
void nameTokens(ModelView& v, const std::function<std::string(int id)>& text);

// The literature's induction probe: n token ids drawn uniformly from [0, vocab) minus `avoid`
// (special and added tokens, which a text rarely holds), then the same n again — 2n ids in all.
// Seeded SplitMix64: the same ids on every machine. On a text a head rarely sees a repeat; here
// every query of the second half has one. Empty when n <= 0 or no id is left to draw from.
std::vector<int> repeatedRandomTokens(int vocab, int n, std::uint64_t seed, const std::vector<int>& avoid = {});

}  // namespace mhascope::model
