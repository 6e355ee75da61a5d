// The pipeline's Circuits tab on a model folder's layer: what the pipeline's head computes, read
// from the folder's weights around that head (core/analysis over core/model/circuits_source.hpp) over the document's
// text — its QK and OV, their token-space versions over the text's tokens, its composition with
// every head of the other layers, every head's copying score and the text's attention rollout.
// A real model takes seconds (GPT-2 small's copying scores read the whole vocabulary for 144
// heads), so it runs on a thread of its own, never on the UI thread; the job reports "step k of n"
// and stops at the next step when cancelled. Latest request wins: a changed folder, text, layer or
// head cancels the running job and starts the new one. The previous picture stays on screen until
// the new one is ready, and when the new one fails (the error is said, in red, above it).
// This file is GUI-free (state, the job, the words the panel prints); the panel is
// model_circuits_panel.cpp.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "attention/tensor.hpp"
#include "analysis/circuits.hpp"
#include "model/circuits_source.hpp"
#include "model_source/model_source.hpp"  // ModelCaches
#include "shell/jobs.hpp"

namespace mhascope::app {

struct AppState;
struct ViewState;

// What one picture is computed from. The text stands for its tokens: the folder's tokenizer turns
// one into the other the same way every time (the text goes to it verbatim).
struct ModelCircuitsKey {
  std::string folder;  // the model folder in the pipeline ("" = the pipeline is on no model)
  std::string text;    // the document's text
  int layer = 0, head = 0;
  std::optional<analysis::HeadPair> pair;  // the pair whose virtual head is computed in full (none: nullopt)
  bool operator==(const ModelCircuitsKey& o) const {
    return folder == o.folder && text == o.text && layer == o.layer && head == o.head && pair == o.pair;
  }
  bool operator!=(const ModelCircuitsKey& o) const { return !(*this == o); }
};

// The pipeline's: its model folder and layer (InputFiles::model, ::layer), its head
// (ViewState::head) and the document's text; `pair`: the one the tab's pair picker holds.
ModelCircuitsKey modelCircuitsKey(const AppState& state, const ViewState& view,
                                  std::optional<analysis::HeadPair> pair = std::nullopt);

// A running job's progress and cancel flag: steps done of total, "reading the folder and the text"
// before them.
using ModelCircuitsJob = JobTicket;
inline constexpr const char* kModelCircuitsReading = "reading the folder and the text";

// What the panel draws: the numbers and the labels of their axes.
struct ModelCircuitsResult {
  analysis::OneHeadCircuits circuits;
  std::string folderName;               // "gpt2" (the folder's own name)
  bool rope = false;                    // the model rotates q and k (Llama family): QK is the content part
  std::string familyNote;               // what this family's circuits fold in or leave out (model::circuitsFamilyNote)
  std::vector<std::string> axisLabels;  // one per circuits.tokenIds, spelt as the Model tab spells tokens
  std::vector<std::string> textLabels;  // (T) the text's tokens: the rollout's axes
  int distinctTokens = 0;               // of the text (the token-space axes hold at most maxTokens of them)
};

using ModelCircuitsOutcome = JobOutcome<ModelCircuitsKey, ModelCircuitsResult>;

// The random composition baseline by (d_model, d_k): it depends on the two sizes alone and costs
// seconds at a real model's (about 1.3 s of GPT-2 small's picture), so it is computed once.
using BaselineCache = std::map<std::pair<int, int>, double>;

// The job itself, a plain function (tests call it on their own thread): the folder and the text
// through its tokenizer (model_source/model_text.hpp), then computeModelCircuits, given the
// baseline of the folder's sizes when `baselines` has it.
ModelCircuitsOutcome runModelCircuitsJob(const ModelCircuitsKey& key, std::uint64_t memoryBudgetBytes, int threads,
                                         const std::shared_ptr<ModelCircuitsJob>& job, BaselineCache baselines = {},
                                         const ModelCaches& caches = {});

// The tab's state: the last good picture and what it was made from, the running job, the last error
// (JobSlot; "Compute again" is computeAgain()).
using ModelCircuitsState = JobSlot<ModelCircuitsKey, ModelCircuitsResult>;

// A finished job's outcome applied on the UI thread (JobSlot::apply).
void applyModelCircuitsOutcome(ModelCircuitsState& s, ModelCircuitsOutcome out);

// What the tab says about its work: "ready", "computing: step 3 of 40", "error: …", "cancelled", "none".
std::string modelCircuitsStatus(const ModelCircuitsState& s, const ModelCircuitsKey& want);

// The words the panel prints, built from the numbers they describe.
// "gpt2 · layer 1, head 3"
std::string modelCircuitsSource(const ModelCircuitsResult& r);
// The other words (the conventions, a matrix's explanation, a cell's score) are core's:
// core/analysis/circuit_texts.hpp.

// Picks a head for the pipeline from the Circuits tab (a composition cell, the layer or head
// control), as a click in the Model tab does: the pipeline's layer (reopened when it differs) and
// head, the Model tab's selection; the Circuits tab stays in front.
void selectModelHead(AppState& state, ViewState& view, int layer, int head);

class ModelCircuitsCompute {
 public:
  // Once per frame the tab is open, in the update step: takes a finished outcome (keeping its
  // baseline), then starts a job when `want` differs from what is shown and running; an empty
  // folder (the pipeline is on no model folder) cancels the running job, the picture stays.
  // `caches`: the window's tokenizers and residual streams (either may be null).
  void update(ModelCircuitsState& s, const ModelCircuitsKey& want, std::uint64_t memoryBudgetBytes,
              const ModelCaches& caches = {});
  bool busy() const { return job_.busy(); }
  const BaselineCache& baselines() const { return baselines_; }

 private:
  BaselineCache baselines_;  // of every result taken (UI thread only; each job gets a copy)
  KeyedJob<ModelCircuitsKey, ModelCircuitsResult> job_;
};

// The pipeline tab's model view: its state, its worker (made when the tab is first drawn on a
// model) and what the user picked.
struct ModelCircuitsView {
  ModelCircuitsState state;
  std::unique_ptr<ModelCircuitsCompute> compute;  // made by the update step when the tab is first open
  int matrix = 0;  // 0 QK, 1 OV, 2 E QK Eᵀ, 3 E OV U, 4 P QK Pᵀ
  int kind = 1;    // the composition whose words, export and hover are shown: 0 Q, 1 K, 2 V
  int layerEdit = -1, headEdit = -1;  // the sliders while dragged (-1: show the pipeline's)
  // The pair picker's (its two combos): the virtual head computed in full; nullopt until one is picked.
  std::optional<analysis::HeadPair> pair;
  std::string picked;  // the head last picked by a click on a map ("L0 h1"), for scripted tests
  // The worker runs: the window keeps drawing (its progress, then its result).
  bool busy() const { return compute && compute->busy(); }
};

}  // namespace mhascope::app
