// Architecture checks: core/ knows nothing of the GUI (no ImGui, GLFW or GL includes), only
// core/export/ (the mhascope_export target) uses cairo, the modules include only the modules below
// them (core/model and core/analysis nothing of core/train), one translation unit instantiates Eigen's
// decompositions, and the build never uses fast-math (it would disable the NaN/Inf guards).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace {

namespace fs = std::filesystem;

TEST(Purity, CoreIncludesNoGuiHeaders) {
  const std::regex forbidden(R"(#\s*include\s*[<"](imgui|GLFW/|GL/|backends/|glad|epoxy)[^>"]*[>"])");
  int files = 0;
  for (const auto& e : fs::recursive_directory_iterator(fs::path(MHASCOPE_SOURCE_DIR) / "core")) {
    if (!e.is_regular_file()) continue;
    const auto ext = e.path().extension().string();
    if (ext != ".cpp" && ext != ".hpp" && ext != ".h" && ext != ".inc") continue;
    std::ifstream in(e.path());
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    std::smatch m;
    EXPECT_FALSE(std::regex_search(text, m, forbidden)) << e.path() << " includes " << m.str();
    ++files;
  }
  EXPECT_GT(files, 10);
}

TEST(Purity, CairoOnlyInTheExportModule) {
  const std::regex cairo(R"(#\s*include\s*[<"]cairo[^>"]*[>"])");
  const fs::path core = fs::path(MHASCOPE_SOURCE_DIR) / "core";
  int files = 0;
  for (const auto& e : fs::recursive_directory_iterator(core)) {
    if (!e.is_regular_file()) continue;
    const auto ext = e.path().extension().string();
    if (ext != ".cpp" && ext != ".hpp" && ext != ".h" && ext != ".inc") continue;
    const auto rel = fs::relative(e.path(), core);
    if (*rel.begin() == "export") continue;
    std::ifstream in(e.path());
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    std::smatch m;
    EXPECT_FALSE(std::regex_search(text, m, cairo)) << e.path() << " includes " << m.str()
                                                    << " (cairo belongs in core/export/ only)";
    ++files;
  }
  EXPECT_GT(files, 10);
}

// Every source file under `root` (core/ or app/), relative to the repository, with its text.
std::vector<std::pair<fs::path, std::string>> sourcesUnder(const char* root) {
  std::vector<std::pair<fs::path, std::string>> out;
  const fs::path base(MHASCOPE_SOURCE_DIR);
  for (const auto& e : fs::recursive_directory_iterator(base / root)) {
    if (!e.is_regular_file()) continue;
    const auto ext = e.path().extension().string();
    if (ext != ".cpp" && ext != ".hpp" && ext != ".h" && ext != ".inc") continue;
    std::ifstream in(e.path());
    std::stringstream ss;
    ss << in.rdbuf();
    out.emplace_back(fs::relative(e.path(), base), ss.str());
  }
  return out;
}

// The analysis of attention stands below both of its sources: core/analysis includes neither the
// trainer nor the model folders, and core/model (a real model) nothing of the trainer. The CMake
// targets say the same (mhascope_model and mhascope_analysis do not link mhascope_train), so an
// include that slips in fails to link as well.
TEST(Purity, ModulesIncludeOnlyTheModulesBelowThem) {
  const std::regex train(R"(#\s*include\s*"train/[^"]*")"), model(R"(#\s*include\s*"(model|model_source)/[^"]*")");
  int files = 0;
  for (const auto& [path, text] : sourcesUnder("core")) {
    const std::string module = (++path.begin())->string();
    std::smatch m;
    if (module == "model" || module == "analysis") {
      EXPECT_FALSE(std::regex_search(text, m, train)) << path << " includes " << m.str() << " (core/" << module
                                                      << " must not depend on core/train)";
      ++files;
    }
    if (module == "analysis") {
      EXPECT_FALSE(std::regex_search(text, m, model)) << path << " includes " << m.str()
                                                      << " (core/analysis must not depend on core/model)";
    }
  }
  EXPECT_GT(files, 10);
}

// Each instantiation of Eigen's eigen solvers or SVDs costs about a minute of compiling: they live
// behind core/util/decompositions.hpp, in its .cpp alone.
TEST(Purity, OneTranslationUnitInstantiatesTheDecompositions) {
  const std::regex decomposition(
      R"(#\s*include\s*<Eigen/(Eigenvalues|SVD|QR|Cholesky|LU|Dense|Eigen)>|\b(EigenSolver|SelfAdjointEigenSolver|ComplexEigenSolver|JacobiSVD|BDCSVD|HouseholderQR|ColPivHouseholderQR|FullPivLU|PartialPivLU|LLT|LDLT)\s*<)");
  int files = 0;
  for (const char* root : {"core", "app"}) {
    for (const auto& [path, text] : sourcesUnder(root)) {
      ++files;
      if (path == fs::path("core/util/decompositions.cpp")) continue;
      std::smatch m;
      EXPECT_FALSE(std::regex_search(text, m, decomposition))
          << path << " uses " << m.str() << ": call core/util/decompositions.hpp instead";
    }
  }
  EXPECT_GT(files, 100);
}

TEST(Purity, CompiledWithoutFastMath) {
  // Compile-time guard: these macros exist only under -ffast-math / -ffinite-math-only.
#if defined(__FAST_MATH__) || defined(__FINITE_MATH_ONLY__) && __FINITE_MATH_ONLY__
  FAIL() << "built with -ffast-math or -ffinite-math-only";
#endif
  const float zero = 0.0f;
  volatile float nan = zero / zero;
  EXPECT_TRUE(std::isnan(nan));
}

}  // namespace
