// The exercises' list: ids unique and found, every starter and solution present and marked with its
// exercise, the cases' sizes valid exactly when they need not raise, and the wrong solutions of the
// mistake library (tests/fixtures/practice/wrong) each naming its exercise, mistake, stage and line.
#include "practice/exercises.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "attention/trace.hpp"
#include "io/presets.hpp"

namespace mhascope::practice {
namespace {

std::string readText(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string marker(const std::string& id) { return "# mhascope exercise: " + id + "\n"; }

TEST(PracticeExercises, IdsUniqueAndFound) {
  std::set<std::string> ids;
  ASSERT_EQ(allExercises().size(), 6u);
  for (const Exercise& e : allExercises()) {
    EXPECT_TRUE(ids.insert(e.id).second) << "duplicate id " << e.id;
    const Exercise* found = findExercise(e.id);
    ASSERT_NE(found, nullptr) << e.id;
    EXPECT_EQ(found, &e);
    EXPECT_NE(exerciseIdsList().find(e.id), std::string::npos) << e.id;
  }
  EXPECT_EQ(findExercise("no_such_exercise"), nullptr);
  EXPECT_EQ(exerciseIdsList(), "mha, mha_single_head, mha_numpy, causal, gqa_kv_cache, rope");
}

TEST(PracticeExercises, TextsAndCallShape) {
  for (const Exercise& e : allExercises()) {
    SCOPED_TRACE(e.id);
    EXPECT_FALSE(e.title.empty());
    EXPECT_FALSE(e.summary.empty());
    EXPECT_NE(e.statement.find("\n\n"), std::string::npos) << "a statement of several paragraphs";
    EXPECT_NE(e.signature.find(e.entry), std::string::npos) << "the signature names the entry point";
    EXPECT_GE(e.hints.size(), 3u);
    EXPECT_LE(e.hints.size(), 5u);
    EXPECT_GE(e.interviewPoints.size(), 4u);
    EXPECT_LE(e.interviewPoints.size(), 6u);
    EXPECT_NE(e.complexity.find("O("), std::string::npos);
    EXPECT_FALSE(e.callArgs.empty());
    EXPECT_EQ(e.initArgs.empty(), e.framework == Framework::Numpy) << "a module is constructed, a function is not";
    bool masks = false, decodes = false;
    for (const PracticeCase& c : e.cases) {
      masks = masks || c.mask != CaseMask::None;
      decodes = decodes || c.decode;
    }
    EXPECT_EQ(masks, !e.maskArg.empty()) << "mask cases exactly when the exercise takes a mask";
    EXPECT_EQ(decodes, !e.stepMethod.empty()) << "decoding cases exactly when there is a step method";
  }
}

TEST(PracticeExercises, AssetsExistAndStartWithTheirMarker) {
  const std::filesystem::path dir = std::filesystem::path(assetsDir()) / "practice";
  for (const Exercise& e : allExercises()) {
    for (const std::string& asset : {e.starterAsset, e.solutionAsset}) {
      SCOPED_TRACE(e.id + ": " + asset);
      const auto path = dir / asset;
      ASSERT_TRUE(std::filesystem::is_regular_file(path)) << path;
      const std::string text = readText(path);
      EXPECT_EQ(text.rfind(marker(e.id), 0), 0u) << "the first line names the exercise";
      EXPECT_NE(text.find(e.entry), std::string::npos) << "it defines the entry point";
    }
    EXPECT_NE(readText(dir / e.starterAsset).find("raise NotImplementedError"), std::string::npos);
    EXPECT_EQ(readText(dir / e.solutionAsset).find("NotImplementedError"), std::string::npos);
  }
}

TEST(PracticeExercises, CasesValidExactlyWhenTheyNeedNotRaise) {
  for (const Exercise& e : allExercises()) {
    ASSERT_FALSE(e.cases.empty()) << e.id;
    EXPECT_FALSE(e.cases.front().mustRaise) << e.id << ": the shown case must have stages to show";
    EXPECT_FALSE(e.cases.front().decode) << e.id;
    std::set<std::string> ids;
    for (const PracticeCase& c : e.cases) {
      SCOPED_TRACE(e.id + "/" + c.id);
      EXPECT_TRUE(ids.insert(c.id).second) << "duplicate case id";
      EXPECT_NE(c.title.find("d_model = " + std::to_string(c.dModel)), std::string::npos) << c.title;
      EXPECT_GT(c.batch, 0);
      EXPECT_GT(c.tq, 0);
      EXPECT_GT(c.dModel, 0);
      EXPECT_GT(c.heads, 0);
      EXPECT_EQ(c.tk != c.tq, c.cross) << "T_k differs from T_q only in cross-attention";
      const int n = c.kvHeads > 0 ? c.kvHeads : c.heads;
      const bool invalid = c.dModel % c.heads != 0 || c.heads % n != 0;
      EXPECT_EQ(c.mustRaise, invalid) << "d_model " << c.dModel << ", h " << c.heads << ", N " << n;
      if (c.rope && !invalid) EXPECT_EQ((c.dModel / c.heads) % 2, 0) << "RoPE pairs the features: even d_k";
      if (c.mask == CaseMask::KeyPadding) EXPECT_GT(c.batch, 1) << "padding differs per batch item";
      if (c.decode) EXPECT_TRUE(c.causal) << "a decode equals the causal forward";
    }
  }
}

std::string caseLine(const Exercise& e, const PracticeCase& c) {
  const char* mask = c.mask == CaseMask::Causal ? "causal" : c.mask == CaseMask::KeyPadding ? "padding" : "none";
  char scale[32];
  std::snprintf(scale, sizeof scale, "%g", static_cast<double>(c.inputScale));
  std::ostringstream s;
  s << e.id << "/" << c.id << " B=" << c.batch << " Tq=" << c.tq << " Tk=" << c.tk << " d=" << c.dModel
    << " h=" << c.heads << " N=" << (c.kvHeads > 0 ? c.kvHeads : c.heads) << " mask=" << mask
    << " cross=" << c.cross << " causal=" << c.causal << " rope=" << c.rope << " scale=" << scale
    << " raises=" << c.mustRaise << " decode=" << c.decode << " seed=" << c.seed << "\n";
  return s.str();
}

// The independent check of the solutions (scripts/check_practice_solutions.py) keeps its own table of
// the cases, as it runs without mhascope: it must be this one.
TEST(PracticeExercises, SolutionsCheckRunsTheseCases) {
  const auto root = std::filesystem::path(MHASCOPE_FIXTURES_DIR).parent_path().parent_path();
  const std::string command = "/usr/bin/python3 '" + (root / "scripts" / "check_practice_solutions.py").string() +
                              "' '" + root.string() + "' --list-cases";
  FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr) << command;
  std::string listed;
  char buffer[4096];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) listed.append(buffer, n);
  ASSERT_EQ(::pclose(pipe), 0) << command;
  std::string expected;
  for (const Exercise& e : allExercises()) {
    for (const PracticeCase& c : e.cases) expected += caseLine(e, c);
  }
  EXPECT_EQ(listed, expected);
}

// Each wrong solution: "# mhascope exercise: <id>", "# mistake: <file name>", "# stage: <stage>" on its
// first lines and exactly one line marked "# the mistake".
TEST(PracticeExercises, WrongSolutionsNameTheirMistake) {
  const std::filesystem::path dir = std::filesystem::path(MHASCOPE_FIXTURES_DIR) / "practice" / "wrong";
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".py") continue;
    ++files;
    SCOPED_TRACE(entry.path().filename().string());
    std::istringstream lines(readText(entry.path()));
    std::string exercise, mistake, stage, line;
    std::getline(lines, exercise);
    std::getline(lines, mistake);
    std::getline(lines, stage);
    const std::string ex = "# mhascope exercise: ", mi = "# mistake: ", st = "# stage: ";
    ASSERT_EQ(exercise.rfind(ex, 0), 0u) << exercise;
    EXPECT_NE(findExercise(exercise.substr(ex.size())), nullptr) << exercise;
    ASSERT_EQ(mistake.rfind(mi, 0), 0u) << mistake;
    EXPECT_EQ(mistake.substr(mi.size()), entry.path().stem().string());
    ASSERT_EQ(stage.rfind(st, 0), 0u) << stage;
    EXPECT_TRUE(stageFromName(stage.substr(st.size())).has_value()) << stage;
    const std::string tag = "# the mistake";
    int marked = 0;
    while (std::getline(lines, line)) {
      if (line.size() >= tag.size() && line.compare(line.size() - tag.size(), tag.size(), tag) == 0) ++marked;
    }
    EXPECT_EQ(marked, 1) << "exactly one line ends with \"# the mistake\"";
  }
  EXPECT_EQ(files, 22);
}

}  // namespace
}  // namespace mhascope::practice
