// What the learner has done, kept across launches: exercises marked complete and how many hints of
// each were revealed. One small JSON file (the window and `practice` share it), written atomically.
#pragma once

#include <map>
#include <set>
#include <string>

#include "util/result.hpp"

namespace mhascope::practice {

struct Progress {
  std::set<std::string> completed;          // exercise ids
  std::map<std::string, int> hintsShown;    // exercise id -> hints revealed
  std::map<std::string, std::string> files; // exercise id -> the learner's file last checked
  bool operator==(const Progress&) const = default;
};

// <config dir>/practice.json: the window's and the command line's one file.
std::string progressPath(const std::string& configDir);

// A missing file is an empty Progress; a malformed one an error naming the file and the problem.
Result<Progress> loadProgress(const std::string& path);
Status saveProgress(const std::string& path, const Progress& progress);

}  // namespace mhascope::practice
