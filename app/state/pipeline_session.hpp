// The pipeline's side of one window: the document and the result on screen (AppState), what the
// user looks at (ViewState), the lesson tabs' choices (LessonView) and what this frame's clicks asked
// for (Requests). The window (shell/app.cpp) holds one; the in-process tests (tests/app/) build the
// same, so they drive what the window drives.
#pragma once

#include "state/app_state.hpp"
#include "state/lesson_view.hpp"
#include "state/requests.hpp"

namespace mhascope::app {

struct PipelineSession {
  AppState state;
  ViewState view;
  LessonView lessons;  // the lesson tabs' choices, one per window (their results: state.shown.lessons)
  Requests requests;   // filed by this frame's clicks, performed by the next update step
};

}  // namespace mhascope::app
