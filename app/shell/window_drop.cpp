// Where a dropped file goes (see window_drop.hpp).
#include "shell/window_drop.hpp"

#include "practice/practice_compute.hpp"
#include "state/open_file.hpp"

namespace mhascope::app {

void dropOnWindow(TrainLab& lab, PracticeState& practice, PipelineSession& pipeline, const std::string& path) {
  if (lab.active) return trainDropPath(lab, path);
  if (practice.active) return watchFile(practice, path);
  AppState& state = pipeline.state;
  ViewState& view = pipeline.view;
  LessonView& lessons = pipeline.lessons;
  if (!beginOpen(state, view, lessons, path)) state.actionError = "dropped file: " + view.openUi.message;
}

}  // namespace mhascope::app
