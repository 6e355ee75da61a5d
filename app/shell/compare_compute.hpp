// Side B of the Compare tab computed as side A is: a compute scheduler of its own over B's
// AppState (state/compare_state.hpp) — the same validation, model source, worker thread and
// latest-request-wins — so B never has a second engine path. Nothing runs until B is chosen.
#pragma once

#include <functional>

#include "shell/compute_scheduler.hpp"
#include "state/app_state.hpp"

namespace mhascope::app {

class CompareCompute {
 public:
  // Called on the worker's thread when B's trace is ready (wakes the loop).
  void setResultReady(std::function<void()> wake) { scheduler_.setResultReady(std::move(wake)); }
  void setCaches(ModelCaches caches) { scheduler_.setCaches(std::move(caches)); }
  // Once per frame after A's update: B's slice cache starts its frame, then B's scheduler runs.
  // Big jobs show their first picture at A's stage, batch item and head.
  void update(AppState& a, const ViewState& view, bool forceSync);

 private:
  ComputeScheduler scheduler_;
};

}  // namespace mhascope::app
