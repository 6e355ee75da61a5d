// Heatmaps larger than the screen: one pixel (or texel) stands for a block of ky × kx cells,
// and it shows the block by a stated rule rather than whichever cell a sampler happens to hit.
//   weights (probability data): the block's largest value — a single strong weight survives;
//   signed stages:              the value farthest from 0 (largest |v|, with its sign), so a
//                               strong negative score is not hidden by a small positive one.
// The rule works on colour positions (color_scale.hpp), so a per-row scale is applied to each
// row before rows are combined. Blocked cells (the mask's) are left out of a block; a block of
// blocked cells only stays blocked; a NaN anywhere in a block makes the block NaN.
#pragma once

#include <cstdint>
#include <vector>

#include "color/color_scale.hpp"

namespace mhascope {

enum class DownsampleRule { Max, MaxAbs };
DownsampleRule downsampleRuleFor(DataKind kind);  // Probability → Max, Signed → MaxAbs
const char* downsampleRuleName(DownsampleRule r);  // "max" | "max |v|"

// Blocks per side: how many cells one texel must cover so that `cells` fit in `texels`.
int cellsPerTexel(int cells, int texels);

struct BlockPositions {
  int rows = 0, cols = 0;      // ceil(source rows / ky) × ceil(source cols / kx)
  int ky = 1, kx = 1;          // cells per output entry along each axis
  std::vector<float> values;   // rows × cols colour positions in [0, 1]; −inf blocked; NaN
};

// A rectangle of cells [row, row + rows) x [col, col + cols); rows < 0 = the whole matrix.
struct CellWindow {
  int row = 0, col = 0, rows = -1, cols = -1;
};

// rows × cols row-major `values` (blocked: rows × cols flags, may be null) → colour positions of
// ky × kx blocks of the window (blocks start at the window's corner; the last ones may be
// smaller). ky = kx = 1 maps every cell. A per-row scale uses the whole row's maximum, whatever
// the window. `out`'s buffer is reused.
void downsampleToPositions(const float* values, const std::uint8_t* blocked, int rows, int cols, int ky, int kx,
                           ColorScale scale, ColorRange range, DownsampleRule rule, BlockPositions& out,
                           CellWindow window = {});

// Combines two colour positions by the rule (−inf = nothing yet / blocked; NaN wins).
float combinePositions(float a, float b, DownsampleRule rule);

}  // namespace mhascope
