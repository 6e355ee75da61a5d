// The Experiments tab (experiments_panel.cpp): activation patching and direct logit attribution on a model
// folder, drawn from the tab's last result (state/experiments_state.hpp; never computed here).
#pragma once

#include "state/ui_context.hpp"

namespace mhascope::app {

void drawExperimentsPanel(UiContext& ctx);  // panels/experiments_panel.cpp
inline constexpr const char* kExperimentsTab = "experiments";  // the tab's id

}  // namespace mhascope::app
