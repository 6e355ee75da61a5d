// Training pictures (core/export/training_figures, axis_ticks): tick values, the contact sheet's
// cells in the exact colormap colours with the causal blocked cells, curves in three formats, and
// errors that name the problem and leave no file behind; the training animation, its GIF decoded by
// giflib and each frame compared with the contact sheet and curves pictures of its step.
#include "export/training_figures.hpp"

#include <cairo.h>
#include <gif_lib.h>
#include <gtest/gtest.h>

#include <algorithm>
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

// A PNG's pixels, read back through cairo's PNG reader.
struct Rgb {
  int w = 0, h = 0;
  std::vector<std::uint8_t> px;  // RGB
  const std::uint8_t* at(int x, int y) const { return &px[(static_cast<std::size_t>(y) * static_cast<std::size_t>(w) + static_cast<std::size_t>(x)) * 3]; }
};

Rgb decodePngRgb(const std::string& png) {
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
  Rgb out;
  if (cairo_surface_status(s) == CAIRO_STATUS_SUCCESS) {
    out.w = cairo_image_surface_get_width(s);
    out.h = cairo_image_surface_get_height(s);
    const int stride = cairo_image_surface_get_stride(s);
    const unsigned char* d = cairo_image_surface_get_data(s);
    for (int y = 0; y < out.h; ++y) {
      for (int x = 0; x < out.w; ++x) {
        std::uint32_t v;
        std::memcpy(&v, d + y * stride + 4 * x, 4);
        out.px.insert(out.px.end(), {static_cast<std::uint8_t>(v >> 16), static_cast<std::uint8_t>(v >> 8), static_cast<std::uint8_t>(v)});
      }
    }
  }
  cairo_surface_destroy(s);
  return out;
}

// Pixels of exactly colour c in a PNG.
int countColor(const std::string& png, RGBA8 c) {
  const Rgb img = decodePngRgb(png);
  EXPECT_GT(img.w, 0) << "not a PNG";
  int n = 0;
  for (int y = 0; y < img.h; ++y) {
    for (int x = 0; x < img.w; ++x) {
      const std::uint8_t* p = img.at(x, y);
      if (p[0] == c.r && p[1] == c.g && p[2] == c.b) ++n;
    }
  }
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

// ---------------------------------------------------------------------------------------------
// The training animation: a decoded GIF's frames against the exporter's own pictures.
// ---------------------------------------------------------------------------------------------

// Every frame of a GIF through giflib's own reader (DGifSlurp), with its delay.
struct DecodedGif {
  int w = 0, h = 0;
  std::vector<Rgb> frames;
  std::vector<int> delays;
};
DecodedGif decodeGif(const std::string& bytes) {
  struct Reader {
    const std::string* bytes;
    std::size_t pos = 0;
  } reader{&bytes};
  int err = 0;
  GifFileType* gif = DGifOpen(&reader, [](GifFileType* g, GifByteType* data, int n) {
    auto* r = static_cast<Reader*>(g->UserData);
    const int take = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(n), r->bytes->size() - r->pos));
    std::memcpy(data, r->bytes->data() + r->pos, static_cast<std::size_t>(take));
    r->pos += static_cast<std::size_t>(take);
    return take;
  }, &err);
  DecodedGif out;
  if (!gif) return out;
  if (DGifSlurp(gif) == GIF_OK) {
    out.w = gif->SWidth;
    out.h = gif->SHeight;
    for (int i = 0; i < gif->ImageCount; ++i) {
      const SavedImage& im = gif->SavedImages[i];
      const ColorMapObject* map = im.ImageDesc.ColorMap ? im.ImageDesc.ColorMap : gif->SColorMap;
      Rgb f;
      f.w = im.ImageDesc.Width;
      f.h = im.ImageDesc.Height;
      for (int p = 0; p < f.w * f.h; ++p) {
        const GifColorType c = map->Colors[im.RasterBits[p]];
        f.px.insert(f.px.end(), {c.Red, c.Green, c.Blue});
      }
      out.frames.push_back(std::move(f));
      GraphicsControlBlock gcb{};
      DGifSavedExtensionToGCB(gif, i, &gcb);
      out.delays.push_back(gcb.DelayTime);
    }
  }
  DGifCloseFile(gif, &err);
  return out;
}

// Two heads over three steps of a probe of 6 tokens: head 0 turns from uniform to previous-token,
// head 1 from uniform to its own token; loss falling, accuracy rising.
TrainingAnimation sampleAnimation() {
  TrainingAnimation a;
  ContactSheet& s = a.sheet;
  s.title = "induction · 1 layer × 2 heads · attention on the probe sequence";
  s.rowTitles = {"layer 0 head 0", "layer 0 head 1"};
  s.steps = {0, 100, 200};
  s.seq = 6;
  s.tokens = {"a", "b", "c", "a", "b", "c"};
  for (int head = 0; head < 2; ++head) {
    for (int k = 0; k < 3; ++k) {
      std::vector<float> m(36, 0.0f);
      const float sharp = 0.5f * static_cast<float>(k);
      for (int q = 0; q < 6; ++q) {
        const int target = head == 0 ? std::max(0, q - 1) : q;
        for (int key = 0; key <= q; ++key) m[static_cast<std::size_t>(q * 6 + key)] = (1.0f - sharp) / static_cast<float>(q + 1);
        m[static_cast<std::size_t>(q * 6 + target)] += sharp;
      }
      s.maps.push_back(m);
    }
  }
  // (maps by head, then step: row-major over the sheet's heads x steps)
  CurveSeries loss{"probe loss", {0, 50, 100, 150, 200}, {2.3, 2.0, 1.2, 0.5, 0.2}, 0xd62728, false};
  CurveSeries acc{"probe accuracy", {0, 50, 100, 150, 200}, {0.1, 0.2, 0.5, 0.8, 0.95}, 0x2ca02c, false};
  a.curves.title = "induction · probe batch";
  a.curves.panels = {{"probe loss (nats)", {loss}, false, true, {}}, {"probe accuracy", {acc}, false, true, {}}};
  return a;
}

