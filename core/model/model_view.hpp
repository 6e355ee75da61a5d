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
// Each head's offset profile (its mean weight t − k positions back) is taken in the same pass.
//
// The induction probe is made here too: a run of random tokens drawn from the vocabulary, a text's
// own tokens or a given set, repeated (repeatedRandomTokens, RepeatedProbe).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "attention/engine.hpp"
#include "attention/score_stats.hpp"
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

// Offsets an offset profile keeps: L·h·kMaxProfileOffsets floats at most, whatever T; offsets
// past it are not kept (the thumbnail still shows a head that looks further back).
inline constexpr int kMaxProfileOffsets = 256;

struct HeadView {
  HeadScores scores;
  int thumbRows = 0, thumbCols = 0;
  std::vector<float> thumbnail;  // (thumbRows, thumbCols) row-major, weights in [0, 1] (0 above the diagonal)
  // (min(T, kMaxProfileOffsets)) offsetProfile: [d] the mean weight d positions back (0: itself).
  std::vector<float> offsets;
  // What the layer's score rules did to this head's scores (attention/score_stats.hpp): measured on a layer with a
  // softcap, a learned sink or q/k norm (visible 0 elsewhere).
  HeadScoreStats scoreStats;
};

// Where the repeated random probe draws its tokens from.
enum class ProbeSource { Vocabulary, TextTokens, GivenTokens };
inline constexpr int kProbeSourceCount = 3;
// "vocabulary", "text", "tokens": the words of the workspace file's "model_view" block.
const char* probeSourceName(ProbeSource s);
std::optional<ProbeSource> probeSourceFromName(const std::string& name);

// The repeated random probe as it was run: a run of `period` random tokens from `pool` distinct
// ids, `copies` times in all, after the BOS when the model has one.
struct RepeatedProbe {
  ProbeSource source = ProbeSource::Vocabulary;
  int pool = 0;            // distinct ids the run was drawn from
  int period = 0;          // p: the run's length
  int copies = 0;          // how many times the run appears (2: the run, then the same run again)
  std::uint64_t seed = 0;
  bool bos = false;        // a BOS first
  std::string cut;         // "" or why period or copies are fewer than asked (the model's positions)
  int length() const { return (bos ? 1 : 0) + period * copies; }
};

// The mask in force in one layer of a model, from its config: the causal past or a sliding window, and
// its positions (RoPE and its base, none, or learned positions added before layer 0).
struct LayerMask {
  std::string tag;    // short, beside the layer's row: "full", "W 4", "W 4 · no pos"
  std::string words;  // "causal, every earlier key; RoPE θ = 10000"
};
LayerMask layerMaskOf(const ModelSpec& s, int layer);

