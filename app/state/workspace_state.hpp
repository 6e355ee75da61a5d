// The window's side of workspace files (core/io/workspace.hpp): what the window shows ↔ a
// Workspace, opening one all-or-nothing, saving one. The last workspace at launch is
// shell/session_store.cpp; the buttons are widgets/workspace_actions.cpp.
#pragma once

#include <string>

#include "io/workspace.hpp"
#include "state/app_state.hpp"
#include "state/lesson_view.hpp"

namespace mhascope::app {

// `::mhascope::Workspace` spelled out: a unity batch may put a Train-mode file's `using namespace train` (its own
// train::Workspace) before this header.
// Everything the window shows, without file records (recordWorkspaceFiles adds them).
::mhascope::Workspace workspaceFromWindow(const AppState& state, const ViewState& view, const LessonView& lessons);

// Which parts of a workspace to leave alone because a launch option gave them (--preset,
// --stage, --view, --head win over the workspace's).
struct WorkspaceKeep {
  bool config = false, stage = false, tab = false, head = false;
};
// Everything a workspace would put in use, checked before anything of it is applied: its files
// build a model exactly as the compute worker will (a checkpoint layer out of range, weights that
// do not fit, a mask of the wrong size are refused here, not half-applied later), a text model
// passes validateConfig under the window's memory budget, and its head is one of the model's.
// Errors begin "workspace '<path>' was not opened: " and name the value and its range.
Status checkWorkspaceModel(const ::mhascope::Workspace& ws, const InputFiles& located, const AppState& state,
                           const std::string& path, WorkspaceKeep keep = {});
// Applies a parsed workspace whose files were located (locateWorkspaceFiles) at once.
void applyWorkspace(const ::mhascope::Workspace& ws, const InputFiles& located, AppState& state, ViewState& view,
                    LessonView& lessons, WorkspaceKeep keep = {});

// Opens a workspace file: read, checked (format, file hashes) and only then applied, so on any
// error nothing changes and the previous picture stays. The one entry point for --workspace, the
// File menu and a dropped workspace. Notes about files found beside the moved workspace are
// printed and kept in view.workspaceUi.message.
Status openWorkspace(AppState& state, ViewState& view, LessonView& lessons, const std::string& path,
                     WorkspaceKeep keep = {});

// Saves what the window shows to `path` (atomically; never over an input file) and remembers
// the path for "Save workspace".
Status saveWorkspace(const AppState& state, ViewState& view, const LessonView& lessons, const std::string& path);
// The same, catching what it throws, with "Saved <path>" or the error in view.workspaceUi.message
// (Save workspace files it; the update step performs it).
void saveWorkspaceAndSay(const AppState& state, ViewState& view, const LessonView& lessons, const std::string& path);

}  // namespace mhascope::app
