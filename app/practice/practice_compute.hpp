// The Practice mode's update step: the progress read once, the learner's file stat'ed every 0.3 s
// while the mode is on screen, its check started as a job when the file changed (a save needs no
// button), the finished report collected, the reference solution read when revealed.
#pragma once

#include <functional>

#include "shell/jobs.hpp"
#include "state/practice_state.hpp"

namespace mhascope::app {

class PracticeCompute {
 public:
  // wake: called on the worker's thread when a check ends (wakes the sleeping loop).
  explicit PracticeCompute(std::function<void()> wake) { job_.setWake(std::move(wake)); }
  // `now`: seconds (the window's clock); sync: run the check here (screenshots).
  void update(PracticeState& p, double now, bool sync);
  bool busy() const { return job_.busy(); }

 private:
  KeyedJob<PracticeKey, practice::CheckReport> job_;
};

// The actions of the Practice mode's buttons, performed by the update step (filed requests).
void createStarter(PracticeState& p);           // writes the starter to p.starterEdit, never replacing a file
void watchFile(PracticeState& p, std::string path);  // the learner's file to check on every save
void saveProgress(PracticeState& p);            // after a hint, a mark, a new file

}  // namespace mhascope::app
