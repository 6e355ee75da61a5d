// The window's layout: every panel of panel_list.cpp in its area, inside one full-window host.
#pragma once

#include "state/ui_context.hpp"

namespace mhascope::app {

// Draws the whole window for this frame (between ImGui::NewFrame and Render); sets
// ctx.view.openTab. Returns whether the layout is wide (three columns).
bool drawLayout(UiContext& ctx);

}  // namespace mhascope::app
