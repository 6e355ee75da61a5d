// The heatmap texture cache reuses GL storage: once a long sequence's picture is up and the
// window has had a quiet frame, zooming and panning never allocate a texture (allocating was
// ~25 ms a frame with the software renderer), and each frame draws only the filled corner.
#include <gtest/gtest.h>

#include <vector>

#include "render/texture.hpp"
#include "render/texture_cache.hpp"

namespace mhascope::app {
namespace {

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

}  // namespace
}  // namespace mhascope::app
