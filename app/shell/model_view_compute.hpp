// The Model tab's computing: one whole forward pass of the model folder in use over the probe (the
// document's text through the model's tokenizer, or repeated random tokens), turned into the model
// view (core/model/model_view.hpp: per-head role scores, thumbnails, predictions, the logit lens).
// It runs on a thread of its own, never on the UI thread (a real model takes seconds to minutes);
// the job reports "layer k of L" through ModelViewJob and stops at the next layer when cancelled.
// Latest request wins: inputs changed while a job runs cancel it and start the new one. The
// previous result stays on screen until the new one is ready, and when the new one fails.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "shell/jobs.hpp"
#include "state/app_state.hpp"
#include "state/model_view_state.hpp"

namespace mhascope::app {

// A finished job: the model view, or why there is none.
using ModelViewOutcome = ModelViewState::Outcome;

// The job itself, a plain function (tests call it on their own thread): opens the folder and its
// tokenizer, makes the probe's ids, runs the model view. `wake` is called after every step (the
// window redraws its progress bar).
// `caches` (either may be null): the folder's tokenizer and the residual streams the pipeline's
// forwards of this folder and text left, where this job keeps its own (ModelCaches).
ModelViewOutcome runModelViewJob(const ModelViewInputs& in, std::uint64_t memoryBudgetBytes, int threads,
                                 const std::shared_ptr<ModelViewJob>& job, const std::function<void()>& wake,
                                 const ModelCaches& caches = {});

// Every head's thumbnail in one (L · r, h · c) picture, the weights on one 0 … 1 scale for every row and head.
ModelViewState::Atlas thumbnailAtlas(const model::ModelView& v);

class ModelViewCompute {
 public:
  // Called on the worker's thread after every step and when a result is ready (wakes the loop).
  void setResultReady(std::function<void()> wake) { job_.setWake(std::move(wake)); }
  // The tokenizers and residual streams shared with the pipeline's jobs (the window's one set).
  void setCaches(ModelCaches caches) { caches_ = std::move(caches); }
  // Once per frame, in the update step: takes a finished job's outcome (and makes the grid's
  // atlas of a new result), then starts a job when the tab's wanted inputs differ from what is
  // shown and running. Nothing runs until the tab is first drawn (AppState::modelView exists) and
  // a model folder is in use; while an open is not yet accepted by the pipeline, the running job
  // goes on. forceSync (tests, screenshots): the job runs here, so the frame after shows its result.
  void update(AppState& state, bool forceSync);
  bool busy() const { return job_.busy(); }

 private:
  ModelCaches caches_;
  KeyedJob<ModelViewInputs, model::ModelView, ModelViewJob> job_;  // last: joined before the above go
};

// The outcome applied to the tab's state (the UI thread): a result replaces the shown one (and
// gets its atlas); an error or a cancel keeps it and is remembered so the same inputs are not run
// again by themselves.
void applyModelViewOutcome(ModelViewState& m, ModelViewOutcome out);

}  // namespace mhascope::app
