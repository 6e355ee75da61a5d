// The Practice mode's state: the chosen exercise, the learner's file and what was last seen of it,
// the check's job slot (its last report kept beside an error), the progress kept across launches,
// and what the view shows (the stage clicked, its head and batch item, the solution revealed).
#pragma once

#include <cstdint>
#include <string>

#include "practice/check.hpp"
#include "practice/progress.hpp"
#include "state/job_slot.hpp"

namespace mhascope::app {

// What a check was made from: a save changes the file's time or size, so it checks again.
struct PracticeKey {
  std::string exercise, file;
  std::int64_t mtimeNs = 0;
  std::int64_t size = -1;
  int again = 0;  // "Check now": a new key for the same file
  bool operator==(const PracticeKey&) const = default;
};

struct PracticeState {
  bool active = false;             // the Practice mode is on screen
  std::string exercise = "mha";
  std::string file;                // the learner's file being watched (absolute), empty: none yet
  std::string fileEdit;            // the path field, applied on Enter / "Watch"
  std::string starterEdit;         // where "Create starter file" writes
  PracticeKey seen;                // the file as last stat'ed (size -1: missing)
  double nextPoll = 0;             // when the update step stats it again
  int again = 0;
  JobSlot<PracticeKey, practice::CheckReport> check;
  std::uint64_t checkedSerial = 0;  // the report whose finishing time is in checkedAt
  std::string checkedAt;            // the local time the shown report came in ("12:03:01")
  practice::Progress progress;
  std::string progressPath;        // empty: not kept (--fresh, or no config folder)
  bool progressLoaded = false;
  std::string message;             // the last action's words (created, watching, saved, why not)
  bool messageIsError = false;
  int shownStage = -1;             // index into the report's stages; -1: the first that differs
  int head = 0, batch = 0;
  bool showSolution = false;
  bool scrollToSolution = false;  // just revealed: the left column scrolls it into view once drawn
  std::string solutionText, solutionFor;  // the reference solution read for solutionFor
};

}  // namespace mhascope::app
