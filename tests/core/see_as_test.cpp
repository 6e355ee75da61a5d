// The "see as" preview: known colours against an independent reference (numpy, from the
// published matrices: scripts/gen_see_as_fixtures.py), greys kept grey, the 8-bit, [0, 1] and
// in-place paths agreeing; and, over every colormap × preview, the default map still readable
// and blocked cells, NaN cells and fully masked rows told apart from values by a pattern whose
// lightness stands out from its fill — never by hue alone.
#include "color/see_as.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <sstream>
#include <vector>

namespace mhascope {
namespace {

std::string readText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// CIELAB (D65) of an 8-bit sRGB colour, written out here from the CIE formulas (not see_as.cpp's).
std::array<double, 3> lab(RGBA8 c) {
  auto lin = [](int v) {
    const double x = v / 255.0;
    return x <= 0.04045 ? x / 12.92 : std::pow((x + 0.055) / 1.055, 2.4);
  };
  const double r = lin(c.r), g = lin(c.g), b = lin(c.b);
  const double X = (0.4124564 * r + 0.3575761 * g + 0.1804375 * b) / 0.95047;
  const double Y = 0.2126729 * r + 0.7151522 * g + 0.0721750 * b;
  const double Z = (0.0193339 * r + 0.1191920 * g + 0.9503041 * b) / 1.08883;
  auto f = [](double t) { return t > 216.0 / 24389.0 ? std::cbrt(t) : (24389.0 / 27.0 * t + 16.0) / 116.0; };
  return {116.0 * f(Y) - 16.0, 500.0 * (f(X) - f(Y)), 200.0 * (f(Y) - f(Z))};
}
double deltaE(RGBA8 a, RGBA8 b) {
  const auto p = lab(a), q = lab(b);
  return std::sqrt((p[0] - q[0]) * (p[0] - q[0]) + (p[1] - q[1]) * (p[1] - q[1]) + (p[2] - q[2]) * (p[2] - q[2]));
}

TEST(SeeAs, KnownColoursMatchTheReference) {
  const auto j = nlohmann::json::parse(readText(std::string(MHASCOPE_FIXTURES_DIR) + "/color/see_as.json"));
  ASSERT_GE(j["cases"].size(), 10u);
  int checked = 0, bad = 0;
  for (const auto& c : j["cases"]) {
    const RGBA8 in{c["rgb"][0].get<std::uint8_t>(), c["rgb"][1].get<std::uint8_t>(), c["rgb"][2].get<std::uint8_t>(), 255};
    EXPECT_EQ(seeAsColor(SeeAs::Normal, in), in);
    for (SeeAs kind : {SeeAs::Protanopia, SeeAs::Deuteranopia, SeeAs::Tritanopia, SeeAs::Greyscale}) {
      const auto& want = c[seeAsName(kind)];
      const RGBA8 got = seeAsColor(kind, in);
      const RGBA8 ref{want[0].get<std::uint8_t>(), want[1].get<std::uint8_t>(), want[2].get<std::uint8_t>(), 255};
      ++checked;
      if (got != ref && ++bad <= 5) {
        ADD_FAILURE() << seeAsName(kind) << " of (" << int{in.r} << "," << int{in.g} << "," << int{in.b} << "): got ("
                      << int{got.r} << "," << int{got.g} << "," << int{got.b} << "), reference (" << int{ref.r} << ","
                      << int{ref.g} << "," << int{ref.b} << ")";
      }
    }
  }
  EXPECT_EQ(bad, 0) << "of " << checked;
  // Two by hand from the severity-1.0 matrices: pure red loses most of its light for a protanope
  // (row sums of the red column: 0.152, 0.115, -0.004 of linear 1.0) and keeps it as a dark olive.
  EXPECT_EQ(seeAsColor(SeeAs::Protanopia, RGBA8{255, 0, 0, 255}), (RGBA8{109, 95, 0, 255}));
  EXPECT_EQ(seeAsColor(SeeAs::Greyscale, RGBA8{0, 0, 255, 255}), (RGBA8{76, 76, 76, 255}));  // Y = 0.0722
}

TEST(SeeAs, GreysStayGreyAndThePathsAgree) {
  for (SeeAs kind : allSeeAs()) {
    for (int v = 0; v < 256; v += 5) {
      const auto u = static_cast<std::uint8_t>(v);
      const RGBA8 g = seeAsColor(kind, RGBA8{u, u, u, 77});
      EXPECT_NEAR(g.r, v, 1) << seeAsName(kind);
      EXPECT_EQ(g.r, g.g);
      EXPECT_EQ(g.g, g.b);
      EXPECT_EQ(g.a, 77);  // alpha kept
    }
    std::vector<std::uint8_t> px;
    std::vector<RGBA8> colours;
    for (int i = 0; i < 300; ++i) {
      const RGBA8 c{static_cast<std::uint8_t>(i * 37), static_cast<std::uint8_t>(i * 91 + 3), static_cast<std::uint8_t>(i * 13 + 100), 255};
      colours.push_back(c);
      px.insert(px.end(), {c.r, c.g, c.b, c.a});
    }
    seeAsPixels(kind, px.data(), colours.size());
    for (std::size_t i = 0; i < colours.size(); ++i) {
      const RGBA8 want = seeAsColor(kind, colours[i]);
      ASSERT_EQ((RGBA8{px[4 * i], px[4 * i + 1], px[4 * i + 2], px[4 * i + 3]}), want) << seeAsName(kind) << " " << i;
      const Rgb01 f = seeAsRgb(kind, Rgb01{colours[i].r / 255.0, colours[i].g / 255.0, colours[i].b / 255.0});
      EXPECT_NEAR(f.r * 255.0, want.r, 0.5 + 1e-9) << seeAsName(kind);
      EXPECT_NEAR(f.g * 255.0, want.g, 0.5 + 1e-9) << seeAsName(kind);
      EXPECT_NEAR(f.b * 255.0, want.b, 0.5 + 1e-9) << seeAsName(kind);
    }
  }
}

TEST(SeeAs, NamesRoundTripAndUnknownNamesAreErrors) {
  for (SeeAs kind : allSeeAs()) {
    auto back = seeAsFromName(seeAsName(kind));
    ASSERT_TRUE(back.ok()) << seeAsName(kind);
    EXPECT_EQ(*back, kind);
  }
  EXPECT_EQ(*seeAsFromName("GrayScale"), SeeAs::Greyscale);
  auto bad = seeAsFromName("sepia");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("'sepia'"), std::string::npos) << bad.error().message;
  EXPECT_NE(bad.error().message.find("deuteranopia"), std::string::npos) << bad.error().message;
}

// Why viridis stays the weights' default: for every preview its lightness still rises from one
// end to the other (so order is read by lightness alone), and for the red-green deficiencies its
// ends stay as far apart as in normal vision. cividis and the sequential maps keep the same order.
TEST(SeeAs, SequentialMapsStayOrderedInEveryPreview) {
  for (ColormapId id : {ColormapId::Viridis, ColormapId::Cividis, ColormapId::Magma, ColormapId::Gray}) {
    for (SeeAs kind : allSeeAs()) {
      for (int i = 1; i < kColormapEntries; ++i) {
        EXPECT_GE(lightnessOf(seeAsColor(kind, tableColor(id, i))), lightnessOf(seeAsColor(kind, tableColor(id, i - 1))) - 0.6)
            << colormapName(id) << " seen as " << seeAsName(kind) << " entry " << i;
      }
    }
  }
  for (SeeAs kind : {SeeAs::Protanopia, SeeAs::Deuteranopia}) {
    EXPECT_GT(deltaE(seeAsColor(kind, tableColor(ColormapId::Viridis, 0)), seeAsColor(kind, tableColor(ColormapId::Viridis, 255))), 120.0)
        << seeAsName(kind);
  }
}

// A diverging map's sign is in its hue (both halves are equally light by design): for each
// deficiency the two halves must stay apart — entry i and its mirror 255 - i, away from the centre.
TEST(SeeAs, DivergingHalvesStayApartForEachDeficiency) {
  for (ColormapId id : {ColormapId::Diverging, ColormapId::Coolwarm}) {
    for (SeeAs kind : {SeeAs::Normal, SeeAs::Protanopia, SeeAs::Deuteranopia, SeeAs::Tritanopia}) {
      const double ends = deltaE(seeAsColor(kind, tableColor(id, 0)), seeAsColor(kind, tableColor(id, 255)));
      EXPECT_GT(ends, 60.0) << colormapName(id) << " seen as " << seeAsName(kind);
      for (int i = 0; i < 96; ++i) {  // a quarter of the range from 0 on either side and beyond
        EXPECT_GT(deltaE(seeAsColor(kind, tableColor(id, i)), seeAsColor(kind, tableColor(id, 255 - i))), 15.0)
            << colormapName(id) << " seen as " << seeAsName(kind) << " entries " << i << " / " << 255 - i;
      }
    }
  }
}

// The cells that hold no value, over every map and preview: each carries a mark (the blocked
// cell's cross, the NaN cell's dot, the fully masked row's red frame) whose lightness differs from
// what it is drawn on by at least kContrast L*, so it shows whatever the hues become; and the
// marks' shapes differ from each other. Values carry no mark. The fills alone are not enough:
// in greyscale the NaN magenta and the blocked grey each equal some table entry's lightness.
TEST(SeeAs, BlockedMaskedAndNanCellsDifferFromValuesByPatternNotHue) {
  constexpr double kContrast = 30.0;  // L*: a plainly visible mark on any screen
  for (ColormapId id : allColormaps()) {
    for (SeeAs kind : allSeeAs()) {
      const std::string what = std::string(colormapName(id)) + " seen as " + seeAsName(kind);
      auto L = [&](RGBA8 c) { return lightnessOf(seeAsColor(kind, c)); };
      EXPECT_GE(std::abs(L(blockedMarkColor()) - L(blockedColor(id))), kContrast) << what << ": blocked cross on its fill";
      EXPECT_GE(std::abs(L(nanMarkColor()) - L(nanColor())), kContrast) << what << ": NaN dot on magenta";
      EXPECT_GE(std::abs(L(maskedRowColor()) - L(maskedRowEdgeColor())), kContrast) << what << ": masked row frame";
      // The frame (red inside a near-black edge) shows on every value: one of its two tones
      // stands out from each table entry.
      for (int i = 0; i < kColormapEntries; ++i) {
        const double cell = L(tableColor(id, i));
        EXPECT_GE(std::max(std::abs(L(maskedRowColor()) - cell), std::abs(L(maskedRowEdgeColor()) - cell)), kContrast / 2)
            << what << " entry " << i;
      }
      // Two patterns, light on dark (the cross) and dark on lighter (the dot), whatever the hues.
      EXPECT_GT(L(blockedMarkColor()), L(blockedColor(id))) << what;
      EXPECT_LT(L(nanMarkColor()), L(nanColor())) << what;
    }
  }
}

}  // namespace
}  // namespace mhascope
