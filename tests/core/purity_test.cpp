// Architecture checks: core/ knows nothing of the GUI (no ImGui, GLFW or GL includes), only
// core/export/ (the mhascope_export target) uses cairo, the modules include only the modules below
// them (core/model and core/analysis nothing of core/train), one translation unit instantiates Eigen's
// decompositions, and the build never uses fast-math (it would disable the NaN/Inf guards).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace {

namespace fs = std::filesystem;

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

bool space(char c) { return c == ' ' || c == '\t'; }

// What a text's #include lines name ("imgui.h", "train/trainer.hpp", "Eigen/SVD"), as written
// between the quotes or the angle brackets. A plain scan: the sanitizer build runs this test code
// unoptimised, where std::regex took seconds over the sources.
std::vector<std::string> includesOf(const std::string& text) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    std::size_t i = at;
    while (i < end && space(text[i])) ++i;
    if (i < end && text[i] == '#') {
      ++i;
      while (i < end && space(text[i])) ++i;
      if (text.compare(i, 7, "include") == 0) {
        i += 7;
        while (i < end && space(text[i])) ++i;
        if (i < end && (text[i] == '<' || text[i] == '"')) {
          const char close = text[i] == '<' ? '>' : '"';
          const std::size_t stop = text.find(close, i + 1);
          if (stop != std::string::npos && stop < end) out.push_back(text.substr(i + 1, stop - i - 1));
        }
      }
    }
    at = end + 1;
  }
  return out;
}

bool startsWith(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

TEST(Purity, CoreIncludesNoGuiHeaders) {
  int files = 0;
  for (const auto& [path, text] : sourcesUnder("core")) {
    for (const std::string& inc : includesOf(text)) {
      for (const char* gui : {"imgui", "GLFW/", "GL/", "backends/", "glad", "epoxy"}) {
        EXPECT_FALSE(startsWith(inc, gui)) << path << " includes " << inc;
      }
    }
    ++files;
  }
  EXPECT_GT(files, 10);
}

TEST(Purity, CairoOnlyInTheExportModule) {
  int files = 0;
  for (const auto& [path, text] : sourcesUnder("core")) {
    if ((++path.begin())->string() == "export") continue;
    for (const std::string& inc : includesOf(text)) {
      EXPECT_FALSE(startsWith(inc, "cairo")) << path << " includes " << inc << " (cairo belongs in core/export/ only)";
    }
    ++files;
  }
  EXPECT_GT(files, 10);
}

// Every colour of an exported picture goes through the exporter's one colour path (export/ink.cpp),
// which applies the picture's "see as" preview: a cairo colour call anywhere else in core/export/
// would draw that part in its normal colours whatever the reader asked for.
TEST(Purity, ExportedColoursGoThroughTheInk) {
  int files = 0;
  for (const auto& [path, text] : sourcesUnder("core/export")) {
    if (path.filename() == "ink.cpp") continue;
    for (const char* call : {"cairo_set_source_rgb", "cairo_set_source_rgba", "cairo_pattern_create_rgb",
                             "cairo_pattern_add_color_stop"}) {
      EXPECT_EQ(text.find(call), std::string::npos) << path << " calls " << call << " (use setInk, export/ink.hpp)";
    }
    // An image used as a source is inked first (the colour bar's strip).
    std::size_t at = 0;
    while ((at = text.find("cairo_set_source_surface", at)) != std::string::npos) {
      EXPECT_NE(text.rfind("inkImage(", at), std::string::npos) << path << ": an image painted without inkImage";
      at += 1;
    }
    ++files;
  }
  EXPECT_GT(files, 5);
}

// The analysis of attention stands below both of its sources: core/analysis includes neither the
// trainer nor the model folders, and core/model (a real model) nothing of the trainer. The CMake
// targets say the same (mhascope_model and mhascope_analysis do not link mhascope_train), so an
// include that slips in fails to link as well.
TEST(Purity, ModulesIncludeOnlyTheModulesBelowThem) {
  int files = 0;
  for (const auto& [path, text] : sourcesUnder("core")) {
    const std::string module = (++path.begin())->string();
    if (module != "model" && module != "analysis") continue;
    ++files;
    for (const std::string& inc : includesOf(text)) {
      EXPECT_FALSE(startsWith(inc, "train/")) << path << " includes " << inc << " (core/" << module
                                              << " must not depend on core/train)";
      if (module == "analysis") {
        EXPECT_FALSE(startsWith(inc, "model/") || startsWith(inc, "model_source/"))
            << path << " includes " << inc << " (core/analysis must not depend on core/model)";
      }
    }
  }
  EXPECT_GT(files, 10);
}

// Each instantiation of Eigen's eigen solvers or SVDs costs about a minute of compiling: they live
// behind core/util/decompositions.hpp, in its .cpp alone.
TEST(Purity, OneTranslationUnitInstantiatesTheDecompositions) {
  const char* headers[] = {"Eigen/Eigenvalues", "Eigen/SVD", "Eigen/QR", "Eigen/Cholesky", "Eigen/LU", "Eigen/Dense",
                           "Eigen/Eigen"};
  const std::string solvers[] = {"EigenSolver", "SelfAdjointEigenSolver", "ComplexEigenSolver", "JacobiSVD", "BDCSVD",
                                 "HouseholderQR", "ColPivHouseholderQR", "FullPivLU", "PartialPivLU", "LLT", "LDLT"};
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  int files = 0;
  for (const char* root : {"core", "app"}) {
    for (const auto& [path, text] : sourcesUnder(root)) {
      ++files;
      if (path == fs::path("core/util/decompositions.cpp")) continue;
      for (const std::string& inc : includesOf(text)) {
        for (const char* h : headers) {
          EXPECT_NE(inc, h) << path << " includes <" << inc << ">: call core/util/decompositions.hpp instead";
        }
      }
      // A solver named as a template: the word, then '<' (spaces between allowed).
      for (const std::string& solver : solvers) {
        for (std::size_t at = text.find(solver); at != std::string::npos; at = text.find(solver, at + 1)) {
          if (at > 0 && word(text[at - 1])) continue;
          std::size_t after = at + solver.size();
          if (after < text.size() && word(text[after])) continue;
          while (after < text.size() && space(text[after])) ++after;
          EXPECT_FALSE(after < text.size() && text[after] == '<')
              << path << " uses " << solver << "<: call core/util/decompositions.hpp instead";
        }
      }
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
