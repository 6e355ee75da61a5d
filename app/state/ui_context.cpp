#include "state/ui_context.hpp"

namespace mhascope::app {

std::string configLine(const AppState& state) {
  return configSummary(state.trace, state.traceConfig, state.traceSeedUsed) + state.traceNote;
}

bool traceReady(UiContext& ctx) {
  if (ctx.state.hasTrace()) return true;
  ImGui::TextDisabled(ctx.state.computing ? "computing the first picture…" : "no picture yet: fix the configuration on the left");
  return false;
}

}  // namespace mhascope::app
