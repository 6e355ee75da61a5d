// Restoring and saving the last workspace at the right times (see session_store.hpp).
#include "shell/session_store.hpp"

#include <cstdio>
#include <filesystem>

#include "io/file_io.hpp"
#include "platform/window.hpp"
#include "state/session.hpp"
#include "state/workspace_state.hpp"
#include "train_lab/lab_state.hpp"

namespace mhascope::app {
namespace {

std::string lastWorkspacePath() {
  const std::string dir = stateDir();
  return dir.empty() ? std::string() : dir + "/last-workspace.json";
}

WorkspaceKeep keepFrom(const LaunchOptions& o) { return {o.presetGiven, o.stageGiven, o.viewGiven, o.headGiven}; }

// The Train mode's mode and setup form (the mode only when no --view was given).
void applySavedTrain(const SavedTrain& saved, TrainLab* train, const LaunchOptions& options) {
  if (!train) return;
  train->form = saved.form;
  train->formError = checkForm(train->form);  // explained as when typed
  if (!options.viewGiven) train->active = saved.active;
}

}  // namespace

void SessionStore::restore(AppState& state, ViewState& view, LessonView& lessons, const LaunchOptions& options,
                           TrainLab* train) {
  if (!enabled_ || !options.workspacePath.empty()) return;  // --workspace: that one, not the last
  path_ = lastWorkspacePath();
  if (path_.empty()) return;
  std::error_code ec;
  if (!std::filesystem::exists(path_, ec)) {
    restoreLegacySession(state, view, options);
    return;
  }
  auto ws = readWorkspaceFile(path_);
  std::vector<std::string> notes;
  Result<InputFiles> files = ws ? locateWorkspaceFiles(*ws, path_, notes) : Result<InputFiles>(ws.error());
  Result<SavedTrain> savedTrain = ws ? savedTrainOf(*ws, path_) : Result<SavedTrain>(ws.error());
  if (files && !savedTrain) files = savedTrain.error();
  if (!files) {
    // Ignored as a whole (nothing half-applied); the next save replaces it.
    const std::string msg = "the last workspace was not restored (" + files.error().message +
                            "); starting from the defaults";
    std::fprintf(stderr, "mhascope: %s\n", msg.c_str());
    state.actionError = msg;
    return;
  }
  for (const auto& n : notes) std::fprintf(stderr, "mhascope: note: %s\n", n.c_str());
  applyWorkspace(*ws, *files, state, view, lessons, keepFrom(options));
  applySavedTrain(*savedTrain, train, options);
  std::printf("mhascope: restored the last workspace from %s\n", path_.c_str());
}

// The session.json of earlier versions (configuration and view, no files or lessons), read once
// when there is no last workspace yet; the next save writes the last workspace.
bool SessionStore::restoreLegacySession(AppState& state, ViewState& view, const LaunchOptions& options) {
  const std::string dir = configDir();
  if (dir.empty()) return false;
  const std::string legacy = dir + "/session.json";
  std::error_code ec;
  if (!std::filesystem::exists(legacy, ec)) return false;
  auto text = readFile(legacy, 1 << 20);
  Result<SavedSession> saved = text ? parseSessionJson(*text, legacy) : Result<SavedSession>(text.error());
  if (!saved) {
    const std::string msg = "the last session was not restored (" + saved.error().message + "); starting from the defaults";
    std::fprintf(stderr, "mhascope: %s\n", msg.c_str());
    state.actionError = msg;
    return false;
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
  std::printf("mhascope: restored the last session from %s (from now on kept in %s)\n", legacy.c_str(), path_.c_str());
  return true;
}

void SessionStore::save(const AppState& state, const ViewState& view, const LessonView& lessons,
                        const TrainLab* train) {
  if (path_.empty()) {
    if (!enabled_) return;
    path_ = lastWorkspacePath();
    if (path_.empty()) return;
  }
  Workspace ws = workspaceFromWindow(state, view, lessons);
  std::string filesKey;
  for (const auto& [flag, p] : ws.files.named()) filesKey += flag + "=" + p + "\n";
  if (filesKey != recordedFiles_) {
    auto records = recordWorkspaceFiles(ws.files, path_);
    records_ = records ? std::move(*records) : std::map<std::string, WorkspaceFile>{};
    if (!records) std::fprintf(stderr, "mhascope: the last workspace keeps no files: %s\n", records.error().message.c_str());
    recordedFiles_ = filesKey;
  }
  if (records_.empty()) ws.files = InputFiles{};
  ws.fileRecords = records_;
  if (train) ws.train = trainBlockJson({train->active, train->form});
  const std::string json = workspaceToJson(ws);
  if (json == savedJson_) return;
  if (auto st = writeWorkspaceFile(path_, ws); !st) {
    std::fprintf(stderr, "mhascope: cannot save the last workspace: %s\n", st.error().message.c_str());
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
