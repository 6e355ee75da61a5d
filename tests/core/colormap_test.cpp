// Colour mapping: endpoints and midpoints land on the right table entries, signed ranges are
// symmetric, NaN / blocked colours are far from every table colour, every entry inverts back to
// its own value, and the tables keep the properties the generator promised (distinct entries,
// diverging lightness symmetric and rising toward the centre).
#include "color/colormap.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace mhascope {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

double rgbDistance(RGBA8 a, RGBA8 b) {
  const double dr = a.r - b.r, dg = a.g - b.g, db = a.b - b.b;
  return std::sqrt(dr * dr + dg * dg + db * db);
}

// CIE L* of an 8-bit sRGB colour: an independent reference for the lightness checks.
double lightness(RGBA8 c) {
  auto lin = [](double v) {
    v /= 255.0;
    return v <= 0.04045 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4);
  };
  const double y = 0.2126729 * lin(c.r) + 0.7151522 * lin(c.g) + 0.0721750 * lin(c.b);
  const double f = y > 216.0 / 24389.0 ? std::cbrt(y) : (24389.0 / 27.0 * y + 16.0) / 116.0;
  return 116.0 * f - 16.0;
}

TEST(Colormap, NamesRoundTripAndUnknownNameIsAnError) {
  for (ColormapId id : allColormaps()) {
    auto back = colormapFromName(colormapName(id));
    ASSERT_TRUE(back.ok()) << colormapName(id);
    EXPECT_EQ(*back, id);
  }
  EXPECT_EQ(*colormapFromName("VIRIDIS"), ColormapId::Viridis);
  EXPECT_EQ(*colormapFromName("grey"), ColormapId::Gray);
  auto bad = colormapFromName("jet");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("'jet'"), std::string::npos) << bad.error().message;
  EXPECT_NE(bad.error().message.find("viridis"), std::string::npos) << bad.error().message;
}

TEST(Colormap, DataKindPicksTheMap) {
  EXPECT_EQ(defaultColormap(DataKind::Signed), ColormapId::Diverging);
  EXPECT_EQ(defaultColormap(DataKind::Probability), ColormapId::Viridis);
}

TEST(Colormap, EndpointsAndMidpointsMapToTheRightEntries) {
  const ColorRange r{0.0f, 1.0f};
  EXPECT_EQ(tableIndex(r, 0.0f), 0);
  EXPECT_EQ(tableIndex(r, 1.0f), 255);
  EXPECT_EQ(tableIndex(r, 0.5f), 128);  // 127.5 rounds up
  EXPECT_EQ(tableIndex(r, 100.0f / 255.0f), 100);
  EXPECT_EQ(tableIndex(r, -3.0f), 0);    // clamped
  EXPECT_EQ(tableIndex(r, 7.0f), 255);   // clamped
  EXPECT_EQ(tableIndex(r, kInf), 255);   // +inf → top
  EXPECT_EQ(tableIndex(r, -kInf), -1);   // no entry: the blocked colour
  EXPECT_EQ(tableIndex(r, kNan), -1);
  for (ColormapId id : allColormaps()) {
    EXPECT_EQ(mapValue(id, r, 0.0f), tableColor(id, 0));
    EXPECT_EQ(mapValue(id, r, 1.0f), tableColor(id, 255));
    EXPECT_EQ(mapValue(id, r, kInf), tableColor(id, 255));
    EXPECT_EQ(mapValue(id, r, kNan), nanColor());
    EXPECT_EQ(mapValue(id, r, -kInf), blockedColor(id));
  }
  // Viridis' published end colours (#440154 and #fde725).
  EXPECT_EQ(tableColor(ColormapId::Viridis, 0), (RGBA8{68, 1, 84, 255}));
  EXPECT_EQ(tableColor(ColormapId::Viridis, 255), (RGBA8{253, 231, 37, 255}));
  // Signed: zero sits in the middle of a symmetric range, ±m at the ends.
  const ColorRange s{-2.0f, 2.0f};
  EXPECT_EQ(tableIndex(s, -2.0f), 0);
  EXPECT_EQ(tableIndex(s, 2.0f), 255);
  EXPECT_EQ(tableIndex(s, 0.0f), 128);
  EXPECT_EQ(tableIndex(s, -1.0f), 64);   // 63.75
  EXPECT_EQ(tableIndex(s, 1.0f), 191);   // 191.25
}

