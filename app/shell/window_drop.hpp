// A file dropped on the window goes to the mode on screen: the Train mode takes it when it is
// shown (a .safetensors checkpoint is loaded, anything else is named in its message:
// train_lab/ trainDropPath), the Practice mode when it is shown (the file becomes the one checked
// on every save), else the pipeline opens it like File › Open (state/open_file.hpp; a
// .npy or a checkpoint asks its role or layer in the Open popup). The loop (shell/app.cpp) and
// the input scripts' "drop" both come here.
#pragma once

#include <string>

#include "state/pipeline_session.hpp"
#include "state/practice_state.hpp"
#include "train_lab/lab_state.hpp"

namespace mhascope::app {

void dropOnWindow(TrainLab& lab, PracticeState& practice, PipelineSession& pipeline, const std::string& path);

}  // namespace mhascope::app
