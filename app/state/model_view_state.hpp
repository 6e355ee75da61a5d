// The Model tab's state: every layer and head of a model folder on one probe (the user's text or
// repeated random tokens), as core/model/model_view.hpp computes it — per-head role scores, a
// thumbnail of each head's attention, the top-5 predictions per position and the logit lens.
// Computing it takes a whole forward pass, so it runs on a worker of its own
// (shell/model_view_compute.*): this struct holds what the panels read — the last good result and
// what it was made from, the running job's progress and cancel flag, the last error — and what the
// user picked (probe, head, the role the grid is coloured by). The previous result stays on screen
// while a new one is computed and when it fails.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analysis/head_scores.hpp"
#include "model/model_view.hpp"  // ProbeSource
#include "state/job_slot.hpp"
#include "state/predictions_view.hpp"

namespace mhascope::app {

// What the model is run on: the document's text through the model's tokenizer, or the
// literature's induction probe — a run of random tokens repeated — so induction heads show even
// when the text has no repeats. The run is drawn from the whole vocabulary, from the text's own
// tokens (a model trained on letters never saw most of a vocabulary) or from the tokens of a
// string the user types (model::ProbeSource).
enum class ModelProbe { Text, RepeatedRandom };
inline constexpr int kMinProbePeriod = 2;    // p: tokens in one run
inline constexpr int kMaxProbePeriod = 256;
inline constexpr int kMinProbeCopies = 2;    // the run appears this many times in all
inline constexpr int kMaxProbeCopies = 16;
inline constexpr std::size_t kMaxProbeTokensBytes = 4096;  // the typed token set

// The per-head score the grid is coloured by (core/analysis/head_scores.hpp).
enum class HeadRole { PreviousToken, Induction, Sink, Entropy };
inline constexpr int kHeadRoleCount = 4;

// What a result is computed from; a new job is started when the wanted one differs from the
// result's (or the running job's).
struct ModelViewInputs {
  std::string folder;                 // the model folder (InputFiles::model)
  std::string text;                   // the document's text, verbatim (ModelProbe::Text)
  ModelProbe probe = ModelProbe::Text;
  // ModelProbe::RepeatedRandom: where the run is drawn from, its period p, how many copies (the
  // probe is BOS + p · copies long), the seed, and the string whose tokens are the set (GivenTokens).
  model::ProbeSource source = model::ProbeSource::Vocabulary;
  int probePeriod = 64;
  int probeCopies = 2;
  std::uint64_t probeSeed = 1;
  std::string probeTokens;
  bool operator==(const ModelViewInputs& o) const {
    return folder == o.folder && text == o.text && probe == o.probe &&
           (probe == ModelProbe::Text ||
            (source == o.source && probePeriod == o.probePeriod && probeCopies == o.probeCopies &&
             probeSeed == o.probeSeed && (source != model::ProbeSource::GivenTokens || probeTokens == o.probeTokens)));
  }
  bool operator!=(const ModelViewInputs& o) const { return !(*this == o); }
};

// A running job's progress (JobTicket: steps done of total — the layers, then the logit lens — and
// the cancel flag the worker checks at every layer), and L once the folder is read.
struct ModelViewJob : JobTicket {
  std::atomic<int> layers{0};
};

// The result (JobSlot: the last good model view and its inputs, the job under way, the last error,
// the inputs that failed or were cancelled — the tab's "Run again" clears them) and what the user
// picked.
struct ModelViewState : JobSlot<ModelViewInputs, model::ModelView, ModelViewJob> {
  // Every head's thumbnail in one picture, laid out as the grid (L rows of h thumbnails), the
  // weights themselves on one 0 … 1 scale, so rows and heads compare: one texture for the whole
  // grid, cut per cell when drawn. Made with each new result.
  struct Atlas {
    std::vector<float> values;  // (L · r, h · c) row-major, in [0, 1]
    int thumbRows = 0, thumbCols = 0;
    int rows() const { return static_cast<int>(values.empty() ? 0 : values.size() / static_cast<std::size_t>(cols)); }
    int cols = 0;
  };
  std::shared_ptr<const Atlas> atlas;
  std::uint64_t atlasSerial = 0;         // the resultSerial `atlas` was made for

