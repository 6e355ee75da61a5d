// GL-free: a matrix of values → the RGBA pixels of its texture. One texel per cell when the
// picture has room for every cell; otherwise one texel per block of stepY × stepX cells, shown by
// the rule of color/downsample.hpp (max for weights, max |v| for signed stages) — also when the
// matrix is larger than the GPU allows (GL_MAX_TEXTURE_SIZE), so the picture is never blank.
#pragma once

#include <cstdint>
#include <vector>

#include "color/color_scale.hpp"
#include "color/colormap.hpp"
#include "color/downsample.hpp"

namespace mhascope::app {

struct HeatmapImage {
  int width = 0, height = 0;       // texels
  int rowStep = 1, colStep = 1;    // cells per texel along each axis (1 = exact)
  std::vector<std::uint8_t> rgba;  // height * width * 4, row 0 at the top
  bool downsampled() const { return rowStep > 1 || colStep > 1; }
};

// How a matrix is coloured: the map, its range, the scale, and the rule for blocks of cells.
struct HeatmapLook {
  ColormapId colormap = ColormapId::Viridis;
  ColorRange range;
  ColorScale scale = ColorScale::Linear;
  DownsampleRule rule = DownsampleRule::Max;
};

// rows x cols row-major values (one matrix of a stage) → image. stepY/stepX: cells per texel the
// caller asks for (the screen's resolution); raised when needed so no side exceeds maxSize.
// `blocked` (rows x cols, may be null): 1 = a cell the mask blocks, drawn in blockedColor
// whatever its value (a weight of exactly 0), as every view and the exported pictures do.
// `out` and `scratch` buffers are reused between calls.
// `window`: only these cells (what is on screen and a margin), so zooming into a long sequence
// never colours the whole matrix at full resolution.
void buildHeatmapImage(const float* values, int rows, int cols, const HeatmapLook& look, int stepY, int stepX,
                       int maxSize, HeatmapImage& out, BlockPositions& scratch, const std::uint8_t* blocked = nullptr,
                       CellWindow window = {});

// A horizontal strip of the whole colormap (256 x 1 texels), for the colour bar.
void buildColorbarImage(ColormapId colormap, HeatmapImage& out);

}  // namespace mhascope::app
