// The offline HTML page: it can make no request (its policy forbids every source and nothing in
// it names one), every cell carries the picture's table index and the window's number, labels
// cannot break out of the page, it carries its workspace and readWorkspaceFile finds it again,
// and past its bound it downsamples by the window's rule and says so.
#include "export/html_view.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "color/colormap.hpp"
#include "color/see_as.hpp"
#include "io/file_io.hpp"
#include "io/workspace.hpp"
#include "util/format.hpp"

namespace mhascope {
namespace {

namespace fs = std::filesystem;

Slice2D weightsSlice(const std::vector<float>& data, const std::vector<std::uint8_t>* blocked, int n, int head) {
  Slice2D s;
  s.stage = StageId::Weights;
  s.head = head;
  s.rows = s.cols = n;
  s.data = data.data();
  s.rowAxis = "T_q";
  s.colAxis = "T_k";
  s.rowKind = AxisKind::QueryTokens;
  s.colKind = AxisKind::KeyTokens;
  for (int i = 0; i < n; ++i) {
    s.rowLabels.push_back("t" + std::to_string(i));
    s.colLabels.push_back("t" + std::to_string(i));
  }
  if (blocked) s.blockedCells = blocked->data();
  return s;
}

// The page's data block, parsed.
nlohmann::json dataOf(const std::string& page) {
  const std::string open = R"(<script type="application/json" id="mhascope-data">)";
  const std::size_t a = page.find(open);
  EXPECT_NE(a, std::string::npos);
  const std::size_t b = page.find("</script>", a);
  return nlohmann::json::parse(page.substr(a + open.size(), b - a - open.size()));
}

// A causal 3 x 3 pattern, two heads: row sums 1, blocked above the diagonal.
struct Causal {
  std::vector<float> h0{1, -INFINITY, -INFINITY, 0.25f, 0.75f, -INFINITY, 0.2f, 0.3f, 0.5f};
  std::vector<float> h1{1, -INFINITY, -INFINITY, 0.9f, 0.1f, -INFINITY, 0.6f, std::numeric_limits<float>::quiet_NaN(), 0.4f};
  std::vector<std::uint8_t> mask{0, 1, 1, 0, 0, 1, 0, 0, 0};
  HtmlExport view() const {
    HtmlExport v;
    v.slices = {weightsSlice(h0, &mask, 3, 0), weightsSlice(h1, &mask, 3, 1)};
    v.grid = true;
    v.options.subtitle = "B=1 T=3";
    return v;
  }
};

TEST(HtmlView, MakesNoRequestAndNamesNoSource) {
  Causal c;
  auto page = renderHtml(c.view());
  ASSERT_TRUE(page) << page.error().message;
  EXPECT_NE(page->find("Content-Security-Policy\" content=\"default-src 'none'"), std::string::npos);
  for (const char* s : {" src=", " href=", "<link", "<img", "<iframe", "fetch(", "XMLHttpRequest", "import(", "url("}) {
    EXPECT_EQ(page->find(s), std::string::npos) << s;
  }
  EXPECT_EQ(page->rfind("<!DOCTYPE html>", 0), 0u);
}

TEST(HtmlView, EveryCellCarriesThePicturesIndexAndTheWindowsNumber) {
  Causal c;
  auto page = renderHtml(c.view());
  ASSERT_TRUE(page);
  const auto d = dataOf(*page);
  auto layout = layoutHeadGrid(c.view().slices, {});
  ASSERT_TRUE(layout);
  ASSERT_EQ(d["heads"].size(), 2u);
  EXPECT_EQ(d["rows"], 3);
  EXPECT_EQ(d["block"], 1);
  const std::string lut = d["lut"];
  ASSERT_EQ(lut.size(), 6u * 256u);
  const RGBA8 top = tableColor(layout->colormap, 255);
  char hex[8];
  std::snprintf(hex, sizeof hex, "%02x%02x%02x", top.r, top.g, top.b);
  EXPECT_EQ(lut.substr(6 * 255, 6), hex);
  const std::vector<const std::vector<float>*> heads{&c.h0, &c.h1};
  for (int h = 0; h < 2; ++h) {
    const std::string index = d["heads"][h]["index"];
    for (int i = 0; i < 9; ++i) {
      const float v = (*heads[h])[i];
      const std::string cell = index.substr(2 * i, 2);
      if (c.mask[i]) {
        EXPECT_EQ(cell, "--") << h << " " << i;
        EXPECT_EQ(d["heads"][h]["values"][i], "");
      } else if (std::isnan(v)) {
        EXPECT_EQ(cell, "nn");
        EXPECT_EQ(d["heads"][h]["values"][i], "NaN");
      } else {
        EXPECT_EQ(std::stoi(cell, nullptr, 16), tableIndex(layout->range, v)) << h << " " << i;
        EXPECT_EQ(d["heads"][h]["values"][i], formatCellValue(v));
      }
    }
  }
  // Weights of the sequence's tokens: the head view is there.
  EXPECT_NE(page->find("id=\"headview\""), std::string::npos);
}

TEST(HtmlView, ItsColoursGoThroughTheSeeAsPreview) {
  Causal c;
  HtmlExport v = c.view();
  v.options.seeAs = SeeAs::Greyscale;
  auto page = renderHtml(v);
  ASSERT_TRUE(page);
  const auto d = dataOf(*page);
  const std::string lut = d["lut"];
  auto layout = layoutHeadGrid(v.slices, {});
  ASSERT_TRUE(layout);
  for (int i = 0; i < 256; i += 51) {
    const RGBA8 want = seeAsColor(SeeAs::Greyscale, tableColor(layout->colormap, i));
    char hex[8];
    std::snprintf(hex, sizeof hex, "%02x%02x%02x", want.r, want.g, want.b);
    EXPECT_EQ(lut.substr(6 * static_cast<std::size_t>(i), 6), hex) << i;
    EXPECT_EQ(want.r, want.g);
  }
  const RGBA8 nan = seeAsColor(SeeAs::Greyscale, nanColor());
  char hex[8];
  std::snprintf(hex, sizeof hex, "%02x%02x%02x", nan.r, nan.g, nan.b);
  EXPECT_EQ(d["nan"], hex);
}

TEST(HtmlView, LabelsAndTitlesCannotBreakOutOfThePage) {
  Causal c;
  HtmlExport v = c.view();
  v.slices[0].rowLabels[1] = "</script><script>alert(1)</script>";
  v.slices[1].rowLabels[1] = v.slices[0].rowLabels[1];
  v.options.title = "<b>bold</b> & co";
  auto page = renderHtml(v);
  ASSERT_TRUE(page);
  EXPECT_EQ(page->find("<script>alert"), std::string::npos);
  EXPECT_NE(page->find("&lt;b&gt;bold&lt;/b&gt; &amp; co"), std::string::npos);
  EXPECT_EQ(dataOf(*page)["rowLabels"][1], "</script><script>alert(1)</script>");
}

TEST(HtmlView, CarriesItsWorkspaceWhichOpensAgain) {
  Causal c;
  HtmlExport v = c.view();
  Workspace ws;
  ws.config.text = "a </script> b";
  ws.view.stage = StageId::Weights;
  ws.view.head = 1;
  ws.view.colormap = ColormapId::Magma;
  v.workspaceJson = workspaceToJson(ws);
  const fs::path dir = fs::temp_directory_path() / "mhascope_html_view_test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string path = (dir / "view.html").string();
  ASSERT_TRUE(exportHtml(path, v));
  auto back = readWorkspaceFile(path);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->config.text, "a </script> b");
  EXPECT_EQ(back->view.head, 1);
  EXPECT_EQ(back->view.colormap, ColormapId::Magma);
  // A page without one says so, naming the file.
  std::ofstream(dir / "other.html") << "<!doctype html><html><body>hi</body></html>";
  auto none = readWorkspaceFile((dir / "other.html").string());
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("other.html"), std::string::npos);
  EXPECT_NE(none.error().message.find("without a mhascope workspace"), std::string::npos);
  fs::remove_all(dir);
}

