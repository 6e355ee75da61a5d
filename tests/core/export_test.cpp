// Picture export: a PNG is read back with cairo and every cell's pixels must be the exact table
// colour of its value (and invert to the value within one table step); SVG/PDF carry the right
// magic and the title; a head grid shares one scale; hostile labels (accents, CJK, emoji,
// invalid UTF-8) render; and failed exports name the path and leave no file behind.
#include "export/export.hpp"

#include <cairo.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "io/file_io.hpp"

namespace mhascope {
namespace {

namespace fs = std::filesystem;
constexpr float kExportInf = std::numeric_limits<float>::infinity();
constexpr float kExportNan = std::numeric_limits<float>::quiet_NaN();

// A hand-made slice over caller-owned data: no engine needed.
Slice2D makeSlice(StageId stage, const std::vector<float>& data, int rows, int cols, int head = 0) {
  Slice2D s;
  s.stage = stage;
  s.head = head;
  s.rows = rows;
  s.cols = cols;
  s.data = data.data();
  s.rowAxis = "T_q";
  s.colAxis = "T_k";
  for (int r = 0; r < rows; ++r) s.rowLabels.push_back("q" + std::to_string(r));
  for (int c = 0; c < cols; ++c) s.colLabels.push_back("key" + std::to_string(c));
  return s;
}

// Decoded PNG pixels, read back through cairo (the same library, but its PNG *reader*).
struct Image {
  int width = 0, height = 0;
  std::vector<std::uint32_t> px;  // 0x00RRGGBB
  RGBA8 at(int x, int y) const {
    const std::uint32_t v = px[static_cast<std::size_t>(y) * static_cast<std::size_t>(width) + static_cast<std::size_t>(x)];
    return RGBA8{static_cast<std::uint8_t>(v >> 16), static_cast<std::uint8_t>(v >> 8), static_cast<std::uint8_t>(v), 255};
  }
};

struct ReadState {
  const std::string* bytes;
  std::size_t pos;
};

cairo_status_t readFromString(void* closure, unsigned char* data, unsigned int length) {
  auto* st = static_cast<ReadState*>(closure);
  if (st->pos + length > st->bytes->size()) return CAIRO_STATUS_READ_ERROR;
  std::memcpy(data, st->bytes->data() + st->pos, length);
  st->pos += length;
  return CAIRO_STATUS_SUCCESS;
}

Image decodePng(const std::string& bytes) {
  ReadState state{&bytes, 0};
  cairo_surface_t* s = cairo_image_surface_create_from_png_stream(readFromString, &state);
  Image img;
  if (cairo_surface_status(s) == CAIRO_STATUS_SUCCESS) {
    cairo_surface_flush(s);
    img.width = cairo_image_surface_get_width(s);
    img.height = cairo_image_surface_get_height(s);
    const int stride = cairo_image_surface_get_stride(s);
    const unsigned char* data = cairo_image_surface_get_data(s);
    img.px.resize(static_cast<std::size_t>(img.width) * static_cast<std::size_t>(img.height));
    for (int y = 0; y < img.height; ++y) {
      std::memcpy(&img.px[static_cast<std::size_t>(y) * static_cast<std::size_t>(img.width)], data + y * stride,
                  static_cast<std::size_t>(img.width) * 4);
    }
    for (auto& p : img.px) p &= 0x00FFFFFFu;
  }
  cairo_surface_destroy(s);
  return img;
}

// Checks every cell of one panel: the centre pixel inverts to the value within one table step
// (finite cells) or is the NaN / blocked colour, and every pixel of the cell has that colour.
// Prints the first mismatches and the largest error, like llm.c's check_tensor.
void expectCellsMatch(const Image& img, const Slice2D& s, const HeatmapLayout& p, ColormapId map, ColorRange range,
                      const std::string& what) {
  const double step = (double{range.hi} - double{range.lo}) / 255.0;
  double maxErr = 0;
  int bad = 0;
  for (int r = 0; r < s.rows; ++r) {
    for (int c = 0; c < s.cols; ++c) {
      const float v = s.at(r, c);
      const int cx = static_cast<int>(std::floor(p.x0 + (c + 0.5) * p.cellW));
      const int cy = static_cast<int>(std::floor(p.y0 + (r + 0.5) * p.cellH));
      ASSERT_TRUE(cx >= 0 && cy >= 0 && cx < img.width && cy < img.height) << what;
      const RGBA8 centre = img.at(cx, cy);
      const float back = invertColor(map, range, centre);
      bool ok;
      if (v == -kExportInf || s.isBlockedCell(r, c)) {
        // A blocked cell: the blocked colour with the light cross through its centre (when the
        // cell can show one) — the look every view shares.
        const RGBA8 corner = img.at(static_cast<int>(p.x0 + c * p.cellW) + 1, static_cast<int>(p.y0 + r * p.cellH) + 1);
        const bool crossed = p.cellW >= 8 && p.cellH >= 8;
        ok = corner == blockedColor(map) && (crossed ? centre != blockedColor(map) : centre == blockedColor(map));
        if (!ok && ++bad <= 5) {
          ADD_FAILURE() << what << ": blocked cell (" << r << ", " << c << "): corner (" << int{corner.r} << ","
                        << int{corner.g} << "," << int{corner.b} << "), centre (" << int{centre.r} << ","
                        << int{centre.g} << "," << int{centre.b} << ")";
        }
        continue;
      } else if (std::isnan(v)) {
        // A NaN cell: magenta with the dark dot at its centre (when the cell can show one).
        const RGBA8 corner = img.at(static_cast<int>(p.x0 + c * p.cellW) + 1, static_cast<int>(p.y0 + r * p.cellH) + 1);
        const bool dotted = p.cellW >= 8 && p.cellH >= 8;
        ok = corner == nanColor() && centre == (dotted ? nanMarkColor() : nanColor());
        if (!ok && ++bad <= 5) {
          ADD_FAILURE() << what << ": NaN cell (" << r << ", " << c << "): corner (" << int{corner.r} << ","
                        << int{corner.g} << "," << int{corner.b} << "), centre (" << int{centre.r} << ","
                        << int{centre.g} << "," << int{centre.b} << ")";
        }
        continue;
      } else {
        const double err = std::abs(double{back} - double{v});
        maxErr = std::max(maxErr, err);
        ok = err <= step * 0.5 + 1e-6 && centre == mapValue(map, range, v);
      }
      std::string why = ok ? "" : "centre pixel";
      // The whole cell is one solid colour: no antialiasing seams inside it.
      for (int y = static_cast<int>(p.y0 + r * p.cellH); ok && y < static_cast<int>(p.y0 + (r + 1) * p.cellH); ++y) {
        for (int x = static_cast<int>(p.x0 + c * p.cellW); ok && x < static_cast<int>(p.x0 + (c + 1) * p.cellW); ++x) {
          ok = img.at(x, y) == centre;
          if (!ok) why = "pixel (" + std::to_string(x) + ", " + std::to_string(y) + ") differs from the centre";
        }
      }
      if (!ok && ++bad <= 5) {
        ADD_FAILURE() << what << ": cell (" << r << ", " << c << ") value " << v << ": " << why << "; centre ("
                      << int{centre.r} << "," << int{centre.g} << "," << int{centre.b} << ") inverts to " << back;
      }
    }
  }
  EXPECT_EQ(bad, 0) << what << ": max |error| " << maxErr << " (one table step = " << step << ")";
  EXPECT_LE(maxErr, step) << what;
}

fs::path scratchDir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("mhascope_export_test_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

int countEntries(const fs::path& dir) {
  int n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
  return n;
}

// 5 x 7 signed scores spread over [-3, 3], with one masked and one NaN cell.
std::vector<float> knownScores() {
  std::vector<float> v(35);
  for (int i = 0; i < 35; ++i) v[static_cast<std::size_t>(i)] = -3.0f + 6.0f * static_cast<float>(i) / 34.0f;
  v[8] = -kExportInf;
  v[20] = kExportNan;
  return v;
}

TEST(ExportFormat, ExtensionPicksTheFormat) {
  EXPECT_EQ(*formatFromPath("a/b.png"), ImageFormat::Png);
  EXPECT_EQ(*formatFromPath("B.SVG"), ImageFormat::Svg);
  EXPECT_EQ(*formatFromPath("/x/y.z/w.Pdf"), ImageFormat::Pdf);
  auto bad = formatFromPath("out.bmp");
  ASSERT_FALSE(bad.ok());
  for (const char* part : {"out.bmp", "'.bmp'", ".png", ".svg", ".pdf"}) {
    EXPECT_NE(bad.error().message.find(part), std::string::npos) << bad.error().message;
  }
  EXPECT_FALSE(formatFromPath("dir.png/noext").ok());
  EXPECT_FALSE(formatFromPath("").ok());
}

TEST(ExportPng, EveryCellInvertsToItsValue) {
  const std::vector<float> data = knownScores();
  const Slice2D s = makeSlice(StageId::MaskedScores, data, 5, 7, 1);
  ExportOptions opt;
  opt.showValues = false;  // numbers would cover the centre pixels
  opt.subtitle = "B=1 T=7 d_model=16 h=2 causal";
  FigureLayout layout;
  auto png = renderHeatmap(s, ImageFormat::Png, opt, &layout);
  ASSERT_TRUE(png.ok()) << png.error().message;
  ASSERT_EQ(png->compare(0, 8, "\x89PNG\r\n\x1a\n"), 0);
  const Image img = decodePng(*png);
  ASSERT_EQ(img.width, layout.width);
  ASSERT_EQ(img.height, layout.height);
  ASSERT_EQ(layout.panels.size(), 1u);

  // Signed stage → diverging map, range symmetric about 0 from the finite values only.
  EXPECT_EQ(layout.colormap, ColormapId::Diverging);
  EXPECT_EQ(layout.range.lo, -3.0f);
  EXPECT_EQ(layout.range.hi, 3.0f);
  const HeatmapLayout& p = layout.panels[0];
  EXPECT_EQ(p.rows, 5);
  EXPECT_EQ(p.cols, 7);
  // Whole-pixel cells at whole-pixel offsets.
  EXPECT_EQ(p.x0, std::floor(p.x0));
  EXPECT_EQ(p.y0, std::floor(p.y0));
  EXPECT_EQ(p.cellW, std::floor(p.cellW));
  EXPECT_GE(p.cellW, 14);
  expectCellsMatch(img, s, p, layout.colormap, layout.range, "5x7 scores");
}

TEST(ExportPng, ProbabilitiesUseViridisOverUnitRangeAndValuesMayBeShown) {
  std::vector<float> data(35);
  for (int i = 0; i < 35; ++i) data[static_cast<std::size_t>(i)] = static_cast<float>(i % 7) / 6.0f * 0.9f;
  const Slice2D s = makeSlice(StageId::Weights, data, 5, 7);
  FigureLayout layout;
  ExportOptions opt;
  opt.showValues = false;
  auto png = renderHeatmap(s, ImageFormat::Png, opt, &layout);
  ASSERT_TRUE(png.ok()) << png.error().message;
  EXPECT_EQ(layout.colormap, ColormapId::Viridis);
  EXPECT_EQ(layout.range.lo, 0.0f);
  EXPECT_EQ(layout.range.hi, 1.0f);
  expectCellsMatch(decodePng(*png), s, layout.panels[0], layout.colormap, layout.range, "5x7 weights");

  // With numbers on (auto: the cells are large), a cell's top-left corner keeps its colour.
  ExportOptions withValues;
  FigureLayout l2;
  auto png2 = renderHeatmap(s, ImageFormat::Png, withValues, &l2);
  ASSERT_TRUE(png2.ok());
  EXPECT_TRUE(l2.showValues);
  const Image img2 = decodePng(*png2);
  const HeatmapLayout& p = l2.panels[0];
  for (int r = 0; r < 5; ++r) {
    for (int c = 0; c < 7; ++c) {
      const RGBA8 corner = img2.at(static_cast<int>(p.x0 + c * p.cellW) + 1, static_cast<int>(p.y0 + r * p.cellH) + 1);
      EXPECT_EQ(corner, mapValue(l2.colormap, l2.range, s.at(r, c))) << r << "," << c;
    }
  }
  // An explicit colormap and range are honoured.
  ExportOptions gray;
  gray.colormap = ColormapId::Gray;
  gray.range = ColorRange{0.0f, 0.9f};
  gray.showValues = false;
  FigureLayout l3;
  auto png3 = renderHeatmap(s, ImageFormat::Png, gray, &l3);
  ASSERT_TRUE(png3.ok());
  EXPECT_EQ(l3.colormap, ColormapId::Gray);
  expectCellsMatch(decodePng(*png3), s, l3.panels[0], ColormapId::Gray, *gray.range, "gray explicit range");
}

TEST(ExportVector, SvgAndPdfHaveMagicAndTitle) {
  const std::vector<float> data = knownScores();
  const Slice2D s = makeSlice(StageId::MaskedScores, data, 5, 7);
  ExportOptions opt;
  opt.title = "Masked scores head 1 & friends";
  auto svg = renderHeatmap(s, ImageFormat::Svg, opt);
  ASSERT_TRUE(svg.ok()) << svg.error().message;
  EXPECT_EQ(svg->rfind("<?xml", 0), 0u) << svg->substr(0, 40);
  EXPECT_NE(svg->find("<svg"), std::string::npos);
  EXPECT_NE(svg->find("<title>Masked scores head 1 &amp; friends</title>"), std::string::npos);
  EXPECT_NE(svg->find("</svg>"), std::string::npos);

  auto pdf = renderHeatmap(s, ImageFormat::Pdf, opt);
  ASSERT_TRUE(pdf.ok()) << pdf.error().message;
  EXPECT_EQ(pdf->rfind("%PDF-", 0), 0u);
  EXPECT_NE(pdf->find("Masked scores head 1 & friends"), std::string::npos);
  EXPECT_NE(pdf->find("%%EOF"), std::string::npos);

  // The automatic title names the stage, head and batch.
  auto layout = layoutHeatmap(s);
  ASSERT_TRUE(layout.ok());
  Slice2D s2 = s;
  s2.head = 3;
  s2.batchIndex = 1;
  auto svg2 = renderHeatmap(s2, ImageFormat::Svg);
  ASSERT_TRUE(svg2.ok());
  EXPECT_NE(svg2->find(std::string("<title>") + stageInfo(StageId::MaskedScores).title + " (masked_scores) \u00b7 head 3 \u00b7 batch 1</title>"),
            std::string::npos);
}

TEST(ExportGrid, AllHeadsShareOneScale) {
  // Four heads with different magnitudes: head k spans [-(k+1), k+1].
  std::vector<std::vector<float>> data(4, std::vector<float>(12));
  std::vector<Slice2D> heads;
  for (int k = 0; k < 4; ++k) {
    for (int i = 0; i < 12; ++i) {
      data[static_cast<std::size_t>(k)][static_cast<std::size_t>(i)] =
          static_cast<float>(k + 1) * (-1.0f + 2.0f * static_cast<float>(i) / 11.0f);
    }
    heads.push_back(makeSlice(StageId::ScaledScores, data[static_cast<std::size_t>(k)], 3, 4, k));
  }
  ExportOptions opt;
  opt.showValues = false;
  FigureLayout layout;
  auto png = renderHeadGrid(heads, ImageFormat::Png, opt, &layout);
  ASSERT_TRUE(png.ok()) << png.error().message;
  EXPECT_EQ(layout.range.lo, -4.0f);
  EXPECT_EQ(layout.range.hi, 4.0f);
  ASSERT_EQ(layout.panels.size(), 4u);
  // ceil(sqrt(4)) = 2 columns: panels 0,1 on one row, 2,3 on the next.
  EXPECT_EQ(layout.panels[0].y0, layout.panels[1].y0);
  EXPECT_LT(layout.panels[0].x0, layout.panels[1].x0);
  EXPECT_EQ(layout.panels[0].x0, layout.panels[2].x0);
  EXPECT_LT(layout.panels[0].y0, layout.panels[2].y0);
  const Image img = decodePng(*png);
  for (int k = 0; k < 4; ++k) {
    expectCellsMatch(img, heads[static_cast<std::size_t>(k)], layout.panels[static_cast<std::size_t>(k)], layout.colormap,
                     layout.range, "head " + std::to_string(k));
  }
  // Under per-head scales head 0's maximum (1.0) would be the top colour; shared, it is not.
  EXPECT_NE(img.at(static_cast<int>(layout.panels[0].x0 + 3.5 * layout.panels[0].cellW),
                   static_cast<int>(layout.panels[0].y0 + 2.5 * layout.panels[0].cellH)),
            tableColor(layout.colormap, 255));

  // 3 heads → 2 columns, 2 rows; SVG and PDF grids render too.
  heads.pop_back();
  auto l3 = layoutHeadGrid(heads, opt);
  ASSERT_TRUE(l3.ok());
  EXPECT_EQ(l3->panels[2].x0, l3->panels[0].x0);
  EXPECT_TRUE(renderHeadGrid(heads, ImageFormat::Svg, opt).ok());
  EXPECT_TRUE(renderHeadGrid(heads, ImageFormat::Pdf, opt).ok());
}

TEST(ExportGrid, BadInputsAreErrors) {
  EXPECT_FALSE(renderHeadGrid({}, ImageFormat::Png).ok());
  std::vector<float> a(6, 0.1f), b(8, 0.1f);
  std::vector<Slice2D> heads = {makeSlice(StageId::Weights, a, 2, 3, 0), makeSlice(StageId::Weights, b, 2, 4, 1)};
  auto r = renderHeadGrid(heads, ImageFormat::Png);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("head 1 is 2 x 4"), std::string::npos) << r.error().message;

  Slice2D s = makeSlice(StageId::Weights, a, 2, 3);
  s.colLabels.pop_back();
  auto r2 = renderHeatmap(s, ImageFormat::Png);
  ASSERT_FALSE(r2.ok());
  EXPECT_NE(r2.error().message.find("2 column labels but 3 columns"), std::string::npos) << r2.error().message;
}

TEST(ExportLabels, UnicodeAndInvalidUtf8LabelsRender) {
  std::vector<float> data(36);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(i) / 35.0f;
  Slice2D s = makeSlice(StageId::Weights, data, 6, 6);
  s.rowLabels = {"caf\u00e9", "\u65e5\u672c", "\U0001F600", "bad\xff\xfe", "\xe2\x82", "a\u200db\ufe0f"};
  s.colLabels = {"na\u00efve", "\u65e5\u672c\u8a9e", "\U0001F469\u200D\U0001F4BB", "x\xc0\xafy",
                 "averyveryverylongtokenthatgoesonandon", "tab\there"};
  s.rowAxis = "T_q";
  s.colAxis = "T_k \xff";
  const fs::path dir = scratchDir("unicode");
  for (const char* ext : {"png", "svg", "pdf"}) {
    const std::string path = (dir / (std::string("labels.") + ext)).string();
    auto st = exportHeatmap(path, s);
    ASSERT_TRUE(st.ok()) << ext << ": " << st.error().message;
    auto bytes = readFile(path);
    ASSERT_TRUE(bytes.ok());
    EXPECT_GT(bytes->size(), 500u) << ext;
  }
  fs::remove_all(dir);
}

TEST(ExportLayout, SixtyFourTokensKeepEveryLabelAndHugeInputsThinOrRefuse) {
  std::vector<float> d64(64 * 64, 1.0f / 64);
  auto l64 = layoutHeatmap(makeSlice(StageId::Weights, d64, 64, 64));
  ASSERT_TRUE(l64.ok()) << l64.error().message;
  EXPECT_GE(l64->panels[0].cellW, 14);
  EXPECT_EQ(l64->rowLabelStride, 1);
  EXPECT_EQ(l64->colLabelStride, 1);
  EXPECT_LE(std::max(l64->width, l64->height), 8000);
  EXPECT_FALSE(l64->showValues);  // 14 px cells are too small for numbers

  std::vector<float> d1k(1000 * 1000, 0.001f);
  auto l1k = layoutHeatmap(makeSlice(StageId::Weights, d1k, 1000, 1000));
  ASSERT_TRUE(l1k.ok()) << l1k.error().message;
  EXPECT_LE(std::max(l1k->width, l1k->height), 8000);
  EXPECT_GT(l1k->rowLabelStride, 1);
  EXPECT_GT(l1k->colLabelStride, 1);
  EXPECT_GE(l1k->panels[0].cellW, 1);

  // A runaway subtitle (very long, several lines) is cut rather than widening the picture.
  ExportOptions chatty;
  chatty.subtitle = std::string(5000, 'x') + "\nsecond line\r\nthird\n";
  auto lc = layoutHeatmap(makeSlice(StageId::Weights, d64, 64, 64), chatty);
  ASSERT_TRUE(lc.ok());
  EXPECT_EQ(lc->panels[0].cellW, l64->panels[0].cellW);
  EXPECT_LE(lc->width, 3000);
  EXPECT_GT(lc->panels[0].y0, l64->panels[0].y0);  // the extra lines push the heatmap down

  // Wider than any picture can be, even at one pixel per cell.
  std::vector<float> wide(40000, 0.5f);
  auto lw = layoutHeatmap(makeSlice(StageId::Weights, wide, 1, 40000));
  ASSERT_FALSE(lw.ok());
  EXPECT_NE(lw.error().message.find("CSV"), std::string::npos) << lw.error().message;
}

TEST(ExportPng, ThreeHundredTokensRenderFaithfully) {
  std::vector<float> data(300 * 300);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = std::sin(static_cast<float>(i) * 0.37f) * 5.0f;
  const Slice2D s = makeSlice(StageId::Scores, data, 300, 300);
  FigureLayout layout;
  auto png = renderHeatmap(s, ImageFormat::Png, {}, &layout);
  ASSERT_TRUE(png.ok()) << png.error().message;
  expectCellsMatch(decodePng(*png), s, layout.panels[0], layout.colormap, layout.range, "300x300");
}

TEST(ExportErrors, BadPathsNameThePathAndLeaveNothing) {
  const fs::path dir = scratchDir("errors");
  const std::vector<float> data = knownScores();
  const Slice2D s = makeSlice(StageId::MaskedScores, data, 5, 7);
  fs::create_directories(dir / "folder.png");
  const std::vector<std::string> bad = {
      (dir / "missing" / "out.png").string(),  // folder does not exist
      (dir / "folder.png").string(),           // a folder, not a file
      "/proc/nope.png",                        // a filesystem that refuses new files
      "/dev/full",                             // a device (and no picture extension)
      (dir / "out.bmp").string(),              // unknown extension
      (dir / "noext").string(),
  };
  for (const std::string& path : bad) {
    auto st = exportHeatmap(path, s);
    ASSERT_FALSE(st.ok()) << path;
    EXPECT_NE(st.error().message.find(path), std::string::npos) << st.error().message;
    auto grid = exportHeadGrid(path, {s, s});
    EXPECT_FALSE(grid.ok()) << path;
  }
  EXPECT_FALSE(fs::exists(dir / "missing"));
  EXPECT_FALSE(fs::exists("/proc/nope.png"));
  EXPECT_EQ(countEntries(dir), 1);  // only folder.png: no out.bmp, no noext, no temp files
  EXPECT_EQ(countEntries(dir / "folder.png"), 0);
  fs::remove_all(dir);
}

TEST(ExportErrors, FailedExportLeavesExistingFileByteIdentical) {
  const fs::path dir = scratchDir("keep");
  const std::string target = (dir / "picture.png").string();
  const std::string old = "previous picture bytes \x01\x02";
  ASSERT_TRUE(writeFileAtomic(target, old).ok());
  std::vector<float> data(6, 0.5f);
  Slice2D broken = makeSlice(StageId::Weights, data, 2, 3);
  broken.rowLabels = {"only one"};
  auto st = exportHeatmap(target, broken);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find(target), std::string::npos) << st.error().message;
  EXPECT_EQ(*readFile(target), old);
  EXPECT_EQ(countEntries(dir), 1);

