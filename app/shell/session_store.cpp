// Restoring and saving the session at the right times (see session_store.hpp).
#include "shell/session_store.hpp"

#include <cstdio>
#include <filesystem>

#include "io/file_io.hpp"
#include "platform/window.hpp"
#include "state/session.hpp"

namespace mhascope::app {

void SessionStore::restore(AppState& state, ViewState& view, const LaunchOptions& options, TrainLab* train) {
  if (!enabled_) return;
  const std::string dir = configDir();
  if (dir.empty()) return;
  path_ = dir + "/session.json";
  std::error_code ec;
  if (!std::filesystem::exists(path_, ec)) return;  // first launch
  auto text = readFile(path_, 1 << 20);
  Result<SavedSession> saved = text ? parseSessionJson(*text, path_) : Result<SavedSession>(text.error());
  if (!saved) {
    // Ignored as a whole (nothing half-applied); the next save replaces it.
    const std::string msg = "the last session was not restored (" + saved.error().message + "); starting from the defaults";
    std::fprintf(stderr, "mhascope: %s\n", msg.c_str());
    state.actionError = msg;
    return;
  }
  SavedSession& s = saved.value();
  if (!options.presetGiven) {
    state.config = std::move(s.config);
    state.presetName = s.presetName;
    state.configDirty = true;
    view.batch = s.batch;  // clamped by the panels once the trace is there
  }
  if (!options.stageGiven) view.stage = s.stage;
  if (!options.viewGiven && !s.tab.empty()) view.selectTab = s.tab;
  if (!options.headGiven) view.head = s.head;
  view.colormap = s.colormap;
  view.sharedScale = s.sharedScale;
  view.showNumbers = s.showNumbers;
  view.playStagesPerSecond = s.playStagesPerSecond;
  if (train) {
    train->form = s.train.form;
    train->formError = checkForm(train->form);  // explained as when typed
    if (!options.viewGiven) train->active = s.train.active;
  }
  std::printf("mhascope: restored the last session from %s\n", path_.c_str());
}

void SessionStore::save(const AppState& state, const ViewState& view, const std::string& openTab,
                        const TrainLab* train) {
  if (path_.empty()) {
    if (!enabled_) return;
    const std::string dir = configDir();
    if (dir.empty()) return;
    path_ = dir + "/session.json";
  }
  const std::string json =
      sessionToJson(state, view, openTab, train ? SavedTrain{train->active, train->form} : SavedTrain{});
  if (json == savedJson_) return;
  if (auto st = writeFileAtomic(path_, json); !st) {
    std::fprintf(stderr, "mhascope: cannot save the session: %s\n", st.error().message.c_str());
    path_.clear();  // say it once
    return;
  }
  savedJson_ = json;
}

std::string sessionSummary(const AppState& state, const ViewState& view, const std::string& openTab) {
  const ModelConfig& c = state.config;
  return "preset=" + state.presetName + " text=" + c.text + " d_model=" + std::to_string(c.dModel) +
         " h=" + std::to_string(c.heads) + " seed=" + std::to_string(c.seed) + " mask=" + maskName(c.mask) +
         " stage=" + stageInfo(view.stage).name + " tab=" + openTab;
}

}  // namespace mhascope::app