TEST(TrainingAnimation, DecodedFramesAreTheExportersPicturesAtTheSameSteps) {
  const TrainingAnimation a = sampleAnimation();
  auto gif = renderTrainingGif(a);
  ASSERT_TRUE(gif) << gif.error().message;
  ASSERT_EQ(gif->compare(0, 6, "GIF89a"), 0);
  const DecodedGif d = decodeGif(*gif);
  ASSERT_EQ(d.frames.size(), 3u);
  for (std::size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(d.delays[k], kDefaultAnimationDelay);
    // The exporter's two pictures of step k: the contact sheet of that one step, the curves marked at it.
    ContactSheet one = a.sheet;
    one.steps = {a.sheet.steps[k]};
    one.maps = {a.sheet.maps[k], a.sheet.maps[3 + k]};
    CurvesFigure curves = a.curves;
    curves.markStep = a.sheet.steps[k];
    auto sheetPng = renderContactSheet(one, ImageFormat::Png);
    auto curvesPng = renderCurves(curves, ImageFormat::Png);
    ASSERT_TRUE(sheetPng && curvesPng);
    const Rgb sp = decodePngRgb(*sheetPng), cp = decodePngRgb(*curvesPng);
    const Rgb& f = d.frames[k];
    ASSERT_EQ(f.w, sp.w + cp.w) << "frame " << k;
    ASSERT_EQ(f.h, std::max(sp.h, cp.h)) << "frame " << k;
    // Pixel by pixel, the heads at the left and the curves at their right. The palette may move
    // an antialiased edge's colour; flat colours (cells, paper, ink, curves) stay exact.
    long long sum = 0, far = 0, off = 0, n = 0;
    int worst = 0;
    auto compare = [&](const Rgb& pic, int x0) {
      for (int y = 0; y < pic.h; ++y) {
        for (int x = 0; x < pic.w; ++x) {
          int e = 0;
          for (int c = 0; c < 3; ++c) e = std::max(e, std::abs(int{pic.at(x, y)[c]} - int{f.at(x0 + x, y)[c]}));
          sum += e;
          far += e > 24;
          off += e > 0;
          worst = std::max(worst, e);
          ++n;
        }
      }
    };
    compare(sp, 0);
    compare(cp, sp.w);
    // (measured: mean 0.06, 0.5 % of the pixels not exact, 0.08 % off by more than 24, worst 82)
    EXPECT_LE(static_cast<double>(sum) / static_cast<double>(n), 0.3) << "frame " << k << ": mean |error|, worst " << worst;
    EXPECT_LE(static_cast<double>(off) / static_cast<double>(n), 0.02) << "frame " << k << ": pixels not exact";
    EXPECT_LE(static_cast<double>(far) / static_cast<double>(n), 0.002) << "frame " << k << ": pixels off by more than 24";
  }
  // The frames differ: the attention sharpens and the mark moves.
  EXPECT_NE(d.frames[0].px, d.frames[2].px);
}

TEST(TrainingAnimation, BoundsAndBadInputsAreErrors) {
  EXPECT_EQ(evenlySpaced(10, 4), (std::vector<std::size_t>{0, 3, 6, 9}));
  EXPECT_EQ(evenlySpaced(3, 40), (std::vector<std::size_t>{0, 1, 2}));
  EXPECT_EQ(evenlySpaced(5, 1), (std::vector<std::size_t>{4}));
  EXPECT_TRUE(evenlySpaced(0, 5).empty());
  TrainingAnimation a = sampleAnimation();
  a.delayCentiseconds = 1;
  auto bad = renderTrainingGif(a);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("got 1"), std::string::npos) << bad.error().message;
  a = sampleAnimation();
  a.sheet.steps.assign(static_cast<std::size_t>(kMaxAnimationFrames) + 1, 0);
  bad = renderTrainingGif(a);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("at most " + std::to_string(kMaxAnimationFrames)), std::string::npos) << bad.error().message;
  const fs::path dir = fs::temp_directory_path() / "mhascope_anim_test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto st = exportTrainingGif((dir / "a.png").string(), sampleAnimation());
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message.find(".gif"), std::string::npos) << st.error().message;
  EXPECT_FALSE(fs::exists(dir / "a.png"));
  ASSERT_TRUE(exportTrainingGif((dir / "a.gif").string(), sampleAnimation()));
  EXPECT_GT(fs::file_size(dir / "a.gif"), 1000u);
  EXPECT_FALSE(exportTrainingGif((dir / "missing" / "a.gif").string(), sampleAnimation()));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace mhascope
