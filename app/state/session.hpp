// The last session — configuration and what was on screen — saved at exit next to imgui.ini
// (session.json, written atomically) and restored at the next launch.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "state/app_state.hpp"

namespace mhascope::app {

// The last session — configuration and what was on screen — saved at exit next to imgui.ini
// (session.json, written atomically) and restored at the next launch. Versioned JSON; the
// config part has the preset format (core's parsePresetJson, strict).
inline constexpr int kSessionVersion = 1;
struct SavedSession {
  ModelConfig config;
  std::string presetName;
  StageId stage = StageId::Weights;
  std::string tab;  // the open main tab's title
  int head = 0, batch = 0;
  std::optional<ColormapId> colormap;
  bool sharedScale = true, showNumbers = true;
  float playStagesPerSecond = 1.0f;
};
std::string sessionToJson(const AppState& state, const ViewState& view, const std::string& openTab);
// All or nothing: a file with any error (not JSON, duplicate keys, wrong types, a future
// version, a bad config) gives the reason and nothing is applied.
Result<SavedSession> parseSessionJson(std::string_view text, const std::string& what);

}  // namespace mhascope::app