  // And a successful export replaces it with a PNG.
  Slice2D good = makeSlice(StageId::Weights, data, 2, 3);
  ASSERT_TRUE(exportHeatmap(target, good).ok());
  EXPECT_EQ(readFile(target)->compare(0, 4, "\x89PNG"), 0);
  EXPECT_EQ(countEntries(dir), 1);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace mhascope

namespace mhascope {
namespace {

// A fully masked query row is flagged in the picture (a red bar beside the row,
// outside the cells, so the cells keep their exact colours).
TEST(ExportPng, FullyMaskedRowsAreFlaggedBesideTheGrid) {
  const std::vector<float> w = {0.5f, 0.5f, 0.0f, 0.0f, 0.0f, 0.0f, 0.2f, 0.3f, 0.5f};
  Slice2D s = makeSlice(StageId::Weights, w, 3, 3);
  s.flaggedRows = {0, 1, 0};
  FigureLayout layout;
  ExportOptions opt;
  opt.showValues = false;  // numbers would cover the centre pixels checked below
  auto png = renderHeatmap(s, ImageFormat::Png, opt, &layout);
  ASSERT_TRUE(png.ok()) << png.error().message;
  const Image img = decodePng(*png);
  const HeatmapLayout& p = layout.panels.at(0);
  const int x = static_cast<int>(p.x0) - 3;
  auto isRed = [](RGBA8 c) { return c.r > 180 && c.g < 80 && c.b < 80; };
  EXPECT_TRUE(isRed(img.at(x, static_cast<int>(p.y0 + 1.5 * p.cellH)))) << "row 1 must be flagged";
  EXPECT_FALSE(isRed(img.at(x, static_cast<int>(p.y0 + 0.5 * p.cellH))));
  EXPECT_FALSE(isRed(img.at(x, static_cast<int>(p.y0 + 2.5 * p.cellH))));
  expectCellsMatch(img, s, p, layout.colormap, layout.range, "flagged");
}

// --- one naming, blocked cells, colour-bar ticks, learned matrices -------------

TEST(ExportTitle, DefaultTitleIsTheSelectionNameTheWindowShows) {
  const std::vector<float> w = {0.5f, 0.5f, 0.25f, 0.75f};
  Slice2D s = makeSlice(StageId::Weights, w, 2, 2, /*head=*/1);
  s.batchIndex = 0;
  auto svg = renderHeatmap(s, ImageFormat::Svg);
  ASSERT_TRUE(svg.ok()) << svg.error().message;
  const SelectionName n = nameSelection(StageId::Weights, 0, 1);
  EXPECT_EQ(n.title, "Softmax (weights) \u00b7 head 1 \u00b7 batch 0");
  EXPECT_EQ(n.fileStem, "weights_b0_h1");
  // The picture's title (SVG <title>) is the very same string, 0-based like the file name.
  EXPECT_NE(svg->find("<title>" + n.title + "</title>"), std::string::npos) << svg->substr(0, 400);
  // A grid: "all h heads", file "_all_heads".
  std::vector<Slice2D> heads = {makeSlice(StageId::Weights, w, 2, 2, 0), makeSlice(StageId::Weights, w, 2, 2, 1)};
  auto grid = renderHeadGrid(heads, ImageFormat::Svg);
  ASSERT_TRUE(grid.ok());
  const SelectionName g = nameSelection(StageId::Weights, 0, -1, 2);
  EXPECT_EQ(g.fileStem, "weights_b0_all_heads");
  EXPECT_NE(grid->find("<title>" + g.title + "</title>"), std::string::npos);
}

TEST(ExportPng, BlockedWeightsAreDrawnLikeMaskedScoresWithTheirCrossAndLegend) {
  // Weights of exactly 0 that the mask blocked get the blocked colour and cross (as −inf scores
  // do), and the legend's swatch carries the same cross.
  const std::vector<float> w = {1.0f, 0.0f, 0.0f, 0.4f, 0.6f, 0.0f, 0.2f, 0.3f, 0.5f};
  Slice2D s = makeSlice(StageId::Weights, w, 3, 3);
  s.setBlockedCells({0, 1, 1, 0, 0, 1, 0, 0, 0});
  FigureLayout layout;
  ExportOptions opt;
  opt.showValues = false;
  auto png = renderHeatmap(s, ImageFormat::Png, opt, &layout);
  ASSERT_TRUE(png.ok()) << png.error().message;
  const Image img = decodePng(*png);
  const HeatmapLayout& p = layout.panels.at(0);
  expectCellsMatch(img, s, p, layout.colormap, layout.range, "blocked weights");
  const int cx = static_cast<int>(std::floor(p.x0 + 1.5 * p.cellW)), cy = static_cast<int>(std::floor(p.y0 + 0.5 * p.cellH));
  EXPECT_EQ(img.at(cx, cy), blockedMarkColor()) << "the cross goes through a blocked cell's centre";
  // Legend swatch: blocked colour at its corner, the cross at its centre.
  const int lx = static_cast<int>(layout.barX), ly = static_cast<int>(layout.legendY);
  EXPECT_EQ(img.at(lx + 1, ly + 1), blockedColor(layout.colormap));
  EXPECT_NE(img.at(lx + 7, ly + 7), blockedColor(layout.colormap));
  // The same −inf cells in the masked scores look the same.
  const std::vector<float> m = {1.0f, -kExportInf, -kExportInf, 0.4f, 0.6f, -kExportInf, 0.2f, 0.3f, 0.5f};
  Slice2D ms = makeSlice(StageId::MaskedScores, m, 3, 3);
  FigureLayout ml;
  auto mpng = renderHeatmap(ms, ImageFormat::Png, opt, &ml);
  ASSERT_TRUE(mpng.ok());
  const Image mimg = decodePng(*mpng);
  const HeatmapLayout& mp = ml.panels.at(0);
  EXPECT_EQ(mimg.at(static_cast<int>(mp.x0 + 1.5 * mp.cellW), static_cast<int>(mp.y0 + 0.5 * mp.cellH)), blockedMarkColor());
  EXPECT_EQ(mimg.at(static_cast<int>(mp.x0 + mp.cellW) + 1, static_cast<int>(mp.y0) + 1), blockedColor(ml.colormap));
}

TEST(ExportPng, ColourBarTicksLeaveAGapBeforeTheirLabels) {
  // A tick touching "0.5" reads as "-0.5": between the tick's end and the label there must be
  // a column of background on every tick row.
  const std::vector<float> w = {-1.0f, 0.5f, 0.25f, 1.0f};
  Slice2D s = makeSlice(StageId::Scores, w, 2, 2);
  FigureLayout layout;
  auto png = renderHeatmap(s, ImageFormat::Png, {}, &layout);
  ASSERT_TRUE(png.ok());
  const Image img = decodePng(*png);
  const int barRight = static_cast<int>(layout.barX + layout.barW);
  ASSERT_GE(layout.tickLabelX - (layout.barX + layout.barW), 8.0) << "tick + gap";
  for (double ty : {layout.barY, layout.barY + layout.barH / 2, layout.barY + layout.barH}) {
    const int y = static_cast<int>(std::round(ty));
    bool tick = false;
    for (int x = barRight + 1; x < barRight + 4; ++x) tick = tick || img.at(x, y).r < 128;
    EXPECT_TRUE(tick) << "the tick at y " << y;
    // The gap: background white over the tick row and the rows beside it.
    for (int x = static_cast<int>(layout.tickLabelX) - 4; x < static_cast<int>(layout.tickLabelX) - 1; ++x) {
      for (int dy = -1; dy <= 1; ++dy) {
        const RGBA8 c = img.at(x, y + dy);
        EXPECT_TRUE(c.r > 240 && c.g > 240 && c.b > 240) << "ink at (" << x << ", " << y + dy << ") touches the tick";
      }
    }
  }
}

TEST(ExportPng, LearnedMatricesExportWithTheirNameAndADivergingScale) {
  Trace t;
  t.dModel = 2;
  auto w = std::make_shared<MhaWeights>();
  w->dModel = 2;
  w->wq = w->wk = w->wv = RowMatrix::Zero(2, 2);
  w->bq = w->bk = w->bv = w->bo = RowVector::Zero(2);
  w->wo.resize(2, 2);
  w->wo << 0.5f, -1.0f, 0.25f, 1.0f;
  t.weights = w;
  auto s = sliceWeight(t, WeightId::Wo);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->data, t.weight(WeightId::Wo).data) << "the recorded numbers, not a copy or a recomputation";
  EXPECT_EQ(s->rowAxis, "d_model_in");
  EXPECT_EQ(s->colAxis, "d_model_out");
  EXPECT_EQ(nameSlice(*s).fileStem, "w_o");
  FigureLayout layout;
  auto svg = renderHeatmap(*s, ImageFormat::Svg, {}, &layout);
  ASSERT_TRUE(svg.ok()) << svg.error().message;
  EXPECT_NE(svg->find("<title>W_o (learned matrix)</title>"), std::string::npos);
  EXPECT_FLOAT_EQ(layout.range.lo, -1.0f);
  EXPECT_FLOAT_EQ(layout.range.hi, 1.0f);
  EXPECT_EQ(weightFromName("b_k"), WeightId::Bk);
  EXPECT_FALSE(weightFromName("W_q").has_value());
}

}  // namespace

// The picture's "see as" preview reaches every cell and the colour bar: each cell's colour (and
// the NaN and blocked cells' fills and marks) is exactly the simulated colour of the normal
// picture's, and the white paper stays white (every matrix keeps greys grey).
TEST(ExportPng, SeeAsAppliesToEveryCellAndTheColourBar) {
  const std::vector<float> data = knownScores();
  const Slice2D s = makeSlice(StageId::MaskedScores, data, 5, 7, 1);
  ExportOptions opt;
  opt.showValues = false;
  FigureLayout layout;
  auto normal = renderHeatmap(s, ImageFormat::Png, opt, &layout);
  ASSERT_TRUE(normal.ok()) << normal.error().message;
  const Image n = decodePng(*normal);
  for (SeeAs kind : {SeeAs::Protanopia, SeeAs::Deuteranopia, SeeAs::Tritanopia, SeeAs::Greyscale}) {
    ExportOptions o = opt;
    o.seeAs = kind;
    FigureLayout l2;
    auto png = renderHeatmap(s, ImageFormat::Png, o, &l2);
    ASSERT_TRUE(png.ok()) << png.error().message;
    const Image img = decodePng(*png);
    ASSERT_EQ(img.width, n.width);
    ASSERT_EQ(img.height, n.height);
    const HeatmapLayout& p = layout.panels[0];
    int bad = 0;
    for (int r = 0; r < s.rows; ++r) {
      for (int c = 0; c < s.cols; ++c) {
        for (auto [fx, fy] : {std::pair{0.1, 0.1}, std::pair{0.5, 0.5}}) {  // a fill pixel, the centre (a mark or the fill)
          const int x = static_cast<int>(p.x0 + (c + fx) * p.cellW), y = static_cast<int>(p.y0 + (r + fy) * p.cellH);
          if (img.at(x, y) != seeAsColor(kind, n.at(x, y)) && ++bad <= 5) {
            ADD_FAILURE() << seeAsName(kind) << ": cell (" << r << ", " << c << ") pixel (" << x << ", " << y << ")";
          }
        }
      }
    }
    EXPECT_EQ(bad, 0) << seeAsName(kind);
    // The colour bar: a column through its middle, every table band.
    const int bx = static_cast<int>(layout.barX + layout.barW / 2);
    int changed = 0;
    for (int y = static_cast<int>(layout.barY) + 1; y < static_cast<int>(layout.barY + layout.barH) - 1; ++y) {
      EXPECT_EQ(img.at(bx, y), seeAsColor(kind, n.at(bx, y))) << seeAsName(kind) << " colour bar row " << y;
      changed += img.at(bx, y) != n.at(bx, y);
    }
    EXPECT_GT(changed, 50) << seeAsName(kind) << ": the colour bar did not change";
    EXPECT_EQ(img.at(1, 1), (RGBA8{255, 255, 255, 255})) << seeAsName(kind);
  }
}
}  // namespace mhascope