TEST(Colormap, RangeForProbabilityIsUnitAndSignedIsSymmetric) {
  const std::vector<float> w = {0.1f, 0.7f, 0.2f};
  const ColorRange p = rangeFor(DataKind::Probability, w.data(), w.size());
  EXPECT_EQ(p.lo, 0.0f);
  EXPECT_EQ(p.hi, 1.0f);

  const std::vector<float> s = {0.5f, -3.0f, 1.25f, -kInf, kNan, kInf, 2.0f};
  const ColorRange r = rangeFor(DataKind::Signed, s.data(), s.size());
  EXPECT_EQ(r.lo, -3.0f);  // non-finite values ignored, max |finite| = 3
  EXPECT_EQ(r.hi, 3.0f);

  const std::vector<float> zeros = {0.0f, -0.0f, -kInf, kNan};
  const ColorRange z = rangeFor(DataKind::Signed, zeros.data(), zeros.size());
  EXPECT_GT(z.hi, 0.0f);
  EXPECT_EQ(z.lo, -z.hi);
  EXPECT_EQ(tableIndex(z, 0.0f), 128);

  const ColorRange u = unionRange({-1.0f, 1.0f}, {-4.0f, 4.0f});
  EXPECT_EQ(u.lo, -4.0f);
  EXPECT_EQ(u.hi, 4.0f);
}

TEST(Colormap, DegenerateRangesStillMap) {
  // The widest float range must not overflow into inf/NaN arithmetic.
  const ColorRange wide{-std::numeric_limits<float>::max(), std::numeric_limits<float>::max()};
  EXPECT_EQ(tableIndex(wide, 0.0f), 128);
  EXPECT_EQ(tableIndex(wide, std::numeric_limits<float>::max()), 255);
  // A zero-width range: below / at / above the value.
  const ColorRange point{2.0f, 2.0f};
  EXPECT_EQ(tableIndex(point, 1.0f), 0);
  EXPECT_EQ(tableIndex(point, 2.0f), 128);
  EXPECT_EQ(tableIndex(point, 3.0f), 255);
  // Reversed ends are swapped rather than inverting the map.
  EXPECT_EQ(tableIndex(ColorRange{1.0f, 0.0f}, 1.0f), 255);
}

TEST(Colormap, SpecialColoursAreFarFromEveryTableEntry) {
  for (ColormapId id : allColormaps()) {
    double nearestNan = 1e9, nearestBlocked = 1e9;
    for (int i = 0; i < kColormapEntries; ++i) {
      nearestNan = std::min(nearestNan, rgbDistance(nanColor(), tableColor(id, i)));
      nearestBlocked = std::min(nearestBlocked, rgbDistance(blockedColor(id), tableColor(id, i)));
    }
    // Not merely unequal: far enough that nobody reads them as a value.
    EXPECT_GT(nearestNan, 40.0) << colormapName(id);
    EXPECT_GT(nearestBlocked, 40.0) << colormapName(id);
    EXPECT_GT(rgbDistance(nanColor(), blockedColor(id)), 100.0) << colormapName(id);
  }
}

TEST(Colormap, EveryEntryInvertsToItsOwnValue) {
  const ColorRange ranges[] = {{0.0f, 1.0f}, {-2.5f, 2.5f}, {-1e-6f, 1e-6f}, {3.0f, 1000.0f}};
  for (ColormapId id : allColormaps()) {
    for (const ColorRange& r : ranges) {
      const float step = (r.hi - r.lo) / 255.0f;
      int mismatches = 0;
      for (int i = 0; i < kColormapEntries; ++i) {
        const float centre = r.lo + (r.hi - r.lo) * static_cast<float>(i) / 255.0f;
        const float back = invertColor(id, r, tableColor(id, i));
        if (std::abs(back - centre) > 1e-3f * step) {
          if (++mismatches <= 5) ADD_FAILURE() << colormapName(id) << " entry " << i << ": " << back << " != " << centre;
        }
        // value → colour → value lands on the same entry
        EXPECT_EQ(tableIndex(r, back), i) << colormapName(id) << " entry " << i;
      }
      EXPECT_EQ(mismatches, 0) << colormapName(id);
    }
    EXPECT_TRUE(std::isnan(invertColor(id, {0, 1}, nanColor())));
    EXPECT_EQ(invertColor(id, {0, 1}, blockedColor(id)), -kInf);
  }
}

