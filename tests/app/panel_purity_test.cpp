// Panels only draw: no source under app/panels/, app/lessons/ or app/widgets/ calls the engine
// (forward, buildModel) or a lesson's computation (its compute() or the function behind it). They read AppState (the trace, its model and the
// lesson results the compute scheduler made) and edit the view state. Like
// tests/core/purity_test.cpp, a scan of the sources.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

namespace {

namespace fs = std::filesystem;

// The source without // and /* */ comments and without string and character literals, so only
// code is matched.
std::string codeOnly(const std::string& text) {
  static const std::regex comments(R"(//[^\n]*|/\*[\s\S]*?\*/)");
  static const std::regex literals(R"("(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')");
  return std::regex_replace(std::regex_replace(text, comments, " "), literals, "\"\"");
}

TEST(PanelPurity, PanelsAndWidgetsNeverCallTheEngineOrALessonComputation) {
  const std::regex call(
      R"((^|[^\w:.>])(forward|forwardInto|buildModel|perHeadLoopVsVectorized|parameterTable|mixThenSplit|)"
      R"(maskComparison|runPitfall|checkWeights|costSweep|costAt|costSizesOf|cellBreakdown|makeQuiz|)"
      R"(gqaLesson|positionsLesson|windowLesson|kvCacheLesson|startDecode|decodeNext|decode|computeTrace)\s*\()");
  // A lesson's compute(), however it is named (lessons::Masks::compute, L::compute).
  const std::regex lessonCompute(R"((^|[^\w.>])compute\s*\()");
  int files = 0;
  for (const char* folder : {"app/panels", "app/lessons", "app/widgets"}) {
    for (const auto& e : fs::recursive_directory_iterator(fs::path(MHASCOPE_SOURCE_DIR) / folder)) {
      const auto ext = e.path().extension().string();
      if (!e.is_regular_file() || (ext != ".cpp" && ext != ".hpp")) continue;
      std::ifstream in(e.path());
      std::stringstream ss;
      ss << in.rdbuf();
      const std::string code = codeOnly(ss.str());
      std::smatch m;
      EXPECT_FALSE(std::regex_search(code, m, call))
          << e.path() << " calls " << m.str(2) << "(): panels only draw; compute it in the compute scheduler "
          << "(app/shell/compute_scheduler.cpp) and read the result from AppState";
      EXPECT_FALSE(std::regex_search(code, m, lessonCompute))
          << e.path() << " calls a lesson's compute(): the compute scheduler runs it; a tab draws its slot";
      ++files;
    }
  }
  EXPECT_GT(files, 20);
}

// The scan itself finds a call, and ignores the same words in comments and strings.
TEST(PanelPurity, TheScanSeesCallsNotWords) {
  const std::regex call(R"((^|[^\w:.>])(forward|cellBreakdown)\s*\()");
  const std::regex lessonCompute(R"((^|[^\w.>])compute\s*\()");
  EXPECT_TRUE(std::regex_search(codeOnly("auto c = cellBreakdown(t, 0, 0, 0, 0);"), call));
  EXPECT_TRUE(std::regex_search(codeOnly("if (!forward(a, b, c, t)) return;"), call));
  EXPECT_TRUE(std::regex_search(codeOnly("auto r = lessons::Masks::compute(model, c);"), lessonCompute));
  EXPECT_FALSE(std::regex_search(codeOnly("int n = recompute(x); // compute(y)"), lessonCompute));
  EXPECT_FALSE(std::regex_search(codeOnly("// runs forward( here\nint x = 1;"), call));
  EXPECT_FALSE(std::regex_search(codeOnly("Text(\"the forward (pass)\");"), call));
  EXPECT_FALSE(std::regex_search(codeOnly("std::forward<F>(f);"), call));
}

}  // namespace

namespace {

// The state the panels read depends on nothing of the loop that drives it: no source under
// app/state/ includes a header from app/shell/ (the types both need, such as the compute
// status, live in app/state/).
TEST(PanelPurity, StateNeverIncludesTheShell) {
  const std::regex include(R"(#\s*include\s*[<"]shell/)");
  int files = 0;
  for (const auto& e : fs::directory_iterator(fs::path(MHASCOPE_SOURCE_DIR) / "app/state")) {
    const auto ext = e.path().extension().string();
    if (!e.is_regular_file() || (ext != ".cpp" && ext != ".hpp")) continue;
    std::ifstream in(e.path());
    std::stringstream ss;
    ss << in.rdbuf();
    EXPECT_FALSE(std::regex_search(ss.str(), include)) << e.path() << " includes a header from app/shell/";
    ++files;
  }
  EXPECT_GT(files, 5);
}

}  // namespace
