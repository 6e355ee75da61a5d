// The heatmap's hover: what a hovered cell means in tokens and axis names, why the mask forces
// its value, and — when the heatmap is downsampled — which cell of the hovered block the pixel
// shows. Used by heatmap_view.cpp only.
#pragma once

#include "widgets/heatmap_view.hpp"

namespace mhascope::app {

// A cell the mask blocks (flag or −inf score).
bool blockedAt(const HeatmapSpec& spec, int r, int dataCol);
// The largest value of row r that the mask does not block (the per-row colour scale's top).
float rowMaxOf(const HeatmapSpec& spec, int r);
// Downsampled: moves hover.row/col to the cell the hovered texel shows (the block's max or
// largest |v|), so the tooltip's exact value is the colour on screen.
void hoverBlockExtreme(const HeatmapSpec& spec, int colBegin, int cols, HeatmapHover& hover);
void cellTooltip(const HeatmapSpec& spec, const HeatmapHover& hover);

}  // namespace mhascope::app
