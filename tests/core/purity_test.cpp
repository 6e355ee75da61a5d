// Architecture checks: core/ knows nothing of the GUI (no ImGui, GLFW or GL includes), only
// core/export/ (the mhascope_export target) uses cairo, and the build never uses fast-math (it would disable the NaN/Inf guards).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

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
