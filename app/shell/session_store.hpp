// Where the session lives (session.json next to imgui.ini) and when it is read and written:
// restored at launch where no launch option says otherwise, saved about once a second while it
// changes and at exit. Not for screenshots, the benchmark or --fresh (pictures of exactly their
// options). The JSON itself is state/session.cpp.
#pragma once

#include <string>

#include "shell/launch_options.hpp"
#include "state/app_state.hpp"
#include "train_lab/lab_state.hpp"

namespace mhascope::app {

class SessionStore {
 public:
  void setEnabled(bool on) { enabled_ = on; }
  // `train` gets the Train mode's mode and form (the mode only when no --view was given).
  void restore(AppState& state, ViewState& view, const LaunchOptions& options, TrainLab* train = nullptr);
  void save(const AppState& state, const ViewState& view, const std::string& openTab,
            const TrainLab* train = nullptr);  // skips identical writes

 private:
  bool enabled_ = false;
  std::string path_;       // empty: not found yet, or a save failed (said once)
  std::string savedJson_;  // what was last written
};

// "preset=… text=… d_model=… h=… seed=… mask=… stage=… tab=…": what the session file keeps.
std::string sessionSummary(const AppState& state, const ViewState& view, const std::string& openTab);

}  // namespace mhascope::app
