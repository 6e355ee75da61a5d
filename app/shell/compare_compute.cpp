// Side B's computing (compare_compute.hpp).
#include "shell/compare_compute.hpp"

#include "state/compare_state.hpp"

namespace mhascope::app {

void CompareCompute::update(AppState& a, const ViewState& view, bool forceSync) {
  if (!a.compare || !a.compare->active()) return;
  CompareState& c = *a.compare;
  c.b.shown.beginFrame();
  c.bView.stage = view.stage;
  c.bView.batch = view.batch;
  c.bView.head = view.head;
  // No open tab: B computes its trace and quick lessons, never a lesson's rerun.
  scheduler_.update(c.b, c.bView, c.bLessons, "", forceSync);
}

}  // namespace mhascope::app
