// GL-free: a matrix of values → the RGBA pixels of its texture, one texel per cell. When the
// matrix is larger than the GPU allows (GL_MAX_TEXTURE_SIZE), neighbouring cells are averaged
// into one texel (block means of the colours) so the picture stays whole instead of blank.
#pragma once

#include <cstdint>
#include <vector>

#include "color/colormap.hpp"

namespace mhascope::app {

struct HeatmapImage {
  int width = 0, height = 0;       // texels
  int rowStep = 1, colStep = 1;    // cells per texel along each axis (1 = exact)
  std::vector<std::uint8_t> rgba;  // height * width * 4, row 0 at the top
  bool downsampled() const { return rowStep > 1 || colStep > 1; }
};

// rows x cols row-major values (one matrix of a stage) → image. maxSize is the largest texture
// side allowed. `out`'s buffers are reused between calls.
// `blocked` (rows x cols, may be null): 1 = a cell the mask blocks, drawn in blockedColor
// whatever its value (a weight of exactly 0), as every view and the exported pictures do.
void buildHeatmapImage(const float* values, int rows, int cols, ColormapId colormap, ColorRange range,
                       int maxSize, HeatmapImage& out, const std::uint8_t* blocked = nullptr);

// A horizontal strip of the whole colormap (256 x 1 texels), for the colour bar.
void buildColorbarImage(ColormapId colormap, HeatmapImage& out);

}  // namespace mhascope::app
