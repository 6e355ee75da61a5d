// Helpers shared by lab_state.cpp (the per-frame view update) and lab_jobs.cpp (the worker-thread jobs).
#pragma once

#include <string>

#include "train_lab/lab_state.hpp"

namespace mhascope::app {

// Puts a message under the part of the Train mode it is about.
inline void say(TrainLab& lab, const std::string& text, bool error, TrainLab::Said at) {
  lab.message = text;
  lab.messageIsError = error;
  lab.messageAt = at;
}

// The finished job's result, applied on the UI thread (lab_jobs.cpp); updateTrainLab runs it first.
void applyJob(TrainLab& lab);

}  // namespace mhascope::app
