// The comparison picture (core/export/compare_figure.hpp): A | B | B − A side by side, each cell of
// B − A in the diverging map's colour of its value over the symmetric range; A | B alone when there
// is no difference; nothing written on an error.
#include "export/compare_figure.hpp"

#include <cairo.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

namespace mhascope {
namespace {

Slice2D square(const std::vector<float>& data, int n) {
  Slice2D s;
  s.stage = StageId::Scores;
  s.head = 0;
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
  return s;
}

struct Png {
  int width = 0, height = 0;
  std::vector<std::uint32_t> px;
  std::uint32_t at(int x, int y) const { return px[static_cast<std::size_t>(y * width + x)] & 0xFFFFFFu; }
};

struct Reader {
  const std::string* bytes;
  std::size_t pos;
};

cairo_status_t readBytes(void* closure, unsigned char* data, unsigned int length) {
  auto* r = static_cast<Reader*>(closure);
  if (r->pos + length > r->bytes->size()) return CAIRO_STATUS_READ_ERROR;
  std::memcpy(data, r->bytes->data() + r->pos, length);
  r->pos += length;
  return CAIRO_STATUS_SUCCESS;
}

Png decode(const std::string& bytes) {
  Reader r{&bytes, 0};
  cairo_surface_t* s = cairo_image_surface_create_from_png_stream(readBytes, &r);
  Png p;
  if (cairo_surface_status(s) == CAIRO_STATUS_SUCCESS) {
    cairo_surface_flush(s);
    p.width = cairo_image_surface_get_width(s);
    p.height = cairo_image_surface_get_height(s);
    const int stride = cairo_image_surface_get_stride(s);
    const unsigned char* d = cairo_image_surface_get_data(s);
    p.px.resize(static_cast<std::size_t>(p.width * p.height));
    for (int y = 0; y < p.height; ++y) std::memcpy(&p.px[static_cast<std::size_t>(y * p.width)], d + y * stride, p.width * 4u);
  }
  cairo_surface_destroy(s);
  return p;
}

TEST(CompareFigure, ThreeMapsSideBySideAndTheDifferenceOnItsSymmetricScale) {
  const std::vector<float> va = {0.5f, -1.0f, 2.0f, 0.0f}, vb = {0.25f, 1.0f, 2.0f, -0.5f};
  const Slice2D a = square(va, 2), b = square(vb, 2);
  auto d = sliceDifference(a, b);
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->hi, 2.0f);  // the largest |B − A|: 1 − (−1)
  ComparisonPicture pic;
  pic.a = &a;
  pic.b = &b;
  pic.titleA = "A";
  pic.titleB = "B";
  pic.difference = &*d;
  pic.differenceTitle = "B − A";
  auto bytes = renderComparison(pic, ImageFormat::Png);
  ASSERT_TRUE(bytes.ok()) << bytes.error().message;
  const Png img = decode(*bytes);

  // Where each part lands: the same layouts the single-heatmap export gives, one after the other.
  ExportOptions sides;
  sides.colormap = ColormapId::Diverging;
  sides.range = unionRange(rangeFor(DataKind::Signed, va.data(), 4), rangeFor(DataKind::Signed, vb.data(), 4));
  sides.title = "A";
  auto la = layoutHeatmap(a, sides);
  sides.title = "B";
  auto lb = layoutHeatmap(b, sides);
  const Slice2D diff = differenceSlice(*d, a);
  ExportOptions dOpt;
  dOpt.colormap = ColormapId::Diverging;
  dOpt.range = ColorRange{d->lo, d->hi};
  dOpt.title = "B − A";
  auto ld = layoutHeatmap(diff, dOpt);
  ASSERT_TRUE(la.ok() && lb.ok() && ld.ok());
  EXPECT_EQ(img.width, la->width + lb->width + ld->width);
  const HeatmapLayout& p = ld->panels[0];
  const int x0 = la->width + lb->width;
  for (int r = 0; r < 2; ++r) {
    for (int c = 0; c < 2; ++c) {
      // Near the cell's corner: the number, when drawn, sits in the middle.
      const int x = x0 + static_cast<int>(p.x0 + c * p.cellW) + 2, y = static_cast<int>(p.y0 + r * p.cellH) + 2;
      const RGBA8 want = mapValue(ColormapId::Diverging, ColorRange{-2.0f, 2.0f}, vb[r * 2 + c] - va[r * 2 + c]);
      const std::uint32_t got = img.at(x, y);
      EXPECT_EQ(got, (std::uint32_t{want.r} << 16) | (std::uint32_t{want.g} << 8) | want.b) << "cell " << r << "," << c;
    }
  }

  // No difference: A | B alone.
  pic.difference = nullptr;
  pic.noDifferenceReason = "different T";
  auto two = renderComparison(pic, ImageFormat::Png);
  ASSERT_TRUE(two.ok());
  EXPECT_LT(decode(*two).width, img.width);
  auto svg = renderComparison(pic, ImageFormat::Svg);
  ASSERT_TRUE(svg.ok());
  EXPECT_NE(svg->find("<svg"), std::string::npos);
}

TEST(CompareFigure, NothingWrittenOnAnError) {
  const std::vector<float> v = {1, 2, 3, 4};
  const Slice2D a = square(v, 2);
  ComparisonPicture pic;
  pic.a = &a;
  EXPECT_FALSE(renderComparison(pic, ImageFormat::Png).ok());
  pic.b = &a;
  const std::string missing = (std::filesystem::temp_directory_path() / "no_such_folder_mhascope" / "c.png").string();
  const Status st = exportComparison(missing, pic);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("no_such_folder_mhascope"), std::string::npos) << st.error().message;
  EXPECT_FALSE(std::filesystem::exists(missing));
}

}  // namespace
}  // namespace mhascope
