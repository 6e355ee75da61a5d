// Training pictures (core/export/training_figures, axis_ticks): tick values, the contact sheet's
// cells in the exact colormap colours with the causal blocked cells, curves in three formats, and
// errors that name the problem and leave no file behind.
#include "export/training_figures.hpp"

#include <cairo.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>

#include "color/colormap.hpp"
#include "export/axis_ticks.hpp"

namespace mhascope {
namespace {

namespace fs = std::filesystem;

TEST(AxisTicks, LinearTicksAreNiceStepsInsideTheRange) {
  const auto t = axisTicks({0, 4.1}, false, 5);
  ASSERT_EQ(t, (std::vector<double>{0, 1, 2, 3, 4}));
  const auto u = axisTicks({0, 1500}, false, 6);
  ASSERT_EQ(u.front(), 0);
  ASSERT_EQ(u.back(), 1500);
  EXPECT_EQ(u, (std::vector<double>{0, 500, 1000, 1500}));  // steps of 1, 2 or 5 x 10^k
}

TEST(AxisTicks, LogAxisUsesDecadesAndPositiveValuesOnly) {
  const AxisRange r = axisRange({0.03, 4.2, 0.0, -1.0}, true, false);
  EXPECT_DOUBLE_EQ(r.lo, 0.01);
  EXPECT_DOUBLE_EQ(r.hi, 10);
  EXPECT_EQ(axisTicks(r, true), (std::vector<double>{0.01, 0.1, 1, 10}));
  EXPECT_NEAR(axisFraction(r, true, 0.1), 1.0 / 3.0, 1e-12);
  EXPECT_EQ(tickLabel(1e-3), "1e-3");
  EXPECT_EQ(tickLabel(0.5), "0.5");
  EXPECT_EQ(tickLabel(1500), "1500");
}

// Pixels of exactly colour c in a PNG.
int countColor(const std::string& png, RGBA8 c) {
  struct Reader {
    const std::string* bytes;
    std::size_t pos = 0;
  } reader{&png};
  cairo_surface_t* s = cairo_image_surface_create_from_png_stream(
      [](void* closure, unsigned char* data, unsigned int length) {
        auto* r = static_cast<Reader*>(closure);
        if (r->pos + length > r->bytes->size()) return CAIRO_STATUS_READ_ERROR;
        std::memcpy(data, r->bytes->data() + r->pos, length);
        r->pos += length;
        return CAIRO_STATUS_SUCCESS;
      },
      &reader);
  EXPECT_EQ(cairo_surface_status(s), CAIRO_STATUS_SUCCESS);
  const int w = cairo_image_surface_get_width(s), h = cairo_image_surface_get_height(s);
  const int stride = cairo_image_surface_get_stride(s);
  const unsigned char* d = cairo_image_surface_get_data(s);
  int n = 0;
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const auto* p = reinterpret_cast<const std::uint32_t*>(d + y * stride) + x;
      if (((*p >> 16) & 0xff) == c.r && ((*p >> 8) & 0xff) == c.g && (*p & 0xff) == c.b) ++n;
    }
  }
  cairo_surface_destroy(s);
  return n;
}

ContactSheet sheetOf(int T, int heads, int steps, float value) {
  ContactSheet s;
  s.title = "test sheet";
  s.seq = T;
  for (int t = 0; t < T; ++t) s.tokens.push_back("a" + std::to_string(t));
  for (int h = 0; h < heads; ++h) s.rowTitles.push_back("layer 0 head " + std::to_string(h));
  for (int k = 0; k < steps; ++k) s.steps.push_back(100 * k);
  s.maps.assign(static_cast<std::size_t>(heads * steps), std::vector<float>(static_cast<std::size_t>(T * T), value));
  return s;
}

