#include "render/heatmap_image.hpp"

#include <algorithm>

namespace mhascope::app {

void buildHeatmapImage(const float* values, int rows, int cols, ColormapId colormap, ColorRange range,
                       int maxSize, HeatmapImage& out, const std::uint8_t* blocked) {
  const RGBA8 blockedPx = blockedColor(colormap);
  auto colorAt = [&](int r, int c) {
    const std::size_t i = static_cast<std::size_t>(r) * cols + c;
    return blocked && blocked[i] ? blockedPx : mapValue(colormap, range, values[i]);
  };
  maxSize = std::max(maxSize, 1);
  out.rowStep = (rows + maxSize - 1) / maxSize;
  out.colStep = (cols + maxSize - 1) / maxSize;
  out.height = (rows + out.rowStep - 1) / out.rowStep;
  out.width = (cols + out.colStep - 1) / out.colStep;
  out.rgba.resize(static_cast<std::size_t>(out.width) * out.height * 4);
  if (!out.downsampled()) {
    fillRgba(colormap, range, values, rows, cols, out.rgba.data());
    if (blocked) {
      for (std::size_t i = 0; i < static_cast<std::size_t>(rows) * cols; ++i) {
        if (!blocked[i]) continue;
        std::uint8_t* p = &out.rgba[i * 4];
        p[0] = blockedPx.r;
        p[1] = blockedPx.g;
        p[2] = blockedPx.b;
        p[3] = 255;
      }
    }
    return;
  }
  // Block means of the cells' colours: a texel shows what its cells look like on average.
  for (int ty = 0; ty < out.height; ++ty) {
    for (int tx = 0; tx < out.width; ++tx) {
      unsigned sum[4] = {0, 0, 0, 0};
      unsigned n = 0;
      for (int r = ty * out.rowStep; r < std::min(rows, (ty + 1) * out.rowStep); ++r) {
        for (int c = tx * out.colStep; c < std::min(cols, (tx + 1) * out.colStep); ++c) {
          const RGBA8 px = colorAt(r, c);
          sum[0] += px.r;
          sum[1] += px.g;
          sum[2] += px.b;
          sum[3] += px.a;
          ++n;
        }
      }
      std::uint8_t* p = &out.rgba[(static_cast<std::size_t>(ty) * out.width + tx) * 4];
      for (int i = 0; i < 4; ++i) p[i] = static_cast<std::uint8_t>(sum[i] / std::max(n, 1u));
    }
  }
}

void buildColorbarImage(ColormapId colormap, HeatmapImage& out) {
  out.width = kColormapEntries;
  out.height = 1;
  out.rowStep = out.colStep = 1;
  out.rgba.resize(static_cast<std::size_t>(kColormapEntries) * 4);
  for (int i = 0; i < kColormapEntries; ++i) {
    const RGBA8 c = tableColor(colormap, i);
    std::uint8_t* p = &out.rgba[static_cast<std::size_t>(i) * 4];
    p[0] = c.r;
    p[1] = c.g;
    p[2] = c.b;
    p[3] = 255;
  }
}

}  // namespace mhascope::app
