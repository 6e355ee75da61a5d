// What the last workspace keeps besides core's Workspace (the Train mode's block), and the
// session.json of earlier versions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "io/workspace.hpp"
#include "state/app_state.hpp"
#include "train_lab/lab_state.hpp"  // TrainForm
#include "io/presets.hpp"

namespace mhascope::app {

// The session.json of earlier versions (configuration and what was on screen, next to imgui.ini):
// read once when no last workspace exists yet (shell/session_store.cpp), as the workspace it
// amounts to (its preset name, config and view; no files, the lessons' defaults). Versioned
// JSON; the config part has the preset format (core's parsePresetJson, strict).
inline constexpr int kSessionVersion = 1;
// All or nothing: a file with any error (not JSON, duplicate keys, wrong types, a future
// version, a bad config) gives the reason and nothing is applied.
Result<Workspace> parseSessionJson(std::string_view text, const std::string& what);

// The Train mode's part of the last workspace ("train"; core keeps it as text, Workspace::train):
// which mode was shown, the task and the setup form's settings. The run itself is not kept.
struct SavedTrain {
  bool active = false;  // the Train mode was shown (else the pipeline)
  TrainForm form;
  friend bool operator==(const SavedTrain&, const SavedTrain&) = default;
};
std::string trainBlockJson(const SavedTrain& train);
// Every key present, of its type, nothing else; a workspace without the block (written before the
// Train mode, or by the commands) gives the defaults. Errors name the key: "<what>: /train/mode …".
Result<SavedTrain> savedTrainOf(const Workspace& ws, const std::string& what);

}  // namespace mhascope::app
