// Restoring and saving the last workspace at the right times (see session_store.hpp).
#include "shell/session_store.hpp"

#include <cstdio>
#include <filesystem>
#include <utility>

#include "io/file_io.hpp"
#include "platform/window.hpp"
#include "state/session.hpp"
#include "state/workspace_state.hpp"
#include "train_lab/lab_state.hpp"

namespace mhascope::app {
namespace {

WorkspaceKeep keepFrom(const LaunchOptions& o) { return {o.presetGiven, o.stageGiven, o.viewGiven, o.headGiven}; }

// The Train mode's mode and setup form (the mode only when no --view was given).
void applySavedTrain(const SavedTrain& saved, TrainLab* train, const LaunchOptions& options) {
  if (!train) return;
  train->setup.form = saved.form;
  train->setup.formError = checkForm(train->setup.form);  // explained as when typed
  if (!options.viewGiven) train->active = saved.active;
}

}  // namespace

bool SessionStore::locate() {
  if (!path_.empty()) return true;
  if (!enabled_ || off_) return false;
  std::string why;
  const std::string dir = stateDir(&why);
  if (dir.empty()) {
    off_ = true;  // said once: no folder now, none later
    notice_ = "this session will not be kept: " + why + " (set XDG_STATE_HOME to a folder that can be created)";
    std::fprintf(stderr, "mhascope: %s\n", notice_.c_str());
    return false;
  }
  path_ = dir + "/last-workspace.json";
  return true;
}

std::string SessionStore::takeNotice() { return std::exchange(notice_, std::string()); }

// A last workspace that cannot be restored is the user's work (a newer mhascope's, or one whose
// files changed): renamed aside, never saved over. The first free name of last-workspace.json.bak,
// last-workspace.json.1.bak, … keeps an earlier one too. "" when it cannot be moved.
std::string SessionStore::keepAside() {
  std::error_code ec;
  for (int i = 0; i < 1000; ++i) {
    const std::string bak = path_ + (i == 0 ? std::string() : "." + std::to_string(i)) + ".bak";
    if (std::filesystem::exists(bak, ec) || ec) continue;
    std::filesystem::rename(path_, bak, ec);
    return ec ? std::string() : bak;
  }
  return {};
}

void SessionStore::restore(PipelineSession& pipeline, const LaunchOptions& options, TrainLab* train) {
  AppState& state = pipeline.state;
  ViewState& view = pipeline.view;
  LessonView& lessons = pipeline.lessons;
  if (!locate()) {
    if (std::string n = takeNotice(); !n.empty()) state.actionError = std::move(n);
    return;
  }
  if (!options.workspacePath.empty()) return;  // --workspace: that one, not the last
  std::error_code ec;
  if (!std::filesystem::exists(path_, ec)) {
    restoreLegacySession(pipeline, options);
    return;
  }
  auto ws = readWorkspaceFile(path_);
  std::vector<std::string> notes;
  Result<InputFiles> files = ws ? locateWorkspaceFiles(*ws, path_, notes) : Result<InputFiles>(ws.error());
  Result<SavedTrain> savedTrain = ws ? savedTrainOf(*ws, path_) : Result<SavedTrain>(ws.error());
  if (files && !savedTrain) files = savedTrain.error();
  Status usable = files ? checkWorkspaceModel(*ws, *files, state, path_, keepFrom(options)) : Status(files.error());
  if (!usable) {
    // Ignored as a whole (nothing half-applied), and kept: moved aside before anything is saved.
    std::string msg = "the last workspace was not restored (" + usable.error().message + "); starting from the defaults";
    if (const std::string bak = keepAside(); !bak.empty()) {
      msg += "; the file is kept as " + bak;
    } else {
      msg += "; it could not be moved aside, so this session will not be saved over " + path_;
      path_.clear();
      off_ = true;
    }
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
bool SessionStore::restoreLegacySession(PipelineSession& pipeline, const LaunchOptions& options) {
  AppState& state = pipeline.state;
  ViewState& view = pipeline.view;
  LessonView& lessons = pipeline.lessons;
  const std::string dir = configDir();
  if (dir.empty()) return false;
  const std::string legacy = dir + "/session.json";
  std::error_code ec;
  if (!std::filesystem::exists(legacy, ec)) return false;
  auto text = readFile(legacy, 1 << 20);
  Result<Workspace> saved = text ? parseSessionJson(*text, legacy) : Result<Workspace>(text.error());
  if (!saved) {
    const std::string msg = "the last session was not restored (" + saved.error().message + "); starting from the defaults";
    std::fprintf(stderr, "mhascope: %s\n", msg.c_str());
    state.actionError = msg;
    return false;
  }
  applyWorkspace(*saved, InputFiles{}, state, view, lessons, keepFrom(options));
  std::printf("mhascope: restored the last session from %s (from now on kept in %s)\n", legacy.c_str(), path_.c_str());
  return true;
}

void SessionStore::save(const PipelineSession& pipeline, const TrainLab* train) {
  const AppState& state = pipeline.state;
  const ViewState& view = pipeline.view;
  const LessonView& lessons = pipeline.lessons;
  if (!locate()) return;
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
  if (train) ws.train = trainBlockJson({train->active, train->setup.form});
  const std::string json = workspaceToJson(ws);
  if (json == savedJson_) return;
  if (auto st = writeWorkspaceFile(path_, ws); !st) {
    notice_ = "this session will not be kept: cannot save the last workspace: " + st.error().message;
    std::fprintf(stderr, "mhascope: %s\n", notice_.c_str());
    path_.clear();  // say it once
    off_ = true;
    return;
  }
  savedJson_ = json;
}

std::string sessionSummary(const AppState& state, const ViewState& view, const std::string& openTab) {
  const ModelConfig& c = state.doc.config;
  return "preset=" + state.doc.presetName + " text=" + c.text + " d_model=" + std::to_string(c.dModel) +
         " h=" + std::to_string(c.heads) + " seed=" + std::to_string(c.seed) + " mask=" + maskName(c.mask) +
         " stage=" + stageInfo(view.stage).name + " tab=" + openTab;
}

}  // namespace mhascope::app
