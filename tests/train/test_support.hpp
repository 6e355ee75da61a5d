// What the training tests share: the fixtures folder they read (tests/fixtures, made by the
// fixtures script) and a lesson's lines joined into one text.
#pragma once

#include <string>
#include <vector>

namespace mhascope::train::fixtures {

inline const std::string kFixtureDir = std::string(MHASCOPE_FIXTURES_DIR) + "/";

inline std::string joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& line : lines) s += line + "\n";
  return s;
}

}  // namespace mhascope::train::fixtures