TEST(Colormap, TablesHaveDistinctEntries) {
  for (ColormapId id : allColormaps()) {
    for (int i = 0; i < kColormapEntries; ++i) {
      for (int j = i + 1; j < kColormapEntries; ++j) {
        ASSERT_NE(tableColor(id, i), tableColor(id, j)) << colormapName(id) << " entries " << i << ", " << j;
      }
    }
  }
}

TEST(Colormap, SequentialMapsGetLighterAndDivergingIsSymmetric) {
  for (ColormapId id : {ColormapId::Viridis, ColormapId::Cividis, ColormapId::Magma, ColormapId::Gray}) {
    for (int i = 1; i < kColormapEntries; ++i) {
      // 0.5 L*: slack for 8-bit rounding of the published data.
      EXPECT_GE(lightness(tableColor(id, i)), lightness(tableColor(id, i - 1)) - 0.5) << colormapName(id) << " " << i;
    }
  }
  const ColormapId d = ColormapId::Diverging;
  for (int i = 0; i < 128; ++i) {
    const double lo = lightness(tableColor(d, i)), hi = lightness(tableColor(d, 255 - i));
    EXPECT_NEAR(lo, hi, 1.5) << "entry " << i << " vs " << 255 - i;
    if (i > 0) {
      EXPECT_GE(lo, lightness(tableColor(d, i - 1)) - 0.3) << i;
      EXPECT_GE(hi, lightness(tableColor(d, 256 - i)) - 0.3) << 255 - i;
    }
  }
  // Blue below zero, red above, near-white at the centre.
  const RGBA8 low = tableColor(d, 0), high = tableColor(d, 255), mid = tableColor(d, 128);
  EXPECT_GT(low.b, low.r);
  EXPECT_GT(high.r, high.b);
  EXPECT_GT(lightness(mid), 93.0);
}

// cividis: the published data's ends (Nuñez, Anderton & Renslow 2018, as matplotlib ships them).
// coolwarm: Moreland's (2009) end colours, his white point M = 88 between them, and the points a
// quarter of the way in his published table gives (0.552 0.691 0.996 / 0.957 0.604 0.482); each
// half rises in lightness toward the centre.
TEST(Colormap, CividisAndCoolwarmFollowTheirDefinitions) {
  EXPECT_EQ(tableColor(ColormapId::Cividis, 0), (RGBA8{0, 34, 78, 255}));
  EXPECT_EQ(tableColor(ColormapId::Cividis, 255), (RGBA8{254, 232, 56, 255}));
  const ColormapId c = ColormapId::Coolwarm;
  EXPECT_EQ(tableColor(c, 0), (RGBA8{59, 76, 192, 255}));
  EXPECT_EQ(tableColor(c, 255), (RGBA8{180, 4, 38, 255}));
  EXPECT_LE(rgbDistance(tableColor(c, 64), RGBA8{141, 176, 254, 255}), 2.0);
  EXPECT_LE(rgbDistance(tableColor(c, 191), RGBA8{244, 154, 123, 255}), 2.0);
  EXPECT_LE(rgbDistance(tableColor(c, 128), RGBA8{221, 221, 221, 255}), 2.0);
  for (int i = 1; i < 128; ++i) {
    EXPECT_GE(lightness(tableColor(c, i)), lightness(tableColor(c, i - 1)) - 0.3) << i;
    EXPECT_GE(lightness(tableColor(c, 255 - i)), lightness(tableColor(c, 256 - i)) - 0.3) << 255 - i;
  }
  EXPECT_GT(tableColor(c, 0).b, tableColor(c, 0).r);    // blue below zero
  EXPECT_GT(tableColor(c, 255).r, tableColor(c, 255).b);  // red above
}

TEST(Colormap, FillRgbaAgreesWithMapValue) {
  const std::vector<float> v = {0.0f, 0.25f, 0.5f, 1.0f, -kInf, kNan, kInf, -0.3f, 0.499f, 0.501f, 1e30f, -1e30f};
  for (ColormapId id : allColormaps()) {
    const ColorRange r{-0.5f, 1.0f};
    std::vector<std::uint8_t> out(v.size() * 4, 7);
    fillRgba(id, r, v.data(), 3, 4, out.data());
    for (std::size_t i = 0; i < v.size(); ++i) {
      const RGBA8 want = mapValue(id, r, v[i]);
      EXPECT_EQ((RGBA8{out[4 * i], out[4 * i + 1], out[4 * i + 2], out[4 * i + 3]}), want)
          << colormapName(id) << " value " << v[i];
    }
  }
}

}  // namespace
}  // namespace mhascope
