// The window's layout: every panel of panel_list.cpp in its area, inside one full-window host.
#pragma once

#include <functional>

#include "state/ui_context.hpp"

namespace mhascope::app {

// Draws the whole window for this frame (between ImGui::NewFrame and Render); sets
// ctx.view.tab. Returns whether the layout is wide (three columns).
// `modeSwitch` (may be empty) draws first inside the host window; when it returns true it has
// drawn a whole other mode (the Train mode, app/train_lab/) and the columns are skipped.
bool drawLayout(UiContext& ctx, const std::function<bool(UiContext&)>& modeSwitch = {});

}  // namespace mhascope::app
