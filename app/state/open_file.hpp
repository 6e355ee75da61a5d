// Opening a file in the window (the Open popup, a dropped file, the window's command line): what
// kind it is (model_source/file_kind.hpp), then the change to AppState — files in use, preset, a
// workspace — with what was in use kept in Document::beforeOpen so that a file the compute
// cannot use puts it all back and shows why (nothing half-applied). The files themselves are
// read by the compute scheduler, on the worker unless a test wants the picture now.
#pragma once

#include <string>
#include <vector>

#include "state/app_state.hpp"
#include "state/lesson_view.hpp"

namespace mhascope::app {

// The role a .npy plays (the popup asks): query, key, value, key padding mask, attention mask.
enum class ArrayRole { Query, Key, Value, KeyPaddingMask, AttnMask };
inline constexpr int kArrayRoleCount = 5;
const char* arrayRoleName(ArrayRole r);      // "query"
const char* arrayRoleShape(ArrayRole r);     // "(B, T_q, d_model)"


// Step 1 (path field, a click in the list, a drop): inspect; kinds that need no choice are
// opened at once; a .npy or a checkpoint waits in pendingPath for the role or layer.
// Returns false with view.openUi.message when the file cannot be opened.
bool beginOpen(AppState& state, ViewState& view, LessonView& lessons, const std::string& path);
// Step 2 for a pending .npy / checkpoint: the chosen role or layer.
bool finishOpen(AppState& state, ViewState& view);

// The one place a workspace file (a .json with a top-level "mhascope_workspace" key) is handed
// to the workspace loader.
bool openWorkspaceFile(AppState& state, ViewState& view, LessonView& lessons, const std::string& path,
                       std::string& error);

// Back to text + seed: every file closed (the controls' "Files in use" list).
void closeAllFiles(AppState& state);
// One file of the list closed by its flag ("--weights"); the checkpoint or trained layer
// closes back to text + seed.
void closeFile(AppState& state, const std::string& flag);

// Recent files: loaded from / saved to ui.recentFile (one path a line).
void loadRecent(OpenUi& ui);
void rememberRecent(OpenUi& ui, const std::string& path);

// The popup's view of the disk (ui.entries, ui.listError, ui.recentMissing), for the update step
// while the popup is shown or asked for: listed again when ui.folder changed, else at most every
// kOpenListingSeconds, so a file that appears or goes is seen within that. `now`: seconds.
inline constexpr double kOpenListingSeconds = 1.0;
void refreshOpenFileListing(OpenUi& ui, double now);

}  // namespace mhascope::app
