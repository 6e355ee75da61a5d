// Where a dropped file goes (see window_drop.hpp).
#include "shell/window_drop.hpp"

#include "state/open_file.hpp"

namespace mhascope::app {

void dropOnWindow(TrainLab& lab, PipelineSession& pipeline, const std::string& path) {
  if (lab.active) return trainDropPath(lab, path);
  AppState& state = pipeline.state;
  ViewState& view = pipeline.view;
  LessonView& lessons = pipeline.lessons;
  if (!beginOpen(state, view, lessons, path)) state.actionError = "dropped file: " + view.openUi.message;
}

}  // namespace mhascope::app
