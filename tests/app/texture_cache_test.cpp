// The heatmap texture cache reuses GL storage: once a long sequence's picture is up and the
// window has had a quiet frame, zooming and panning never allocate a texture (allocating was
// ~25 ms a frame with the software renderer), and each frame draws only the filled corner.
#include <gtest/gtest.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "render/texture.hpp"
#include "render/texture_cache.hpp"
#include "render/texture_keys.hpp"
#include "attention/trace.hpp"

namespace mhascope::app {
namespace {

// The key table gives every kind of picture its own space: the serial namespaces are distinct bits
// above every counter (2^56), and the slots' ranges do not overlap the stages or one another.
TEST(TextureKeys, EveryKindOfPictureHasItsOwnSpace) {
  const std::vector<std::uint64_t> spaces{kFirstHeadSpace, kCompareBSpace, kCompareDifferenceSpace, kModelAtlasSpace,
                                          kModelCircuitsSpace, kTrainPictureSpace, kCheckpointCircuitsSpace};
  std::uint64_t seen = 0;
  for (std::uint64_t s : spaces) {
    EXPECT_EQ(s & (s - 1), 0u) << s << " is one bit";
    EXPECT_GE(s, 1ull << 56) << "above every counter";
    EXPECT_EQ(seen & s, 0u) << "two kinds of picture share the namespace " << s;
    seen |= s;
  }
  EXPECT_EQ(kTraceSpace, 0u);
  EXPECT_LT(kStageCount, kWeightSlot);
  EXPECT_LT(kWeightSlot + kWeightCount, kTrainGridSlot);
  EXPECT_LT(kTrainGridSlot + 64, kModelAtlasSlot) << "room for 64 layers";
  EXPECT_LT(kModelAtlasSlot, kTrainCircuitsSlot);
  for (int base : {kTrainCircuitsSlot, kTabCircuitsSlot, kModelCircuitsSlot}) {
    EXPECT_LT(base + kCircuitsRollout, base + 100) << "a circuits view's pictures stay within its 100 slots";
  }
  EXPECT_EQ(kTabCircuitsSlot - kTrainCircuitsSlot, 100);
  EXPECT_EQ(kModelCircuitsSlot - kTabCircuitsSlot, 100);
  EXPECT_LT(kCircuitsMatrix + 4, kCircuitsReads);
  EXPECT_LT(kCircuitsReaders + 3, kCircuitsCopying + 1);
  EXPECT_LT(kModelCircuitsSlot + 100, kLessonSlot) << "the lessons' tags start above every other slot";
}

TEST(TextureCache, ZoomAndPanReuseStorageAfterAQuietFrame) {
  const int n = 1200;
  std::vector<float> values(static_cast<std::size_t>(n) * n);
  std::vector<std::uint8_t> blocked(values.size());
  for (int r = 0; r < n; ++r) {
    for (int c = 0; c < n; ++c) {
      const std::size_t i = static_cast<std::size_t>(r) * n + c;
      blocked[i] = c > r;
      values[i] = blocked[i] ? 0.0f : 1.0f / static_cast<float>(r + 1);
    }
  }
  TextureCache cache;
  TextureKey key;
  key.traceSerial = 7;
  const auto show = [&](int step, int row, int col, int rows, int cols) {
    key.stepY = key.stepX = step;
    key.row = row;
    key.col = col;
    key.rows = rows;
    key.cols = cols;
    const HeatmapTexture t = cache.get(key, values.data(), n, n, blocked.data());
    cache.endFrame();
    return t;
  };
  // The first picture (the whole matrix, 4 cells a texel), then two quiet frames.
  const HeatmapTexture fit = show(4, 0, 0, n, n);
  EXPECT_EQ(fit.width, 300);
  show(4, 0, 0, n, n);
  show(4, 0, 0, n, n);
  const std::uint64_t allocated = cache.allocations();
  const std::uint64_t uploads = cache.uploads();
  // Zoom in (a texture spans up to two views), pan, zoom back out: new textures, no new storage.
  const struct { int step, row, col, rows, cols; } views[] = {
      {2, 0, 0, 1200, 1200}, {2, 300, 300, 900, 900}, {1, 0, 0, 600, 600}, {1, 150, 150, 600, 600},
      {1, 450, 300, 600, 600}, {3, 0, 0, n, n}, {4, 0, 0, n, n}};
  for (const auto& v : views) {
    const HeatmapTexture t = show(v.step, v.row, v.col, v.rows, v.cols);
    EXPECT_EQ(t.width, (v.cols + v.step - 1) / v.step);
    EXPECT_GT(t.u1, 0.0f);
    EXPECT_LE(t.u1, 1.0f);
    EXPECT_LE(t.v1, 1.0f);
  }
  EXPECT_EQ(cache.uploads(), uploads + std::size(views));
  EXPECT_EQ(cache.allocations(), allocated) << "a zoom or a pan allocated texture storage";
  // What stays alive: the texture on screen, the spares and the colour bars (none here).
  EXPECT_LE(Texture::liveCount(), 1 + TextureCache::kSpares);
}

// Both spans start on a block boundary counted from cell 0 (a zoom's texture and the one that
// replaces it when the zoom rests colour the same blocks), hold every visible cell, and end at a
// block boundary or the matrix's edge; the visible span holds nothing more than that.
TEST(TextureSpans, CoverTheVisibleCellsOnTheBlockGrid) {
  int checked = 0;
  for (int total : {1, 7, 100, 4096}) {
    for (int step : {1, 2, 3, 7}) {
      for (int first = 0; first < total; first += std::max(1, total / 13)) {
        for (int last = first + 1; last <= total; last += std::max(1, total / 11)) {
          const auto [vb, vn] = visibleSpan(first, last, total, step);
          const auto [tb, tn] = textureSpan(first, last, total, step);
          for (const auto& [b, n] : {std::pair{vb, vn}, std::pair{tb, tn}}) {
            ASSERT_EQ(b % step, 0) << first << " " << last << " " << total << " " << step;
            ASSERT_LE(b, first);
            ASSERT_GE(b + n, last);
            ASSERT_LE(b + n, total);
            ASSERT_TRUE((b + n) % step == 0 || b + n == total);
          }
          EXPECT_EQ(vb, first / step * step);
          EXPECT_EQ(vb + vn, std::min(total, (last + step - 1) / step * step));
          EXPECT_LE(tb, vb);  // the margin only adds cells
          EXPECT_GE(tb + tn, vb + vn);
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 500);
}

// zoomedFrom: the same picture was drawn last frame at other steps, and not yet at these.
TEST(TextureCache, AZoomIsSeenUntilThePictureIsDrawnAtTheNewSteps) {
  const int n = 64;
  std::vector<float> values(static_cast<std::size_t>(n) * n, 0.5f);
  TextureCache cache;
  TextureKey fit;
  fit.traceSerial = 3;
  fit.head = 1;
  fit.stepY = fit.stepX = 4;
  EXPECT_FALSE(cache.zoomedFrom(fit)) << "nothing drawn yet: a first picture, not a zoom";
  cache.get(fit, values.data(), n, n);
  cache.endFrame();
  TextureKey zoomed = fit;
  zoomed.stepY = zoomed.stepX = 2;
  zoomed.rows = zoomed.cols = 32;
  EXPECT_TRUE(cache.zoomedFrom(zoomed));
  TextureKey panned = fit;
  panned.row = 8;
  EXPECT_FALSE(cache.zoomedFrom(panned)) << "a pan at the same steps";
  TextureKey otherHead = zoomed;
  otherHead.head = 2;
  EXPECT_FALSE(cache.zoomedFrom(otherHead)) << "another picture";
  TextureKey otherTrace = zoomed;
  otherTrace.traceSerial = 4;
  EXPECT_FALSE(cache.zoomedFrom(otherTrace));
  // Drawn at the new steps (only the visible cells): the next frame's span with its margin is a
  // texture of its own, built because the zoom rests.
  cache.get(zoomed, values.data(), n, n);
  cache.endFrame();
  TextureKey rested = zoomed;
  rested.rows = rested.cols = 64;
  EXPECT_FALSE(cache.zoomedFrom(rested));
  const std::uint64_t uploads = cache.uploads();
  cache.get(rested, values.data(), n, n);
  cache.endFrame();
  EXPECT_EQ(cache.uploads(), uploads + 1);
  EXPECT_EQ(cache.size(), 1) << "the visible-only texture is given up once not drawn";
}

// covering: the frame that zooms draws last frame's picture stretched when it holds the view —
// the finest such texture of the same picture — and keeps it for the frame; none holds it: empty.
TEST(TextureCache, AZoomFrameDrawsLastFramesPictureWhenItHoldsTheView) {
  const int n = 256;
  std::vector<float> values(static_cast<std::size_t>(n) * n, 0.25f);
  TextureCache cache;
  TextureKey whole;
  whole.traceSerial = 5;
  whole.stepY = whole.stepX = 4;  // the whole matrix, 4 x 4 cells a texel
  TextureKey part = whole;
  part.stepY = part.stepX = 2;  // rows and columns 64..191, 2 x 2 cells a texel
  part.row = part.col = 64;
  part.rows = part.cols = 128;
  cache.get(whole, values.data(), n, n);
  cache.get(part, values.data(), n, n);
  cache.endFrame();
  TextureKey zoomed = whole;
  zoomed.stepY = zoomed.stepX = 1;
  const auto inside = cache.covering(zoomed, CellWindow{100, 100, 40, 40});
  ASSERT_TRUE(inside.has_value());
  EXPECT_EQ(inside->rowStep, 2) << "the finer of the two that hold the view";
  EXPECT_EQ(inside->row, 64);
  const auto across = cache.covering(zoomed, CellWindow{10, 10, 100, 100});
  ASSERT_TRUE(across.has_value());
  EXPECT_EQ(across->rowStep, 4) << "only the whole-matrix texture holds this view";
  TextureKey otherHead = zoomed;
  otherHead.head = 3;
  EXPECT_FALSE(cache.covering(otherHead, CellWindow{100, 100, 40, 40}).has_value()) << "another picture";
  cache.endFrame();
  EXPECT_EQ(cache.size(), 2) << "both were drawn this frame: neither is given up";
  cache.endFrame();
  EXPECT_EQ(cache.size(), 0);
  EXPECT_FALSE(cache.covering(zoomed, CellWindow{100, 100, 40, 40}).has_value()) << "nothing drawn last frame";
}

}  // namespace
}  // namespace mhascope::app
