// "Save workspace" and "Save workspace as…" (a popup with a path field, in the export popup's
// style): what the window shows, written as a workspace file (core/io/workspace.hpp). Its own
// function so it can move into the File menu as a whole.
#pragma once

#include "state/ui_context.hpp"

namespace mhascope::app {

void drawWorkspaceActions(UiContext& ctx);

}  // namespace mhascope::app