struct ModelView {
  std::vector<int> ids;              // (T)
  std::vector<std::string> labels;   // (T) the tokens as shown
  int layers = 0, heads = 0, kvHeads = 0;
  // A latent-attention model (DeepSeek): what its decoder caches per token and layer beside what MHA, GQA and MQA with
  // its heads would (familyNotes' "cache per token"); "" for every other model.
  std::string latentCache;
  std::vector<LayerMask> layerMasks;  // (layers): each layer's mask and positions
  // (layers): each layer's q/k norm bound on its scores (nq 0: the layer has no q/k norm), and its softcap c (0: none).
  std::vector<QkNormBound> layerBounds;
  std::vector<float> layerSoftcaps;
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
  // A mixture-of-experts model's routing (ForwardResult::routing): per layer, each token's experts and weights; empty
  // for a dense model, k 0 on a dense layer.
  std::vector<LayerRouting> routing;
  std::string nonFinite;  // ForwardResult::nonFinite: where float32 overflowed (empty: nowhere)
  std::string textNote;   // what was done to a text that is not valid UTF-8 (empty: nothing)
  std::optional<RepeatedProbe> probe;  // set when the ids are the repeated random probe (not a text)
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

// Where token t went in mixture layer `layer`: "layer 1: token «cat» → experts 2 (0.61), 0 (0.39)"; "" when the layer
// is dense or has no routing.
std::string routingText(const ModelView& v, int layer, int t);
// How mixture layer `layer` spread the tokens: "layer 1's MLP, a mixture: tokens per expert 0: 5, 1: 6, 2: 7, 3: 6
// (each token to 2 of the 4)"; "" when the layer is dense or has no routing.
std::string routingSummary(const ModelView& v, int layer);
// Every mixture layer's line for token t (routingText), in layer order.
std::vector<std::string> tokenRoutingLines(const ModelView& v, int t);

// What the layer's score rules did to head `head` of layer `layer`, one sentence each (empty when the layer has
// none): the learned sink's share of each row; the softcap's largest score before and after, and how many it bent;
// the largest score against q/k norm's bound.
std::vector<std::string> headScoreRuleLines(const ModelView& v, int layer, int head);

// The sentence every view of `v` shows when float32 overflowed (empty when it did not).
std::string nonFiniteWarning(const ModelView& v);

// Fills v.tokenTexts with text(id) for every id in v.predictions, the lens's top-1s and its final
// top-1s (at most T · (top + L + 1) ids, never the whole vocabulary).
void nameTokens(ModelView& v, const std::function<std::string(int id)>& text);

// Offset profile of one head's causal weights a (T, T): [d] = mean over the queries t >= d of
// a[t][t − d], for d = 0 … offsets − 1 (offsets at most T). d = 0 is the token itself, 1 the
// previous token: a previous-token head peaks at 1, whatever the text.
std::vector<float> offsetProfile(const float* a, int T, int offsets);
// The offsets of a profile on T tokens, strongest first (the first of equals first), at most `n`.
// Only the offsets averaged over at least half the queries count (d <= T / 2): offset T − 1 is one
// weight, the last query's on the first key (the sink), not a habit of looking back.
std::vector<int> strongestOffsets(const std::vector<float>& profile, int T, int n);
// strongestOffsets(profile, T, 1)[0]; -1 for an empty profile.
int strongestOffset(const std::vector<float>& profile, int T);
// The profile in words: "looks back 1 position: 0.91 mean weight at offset 1" ("attends to itself"
// at 0); when no offset holds half the weight (a head spread over keys, or one that finds its keys
// by content), "no offset holds half its weight: the strongest is offset 3, 0.12 mean weight".
std::string offsetSentence(const std::vector<float>& profile, int T);

// The ids a probe may draw from the vocabulary: [0, vocab) minus `avoid` (special and added
// tokens, which a text rarely holds), ascending.
std::vector<int> vocabularyPool(int vocab, const std::vector<int>& avoid = {});
// The distinct ids of `ids` minus `avoid`, ascending: a text's alphabet (its BOS left out).
std::vector<int> distinctTokens(const std::vector<int>& ids, const std::vector<int>& avoid = {});

// The literature's induction probe: a run of `period` ids drawn from `pool` (distinct ids), then
// the same run again until it appears `copies` times — period · copies ids. Drawn without
// replacement, so a run holds no token twice while the pool lasts; a period longer than the pool
// draws it in successive shuffled rounds (each id ⌊p/n⌋ or ⌈p/n⌉ times in the run). Seeded
// SplitMix64 (a partial Fisher–Yates shuffle of the pool as given): the same ids on every machine.
// On a text a head rarely sees a repeat; here every query after the first run has one.
// Empty when period < 1, copies < 1 or the pool is empty.
std::vector<int> repeatedRandomTokens(const std::vector<int>& pool, int period, int copies, std::uint64_t seed);

// What the probe is, as the Model tab's header says it: "T = 64 tokens: 32 random tokens of the
// text's 11, then the same 32 again; a run longer than the 11 repeats them (shuffled rounds) · seed 1".
std::string describeProbe(const RepeatedProbe& p);

}  // namespace mhascope::model