TEST(HtmlView, PastItsBoundDownsamplesByTheWindowsRuleAndSaysSo) {
  const int n = 1100;  // 1.21 M cells, past the page's bound
  std::vector<float> w(static_cast<std::size_t>(n) * n, 0.0f);
  w[static_cast<std::size_t>(5) * n + 7] = 1.0f;  // one strong weight survives its block (max)
  HtmlExport v;
  v.slices = {weightsSlice(w, nullptr, n, 0)};
  auto page = renderHtml(v);
  ASSERT_TRUE(page);
  const auto d = dataOf(*page);
  EXPECT_EQ(d["block"], 2);
  EXPECT_EQ(d["rows"], 550);
  EXPECT_EQ(d["heads"][0]["values"][2 * 550 + 3], formatCellValue(1.0f));
  EXPECT_NE(page->find("Each cell shows a block of 2 × 2 cells by its max"), std::string::npos);
  EXPECT_EQ(page->find("id=\"headview\""), std::string::npos);  // no lines between blocks
}

TEST(HtmlView, EmptyAndMismatchedInputsAreRefused) {
  EXPECT_FALSE(renderHtml(HtmlExport{}));
  Causal c;
  std::vector<float> small{1};
  HtmlExport v = c.view();
  v.slices.push_back(weightsSlice(small, nullptr, 1, 2));
  EXPECT_FALSE(renderHtml(v));
  EXPECT_TRUE(isHtmlPath("a/B.HTML"));
  EXPECT_TRUE(isHtmlPath("x.htm"));
  EXPECT_FALSE(isHtmlPath("x.html.png"));
  EXPECT_TRUE(looksLikeHtml("\xEF\xBB\xBF  <!DOCTYPE html>"));
  EXPECT_FALSE(looksLikeHtml("{\"mhascope_workspace\": 1}"));
}

}  // namespace
}  // namespace mhascope