  // What the user picked.
  ModelProbe probe = ModelProbe::Text;
  model::ProbeSource probeSource = model::ProbeSource::Vocabulary;
  int probePeriod = 64;
  int probePeriodEdit = 0;               // the period slider while it is dragged (0: not yet shown)
  int probeCopies = 2;
  int probeCopiesEdit = 0;               // the copies slider while it is dragged (0: not yet shown)
  std::uint64_t probeSeed = 1;
  std::string probeTokens = "abcdefghijklmnopqrstuvwxyz";  // GivenTokens: applied when the field is left
  std::string probeTokensEdit;           // the field as typed
  bool probeTokensShown = false;         // probeTokensEdit holds probeTokens (set when first drawn)
  int layer = 0, head = 0;               // the selected head (clicked: opened in the pipeline)
  int hoverLayer = -1, hoverHead = -1;   // the head under the mouse last frame (-1: none)
  HeadRole colourBy = HeadRole::Induction;
  PredictionsView predictions;          // the Predictions tab's picks (state/predictions_view.hpp)

  std::string progressText() const;  // "layer 3 of 12", "logit lens", "opening the folder"; "" when idle
};

struct AppState;
struct ViewState;

// The probe choices in a workspace file's "model_view" block: {"probe": "text" | "random",
// "source": "vocabulary" | "text" | "tokens", "period", "copies", "seed", "tokens"}.
std::string modelViewBlockJson(const ModelViewState& m);
// The block read back strictly: every key, of its type and range, or an error naming the key and
// the value, prefixed by `what` (the file). Only the probe fields of the inputs are set.
Result<ModelViewInputs> parseModelViewBlock(const std::string& block, const std::string& what);
// The parsed choices put in use (the tab's next job runs on them).
void applyModelViewProbe(const ModelViewInputs& in, ModelViewState& m);

// The Model tab's state of a window, made on first use.
ModelViewState& modelViewOf(AppState& state);
// What the tab should show now: the document's model folder and text, the chosen probe. An empty
// folder: no model is open (nothing to compute).
ModelViewInputs wantedModelView(const AppState& state, const ModelViewState& m);

// Role scores of a head, as the grid colours them. Induction with no query to take it over is
// NaN ("n/a", never 0).
const char* headRoleName(HeadRole r);   // "previous-token"
double roleValue(const ::mhascope::HeadScores& s, HeadRole r);
// Entropy is better low (a sharp head); every other role high.
bool roleHighIsStrong(HeadRole r);

// The heads of a result ranked by one role: for a role with a rule (analysis/head_roles.hpp, the
// Train mode's: previous-token, induction, sink as the first-token role) the heads that pass it
// first, then the others, each group strongest first; the entropy, which has no rule, lowest
// first. n/a values are left out.
struct RankedHead {
  int layer = 0, head = 0;
  double value = 0.0;   // roleValue
  bool passes = false;  // the role's rule (false for the entropy)
  std::string verdict;  // the rule's words (roleVerdict: "induction 0.88 copying 0.93", "prefix matching
                        // 0.19, not copying (0.10)"); the entropy's value for the entropy
};
std::vector<RankedHead> headsByRole(const model::ModelView& v, HeadRole r, int n);
// Whether the role has a rule, and the sentence the list states when no head passes it ("No head
// passes the induction rule (prefix matching ≥ 0.50 and copying ≥ 0.50, in layer 1 or later)").
bool roleHasRule(HeadRole r);
std::string noHeadPassesText(HeadRole r);
// The rule in words, for the list's heading ("the rule: prefix matching ≥ 0.50 and copying ≥ 0.50,
// in layer 1 or later"; "the rule: a score ≥ 0.50"; the entropy: "no rule: ranked only").
std::string roleRuleText(HeadRole r);

// The clicked head in the pipeline: the model folder's layer as the pipeline's source on the
// document's text, the view on that head's attention weights, the Heatmap tab in front.
void openHeadInPipeline(AppState& state, ViewState& view, int layer, int head);

}  // namespace mhascope::app
