// The practice check end to end, through the real harness and Debian's /usr/bin/python3: every
// exercise's reference solution passes every case; every wrong solution of the mistake library
// (tests/fixtures/practice/wrong/*.py, one mistake each, its header naming the exercise, the mistake
// and the stage, the mistaken line marked "# the mistake") is diagnosed with exactly that mistake,
// at that stage and on that line.
#include "practice/check.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "attention/trace.hpp"
#include "io/presets.hpp"
#include "lessons/mistakes.hpp"

namespace mhascope::practice::check_test {
namespace {

namespace fs = std::filesystem;

std::string readText(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// "# key: value" from the file's first lines.
std::string headerValue(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  std::string line;
  for (int i = 0; i < 6 && std::getline(in, line); ++i) {
    const std::string prefix = "# " + key + ":";
    if (line.rfind(prefix, 0) == 0) {
      std::string v = line.substr(prefix.size());
      v.erase(0, v.find_first_not_of(' '));
      while (!v.empty() && (v.back() == ' ' || v.back() == '\r')) v.pop_back();
      return v;
    }
  }
  return "";
}

int markedLine(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n)
    if (line.find("# the mistake") != std::string::npos) return n;
  return 0;
}

std::vector<std::string> wrongFiles() {
  std::vector<std::string> files;
  const fs::path dir = fs::path(MHASCOPE_FIXTURES_DIR) / "practice" / "wrong";
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".py") files.push_back(e.path().filename().string());
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<std::string> exerciseIds() {
  std::vector<std::string> ids;
  for (const Exercise& e : allExercises()) ids.push_back(e.id);
  return ids;
}

std::string describe(const CheckReport& r) { return reportText(r); }

// Which of the harness's two sources found the stages before the first difference: printed for
// docs/practice.md, which sums them over every solution
// (ctest -R 'Practice/(Reference|Wrong)Solution' -V | grep 'capture sources').
void printCaptureSources(const CheckReport& r) {
  int stages = 0, local = 0, call = 0, either = 0;
  for (const StageCheck& s : r.stages) {
    if (s.status == StageCheck::Status::After || s.status == StageCheck::Status::Differs) continue;
    ++stages;
    local += s.byLocal;
    call += s.byCall;
    either += s.byLocal || s.byCall;
  }
  std::printf("capture sources: %d stages before a difference, locals %d, torch calls %d, either %d\n", stages, local,
              call, either);
}

class ReferenceSolution : public ::testing::TestWithParam<std::string> {};

TEST_P(ReferenceSolution, PassesEveryCase) {
  const Exercise* e = findExercise(GetParam());
  ASSERT_NE(e, nullptr);
  const std::string file = assetsDir() + "/practice/" + e->solutionAsset;
  auto r = checkFile(*e, file);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->allPassed) << describe(*r);
  EXPECT_FALSE(r->diagnosis) << describe(*r);
  for (const StageCheck& s : r->stages) EXPECT_NE(s.status, StageCheck::Status::Differs) << describe(*r);
  // The stages a correct solution keeps in variables are found: the projections, the weights, the output.
  int matched = 0;
  for (const StageCheck& s : r->stages) matched += s.status == StageCheck::Status::Match;
  EXPECT_GE(matched, 5) << describe(*r);
  printCaptureSources(*r);
}

INSTANTIATE_TEST_SUITE_P(Practice, ReferenceSolution, ::testing::ValuesIn(exerciseIds()),
                         [](const auto& info) { return info.param; });

class WrongSolution : public ::testing::TestWithParam<std::string> {};

TEST_P(WrongSolution, IsDiagnosedWithItsMistakeStageAndLine) {
  const fs::path path = fs::path(MHASCOPE_FIXTURES_DIR) / "practice" / "wrong" / GetParam();
  const std::string text = readText(path);
  const std::string exercise = headerValue(text, "mhascope exercise");
  const std::string mistake = headerValue(text, "mistake");
  const std::string stage = headerValue(text, "stage");
  ASSERT_TRUE(mistakeFromKey(mistake)) << GetParam() << ": unknown mistake '" << mistake << "'";
  const Exercise* e = findExercise(exercise);
  ASSERT_NE(e, nullptr) << GetParam() << ": unknown exercise '" << exercise << "'";
  auto r = checkFile(*e, path.string());
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_FALSE(r->allPassed) << describe(*r);
  ASSERT_TRUE(r->diagnosis) << describe(*r);
  EXPECT_EQ(r->diagnosis->mistake, mistake) << describe(*r);
  EXPECT_EQ(stageInfo(r->diagnosis->stage).name, stage) << describe(*r);
  const int line = markedLine(text);
  // Two mistakes show in a test case, not in a tensor of the stages: their line is not known.
  if (line > 0 && mistake != "no_divisibility_check" && mistake != "cache_not_kept") {
    EXPECT_EQ(r->diagnosis->line, line) << describe(*r);
  }
  // Within the time a learner waits for (the harness imports torch: about 1.4 s of it here).
  EXPECT_LT(r->seconds, 20.0);
  printCaptureSources(*r);
}

INSTANTIATE_TEST_SUITE_P(Practice, WrongSolution, ::testing::ValuesIn(wrongFiles()), [](const auto& info) {
  std::string n = info.param.substr(0, info.param.size() - 3);
  for (char& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
});

TEST(PracticeCheck, DeclaredExerciseReadsTheStartersFirstLine) {
  EXPECT_EQ(declaredExercise("# mhascope exercise: mha\nimport torch\n"), "mha");
  EXPECT_EQ(declaredExercise("#!/usr/bin/env python3\n# mhascope exercise:  rope \r\n"), "rope");
  EXPECT_EQ(declaredExercise("import torch\n"), "");
}

}  // namespace
}  // namespace mhascope::practice::check_test
