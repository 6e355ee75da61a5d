#include "state/ui_context.hpp"

namespace mhascope::app {

std::string configLine(const AppState& state) {
  const Trace& t = state.trace;
  const ModelConfig& c = state.traceConfig;
  std::string s = "B=" + std::to_string(t.batch) + "  T_q=" + std::to_string(t.tq);
  if (!t.selfAttention || t.tk != t.tq) s += "  T_k=" + std::to_string(t.tk);
  s += "  d_model=" + std::to_string(t.dModel) + "  h=" + std::to_string(t.heads) + "  d_k=" + std::to_string(t.dk);
  s += std::string("  mask=") + maskName(c.mask);
  if (c.padLastKeys > 0) s += "+pad" + std::to_string(c.padLastKeys);
  s += std::string("  scale=") + scaleName(c.scale) + "  seed=" + std::to_string(c.seed);
  return s;
}

bool traceReady(UiContext& ctx) {
  if (ctx.state.hasTrace()) return true;
  ImGui::TextDisabled(ctx.state.computing ? "computing the first picture…" : "no picture yet: fix the configuration on the left");
  return false;
}

}  // namespace mhascope::app
