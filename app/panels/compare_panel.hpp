// The Compare tab (compare_panel.cpp): A beside B and B − A, linked hover, B chosen in the tab.
#pragma once

#include "state/ui_context.hpp"

namespace mhascope::app {

void drawComparePanel(UiContext& ctx);  // panels/compare_panel.cpp
inline constexpr const char* kCompareTab = "compare";  // the tab's id

}  // namespace mhascope::app
