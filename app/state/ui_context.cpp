#include "state/ui_context.hpp"

namespace mhascope::app {

std::string configLine(const AppState& state) {
  return configSummary(state.shown.trace, state.shown.traceConfig, state.shown.traceSeedUsed) + state.shown.traceNote;
}

bool traceReady(UiContext& ctx) {
  if (ctx.state.shown.hasTrace()) return true;
  ImGui::TextDisabled(ctx.state.compute.computing ? "computing the first picture…" : "no picture yet: fix the configuration on the left");
  return false;
}

}  // namespace mhascope::app
