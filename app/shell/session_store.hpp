// The last workspace: what the window showed when it was last used comes back at launch. It is
// a workspace file (core/io/workspace.hpp) in the XDG state folder,
// $XDG_STATE_HOME/mhascope/last-workspace.json (or ~/.local/state/…), written atomically about
// once a second while it changes and at exit, and restored at launch where no launch option says
// otherwise. An older session.json (next to imgui.ini) is read once when no last workspace
// exists yet, so nothing is lost on the upgrade. Not for screenshots, the benchmark or --fresh
// (pictures of exactly their options), and not read when --workspace names one. A last workspace
// that cannot be restored is renamed to last-workspace.json.bak (never saved over), and a state
// folder that cannot be created is said once in the window: this session will not be kept.
#pragma once

#include <map>
#include <string>

#include "io/workspace.hpp"
#include "shell/launch_options.hpp"
#include "state/pipeline_session.hpp"
#include "train_lab/lab_state.hpp"

namespace mhascope::app {

class SessionStore {
 public:
  void setEnabled(bool on) { enabled_ = on; }
  // `train` gets the Train mode's mode and form ("train" block; the mode only when no --view).
  void restore(PipelineSession& pipeline, const LaunchOptions& options, TrainLab* train = nullptr);
  // Skips identical writes; the input files are hashed again only when their paths change.
  void save(const PipelineSession& pipeline, const TrainLab* train = nullptr);
  // Why this session will not be kept (no state folder, a failed save), once; then "".
  std::string takeNotice();

 private:
  bool locate();  // finds path_; false (with the reason in notice_, said once) when there is none
  std::string keepAside();
  bool restoreLegacySession(PipelineSession& pipeline, const LaunchOptions& options);
  bool enabled_ = false;
  bool off_ = false;       // nothing is saved any more (said once in notice_)
  std::string notice_;
  std::string path_;       // empty: not found yet, or saving is off
  std::string savedJson_;  // what was last written
  std::string recordedFiles_;                        // the paths `records_` were made for
  std::map<std::string, WorkspaceFile> records_;
};

// "preset=… text=… d_model=… h=… seed=… mask=… stage=… tab=…": what the last workspace keeps.
std::string sessionSummary(const AppState& state, const ViewState& view, const std::string& openTab);

}  // namespace mhascope::app
