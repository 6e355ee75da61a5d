// The Experiments tab's state: activation patching and direct logit attribution on the model folder in use
// (core/experiments). The user types a clean and a corrupted text, a right and a wrong answer, picks the metric,
// the site and the direction, and clicks Run; the sweep runs on the window's job system
// (shell/experiments_compute.*): this struct holds what the panel reads — the last good result and the inputs it
// was made from, the running job's progress, memory estimate and cancel flag, the last error (the token counts
// that differ, an answer of several tokens, a refused budget) — and the form as typed. The previous result stays
// on screen while a new one runs and when it fails.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "attention/trace.hpp"
#include "experiments/attribution.hpp"
#include "experiments/patching.hpp"
#include "state/job_slot.hpp"
#include "util/result.hpp"

namespace mhascope::app {

// What a result is made from (the Run button's snapshot of the form and the folder in use).
struct ExperimentInputs {
  std::string folder;
  std::string clean, corrupted;       // verbatim texts
  std::string answer, wrong;          // one token each as text (" Mary") or "#id"; wrong: LogitDiff only
  experiments::Metric metric = experiments::Metric::LogitDiff;
  experiments::PatchSite site = experiments::PatchSite::Head;
  experiments::PatchDirection direction = experiments::PatchDirection::Denoise;
  bool operator==(const ExperimentInputs& o) const {
    return folder == o.folder && clean == o.clean && corrupted == o.corrupted && answer == o.answer &&
           (metric != experiments::Metric::LogitDiff || wrong == o.wrong) && metric == o.metric && site == o.site &&
           direction == o.direction;
  }
  bool operator!=(const ExperimentInputs& o) const { return !(*this == o); }
};

// A running sweep: JobTicket's sites done of total and cancel flag, and the memory it was estimated to hold
// (set before anything is allocated; 0 while the folder is read).
struct ExperimentJob : JobTicket {
  std::atomic<double> estimateBytes{0.0};
};

// What one Run gives, plain data made on the job's thread.
struct ExperimentResult {
  std::string modelType;                             // "gpt2"
  int layers = 0, heads = 0, kvHeads = 0;            // L, h, N (K/V heads)
  std::vector<std::string> cleanTokens, corruptedTokens;  // (T) each, as the tokenizer shows them
  std::string answerText, wrongText;                 // the answer tokens as shown
  experiments::Metric metric = experiments::Metric::LogitDiff;
  int answer = 0, wrong = -1;
  double estimateBytes = 0;
  experiments::PatchGrid grid;
  Slice2D patchSlice;                                // (rows, cols) the restored fraction, labelled, owning its numbers
  int topRow = -1, topCol = -1;                      // denoise: the cell that restores most; noise: the least (-1: every cell NaN)
  // Direct logit attribution on the clean run (LogitDiff only); else `dlaNote` says why there is none.
  std::optional<experiments::LogitAttribution> dla;
  Slice2D dlaSlice;                                  // (L, h) each head's term
  std::string dlaNote;
};

struct ExperimentsState : JobSlot<ExperimentInputs, ExperimentResult, ExperimentJob> {
  ExperimentInputs form;                    // the form as typed (form.folder unused: the document's)
  std::optional<ExperimentInputs> wanted;   // what Run asked for (the job that should run or be shown)
  int hoverRow = -1, hoverCol = -1;         // the patching cell under the mouse last frame
  int dlaHoverLayer = -1, dlaHoverHead = -1;

  std::string progressText() const;  // "site 12 of 144 · about 3.2 MiB", "reading the folder"; "" when idle
};

struct AppState;
struct ViewState;

// The Experiments state of a window, made on first use (the update step), with a workspace's form if one gave it.
ExperimentsState& experimentsOf(AppState& state);

// The form in a workspace file's "experiments" block: {"clean", "corrupted", "answer", "wrong": strings,
// "metric": "logit-diff" | "prob", "site": a site's name ("head", "resid", …), "direction": "denoise" | "noise"}.
std::string experimentsBlockJson(const ExperimentsState& m);
// The block read back strictly: every key, of its type and value, or an error naming the key and the value,
// prefixed by `what` (the file). "" gives the default form.
Result<ExperimentInputs> parseExperimentsBlock(const std::string& block, const std::string& what);

// The site's words and grid axes as the tab and the exported title say them.

// A patching cell in words: "L1 H1: restored 0.953, logit difference 2.31 (clean 2.40, corrupted -5.12)".
std::string patchCellText(const ExperimentResult& r, int row, int col);
// A head's direct attribution in words: "head 1.1 adds 3.214 to the logit difference".
std::string dlaCellText(const ExperimentResult& r, int layer, int head);

// The (layer, head) a patching cell points at for the pipeline: a head site's row and column, HeadPosition's row
// l·h + i, a K/V head's first query head, a layer × position site's layer with head 0. {-1, -1}: out of range.
std::pair<int, int> cellLayerHead(const ExperimentResult& r, int row, int col);

// The clicked cell: the model folder's layer and head in the pipeline on the clean text, and the Compare tab's
// side B a copy of it on the corrupted text, the Compare tab in front.
void openExperimentCell(AppState& state, ViewState& view, const ExperimentInputs& in, int layer, int head);

}  // namespace mhascope::app
