// The Practice mode's drawing: implement attention in your own editor, and see which stage of
// your code goes wrong and why (docs/practice.md). It reads PracticeState and files its actions as
// requests; the update step (practice_compute.hpp) checks the file.
#pragma once

#include "state/practice_state.hpp"
#include "state/ui_context.hpp"

namespace mhascope::app {

void drawPractice(PracticeState& p, UiContext& ctx);

}  // namespace mhascope::app
