// The progress file: round trip, a missing file, malformed ones refused with the file named.
#include "practice/progress.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace mhascope::practice {
namespace {

std::string tempPath(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("mhascope-progress-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

TEST(PracticeProgress, RoundTripAndMissingFile) {
  const std::string path = tempPath("progress.json");
  std::filesystem::remove(path);
  auto empty = loadProgress(path);
  ASSERT_TRUE(empty) << empty.error().message;
  EXPECT_TRUE(empty->completed.empty());
  Progress p;
  p.completed = {"mha", "rope"};
  p.hintsShown["mha"] = 2;
  p.files["mha"] = "/home/me/mha.py";
  ASSERT_TRUE(saveProgress(path, p));
  auto back = loadProgress(path);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, p);
}

TEST(PracticeProgress, MalformedFilesAreRefusedByName) {
  const std::string path = tempPath("bad.json");
  for (const char* text : {"[1, 2]", "{\"version\": 2}", "{\"version\": 1, \"completed\": \"mha\"}",
                           "{\"version\": 1, \"hints\": {\"mha\": -1}}", "{\"version\": 1, \"version\": 1}", "{\"ver"}) {
    write(path, text);
    auto r = loadProgress(path);
    ASSERT_FALSE(r) << text;
    EXPECT_NE(r.error().message.find(path), std::string::npos) << r.error().message;
  }
}

}  // namespace
}  // namespace mhascope::practice