TEST(ContactSheet, EveryCellHasItsExactColourAndTheCausalCellsAreBlocked) {
  const int T = 8;  // 14-pixel cells
  const ContactSheet s = sheetOf(T, 1, 2, 0.8f);
  auto png = renderContactSheet(s, ImageFormat::Png);
  ASSERT_TRUE(png) << png.error().message;
  const int cell = 14 * 14, allowed = 2 * T * (T + 1) / 2 * cell, blocked = 2 * T * (T - 1) / 2 * cell;
  const int valueColour = countColor(*png, mapValue(ColormapId::Viridis, {0, 1}, 0.8f));
  EXPECT_GE(valueColour, allowed);
  EXPECT_LE(valueColour, allowed + 400);  // the colour bar's band of the same colour
  // (a few antialiased text pixels may share the dark grey)
  const int grey = countColor(*png, blockedColor(ColormapId::Viridis));
  EXPECT_GE(grey, blocked);
  EXPECT_LE(grey, blocked + 100);
  ContactSheet open = s;
  open.causal = false;
  EXPECT_LE(countColor(*renderContactSheet(open, ImageFormat::Png), blockedColor(ColormapId::Viridis)), 100);
}

TEST(ContactSheet, BadShapesAreNamed) {
  ContactSheet s = sheetOf(4, 2, 3, 0.5f);
  s.maps.pop_back();
  auto r = renderContactSheet(s, ImageFormat::Png);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("needs 6 maps, got 5"), std::string::npos) << r.error().message;
  ContactSheet none = sheetOf(4, 0, 3, 0.5f);
  EXPECT_FALSE(renderContactSheet(none, ImageFormat::Png));
  ContactSheet wrong = sheetOf(4, 1, 1, 0.5f);
  wrong.maps[0].resize(15);
  EXPECT_FALSE(renderContactSheet(wrong, ImageFormat::Svg));
}

CurvesFigure curves() {
  CurvesFigure f;
  f.title = "curves";
  f.markStep = 50;
  CurvePanel loss{"probe loss", {{"loss", {0, 50, 100}, {4.1, 1.0, 0.2}, 0xd62728, false}}, true, true, {}};
  CurvePanel score{"induction", {{"layer 1 head 0", {0, 50, 100}, {0.05, 0.2, 0.5}, 0x1f77b4, true}}, false, true, {0.3}};
  f.panels = {loss, score};
  return f;
}

TEST(Curves, RenderInEveryFormat) {
  auto png = renderCurves(curves(), ImageFormat::Png);
  ASSERT_TRUE(png) << png.error().message;
  EXPECT_EQ(png->substr(1, 3), "PNG");
  EXPECT_GT(countColor(*png, {0xd6, 0x27, 0x28, 255}), 50);  // the loss line is drawn
  auto svg = renderCurves(curves(), ImageFormat::Svg);
  ASSERT_TRUE(svg);
  EXPECT_NE(svg->find("<svg"), std::string::npos);
  auto pdf = renderCurves(curves(), ImageFormat::Pdf);
  ASSERT_TRUE(pdf);
  EXPECT_EQ(pdf->substr(0, 5), "%PDF-");
  CurvesFigure bad = curves();
  bad.panels[0].series[0].ys.pop_back();
  EXPECT_FALSE(renderCurves(bad, ImageFormat::Png));
}

TEST(TrainingExport, FailedExportNamesThePathAndWritesNothing) {
  const fs::path dir = fs::temp_directory_path() / "mhascope_training_figures_test";
  fs::remove_all(dir);
  const std::string missing = (dir / "nope" / "sheet.png").string();
  auto st = exportContactSheet(missing, sheetOf(4, 1, 1, 0.5f));
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message.find(missing), std::string::npos) << st.error().message;
  EXPECT_FALSE(fs::exists(missing));
  EXPECT_FALSE(exportCurves((dir / "curves.gif").string(), curves()));
  fs::create_directories(dir);
  ASSERT_TRUE(exportCurves((dir / "curves.pdf").string(), curves()));
  EXPECT_GT(fs::file_size(dir / "curves.pdf"), 500u);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace mhascope
