// The Experiments tab's computing: the folder's tokenizer on the clean and the corrupted text, the answer tokens,
// the check that both texts have the same token count, the memory estimate, then the patching sweep
// (core/experiments/patching.hpp) and, for the logit difference, the direct logit attribution on the clean run
// (attribution.hpp). It runs on a thread of its own (a real model's sweep takes seconds), reports "site k of n"
// through ExperimentJob and stops at the next site when cancelled. It starts only when Run asks
// (ExperimentsState::wanted), and a Run with other inputs replaces a running one.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "model_source/model_source.hpp"  // ModelCaches
#include "shell/jobs.hpp"
#include "state/experiments_state.hpp"

namespace mhascope::app {

struct AppState;

using ExperimentOutcome = ExperimentsState::Outcome;

// The job itself, a plain function (tests call it on their own thread). `wake` is called after every site.
ExperimentOutcome runExperimentJob(const ExperimentInputs& in, std::uint64_t memoryBudgetBytes, int threads,
                                   const std::shared_ptr<ExperimentJob>& job, const std::function<void()>& wake,
                                   const ModelCaches& caches = {});

class ExperimentsCompute {
 public:
  void setResultReady(std::function<void()> wake) { job_.setWake(std::move(wake)); }
  void setCaches(ModelCaches caches) { caches_ = std::move(caches); }
  // Once per frame, in the update step: takes a finished job's outcome, then starts the job Run asked for. Nothing
  // runs before the tab is first drawn (AppState::experiments exists); a model folder closed or changed cancels the
  // running job. forceSync (tests, screenshots): the job runs here.
  void update(AppState& state, bool forceSync);
  bool busy() const { return job_.busy(); }

 private:
  ModelCaches caches_;
  KeyedJob<ExperimentInputs, ExperimentResult, ExperimentJob> job_;  // last: joined before the above go
};

}  // namespace mhascope::app
