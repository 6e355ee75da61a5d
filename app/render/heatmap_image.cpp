#include "render/heatmap_image.hpp"

#include <algorithm>

namespace mhascope::app {
namespace {

void putPixel(std::uint8_t* p, RGBA8 c) {
  p[0] = c.r;
  p[1] = c.g;
  p[2] = c.b;
  p[3] = c.a;
}

}  // namespace

void buildHeatmapImage(const float* values, int rows, int cols, const HeatmapLook& look, int stepY, int stepX,
                       int maxSize, HeatmapImage& out, BlockPositions& scratch, const std::uint8_t* blocked,
                       CellWindow window) {
  const RGBA8 blockedPx = blockedColor(look.colormap);
  maxSize = std::max(maxSize, 1);
  window.row = std::clamp(window.row, 0, rows);
  window.col = std::clamp(window.col, 0, cols);
  window.rows = window.rows < 0 ? rows - window.row : std::clamp(window.rows, 0, rows - window.row);
  window.cols = window.cols < 0 ? cols - window.col : std::clamp(window.cols, 0, cols - window.col);
  out.rowStep = std::max({stepY, 1, cellsPerTexel(window.rows, maxSize)});
  out.colStep = std::max({stepX, 1, cellsPerTexel(window.cols, maxSize)});
  out.height = (window.rows + out.rowStep - 1) / out.rowStep;
  out.width = (window.cols + out.colStep - 1) / out.colStep;
  out.rgba.resize(static_cast<std::size_t>(out.width) * out.height * 4);
  if (!out.downsampled() && look.scale == ColorScale::Linear) {
    // Every cell exactly as the exporter colours it (the same fillRgba), row by row.
    for (int r = 0; r < window.rows; ++r) {
      const std::size_t src = static_cast<std::size_t>(window.row + r) * cols + static_cast<std::size_t>(window.col);
      std::uint8_t* dst = &out.rgba[static_cast<std::size_t>(r) * out.width * 4];
      fillRgba(look.colormap, look.range, values + src, 1, window.cols, dst);
      if (!blocked) continue;
      for (int c = 0; c < window.cols; ++c) {
        if (blocked[src + static_cast<std::size_t>(c)]) putPixel(dst + 4 * c, blockedPx);
      }
    }
    return;
  }
  downsampleToPositions(values, blocked, rows, cols, out.rowStep, out.colStep, look.scale, look.range, look.rule,
                        scratch, window);
  const ColorRange unit{0.0f, 1.0f};  // positions: 0 → entry 0, 1 → entry 255; −inf blocked; NaN
  fillRgba(look.colormap, unit, scratch.values.data(), scratch.rows, scratch.cols, out.rgba.data());
}

void buildColorbarImage(ColormapId colormap, HeatmapImage& out) {
  out.width = kColormapEntries;
  out.height = 1;
  out.rowStep = out.colStep = 1;
  out.rgba.resize(static_cast<std::size_t>(kColormapEntries) * 4);
  for (int i = 0; i < kColormapEntries; ++i) putPixel(&out.rgba[static_cast<std::size_t>(i) * 4], tableColor(colormap, i));
}

}  // namespace mhascope::app
