// The last session — configuration and what was on screen — saved at exit next to imgui.ini
// (session.json, written atomically) and restored at the next launch.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "state/app_state.hpp"
#include "train_lab/lab_state.hpp"  // TrainForm

namespace mhascope::app {

// The last session — configuration and what was on screen — saved at exit next to imgui.ini
// (session.json, written atomically) and restored at the next launch. Versioned JSON; the
// config part has the preset format (core's parsePresetJson, strict).
inline constexpr int kSessionVersion = 1;
// The Train mode's part ("train" in the JSON; absent in files from before it, then the defaults):
// which mode was shown, the task and the setup form's settings. The run itself is not kept.
struct SavedTrain {
  bool active = false;  // the Train mode was shown (else the pipeline)
  TrainForm form;
  friend bool operator==(const SavedTrain&, const SavedTrain&) = default;
};
// The "train" block alone, as the last workspace keeps it (core/io/workspace.hpp Workspace::train).
std::string trainBlockJson(const SavedTrain& train);
Result<SavedTrain> parseTrainBlock(std::string_view json, const std::string& what);

struct SavedSession {
  ModelConfig config;
  std::string presetName;
  StageId stage = StageId::Weights;
  std::string tab;  // the open main tab's title
  int head = 0, batch = 0;
  std::optional<ColormapId> colormap;
  bool sharedScale = true, showNumbers = true;
  float playStagesPerSecond = 1.0f;
  SavedTrain train;
};
std::string sessionToJson(const AppState& state, const ViewState& view, const std::string& openTab,
                          const SavedTrain& train = {});
// All or nothing: a file with any error (not JSON, duplicate keys, wrong types, a future
// version, a bad config) gives the reason and nothing is applied.
Result<SavedSession> parseSessionJson(std::string_view text, const std::string& what);

}  // namespace mhascope::app
