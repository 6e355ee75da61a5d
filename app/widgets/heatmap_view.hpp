// One heatmap on screen: the matrix as ONE texture (never a rectangle per cell), token labels
// on both axes, a colour bar with its range, masked cells and fully masked rows flagged, a hover
// tooltip (query token, key token, exact value) with the row and column lit, numbers in the cells
// when they are big enough to read, and zoom (wheel) + pan (drag) for long sequences. A matrix
// with more cells than pixels is downsampled to the screen (color/downsample.hpp: each texel is
// the max — for signed stages the largest |v| — of the block of cells it covers); zooming in
// reaches one texel per cell, then cells with their labels and numbers.
#pragma once

#include <imgui.h>

#include <string>

#include "state/app_state.hpp"
#include "color/color_scale.hpp"
#include "color/colormap.hpp"
#include "color/downsample.hpp"
#include "attention/trace.hpp"
#include "render/texture_cache.hpp"

namespace mhascope::app {

struct HeatmapSpec {
  const Slice2D* slice = nullptr;
  // The cells' texture comes from here, keyed by textureKey (what it shows); drawHeatmap adds the
  // colour scale, the downsampling rule and how many cells one texel covers on screen.
  TextureCache* textures = nullptr;
  TextureKey textureKey;
  ColormapId colormap = ColormapId::Viridis;
  ColorRange range;
  ColorScale scale = ColorScale::Linear;  // effective: linear unless the data are weights
  DataKind kind = DataKind::Probability;  // picks the downsampling rule (max / max |v|)
  const Trace* trace = nullptr;  // for the blocked / fully-masked flags; may be null
  int colBegin = 0, colEnd = -1; // show only these columns (a head's block of d_model); -1 = all
  int heads = 0, dk = 0;         // colour the column blocks of a d_model axis by head
  ImU32 frameColor = 0;          // a coloured frame (the head's colour); 0 = none
  void* colorbarTexture = nullptr;  // TextureCache::colorbar(); null = no colour bar
  bool axisLabels = true;
  bool interactive = true;       // zoom and pan
  bool showNumbers = true;
  bool tooltip = true;
  // Set: what one cell's number is (a lesson's derived table, e.g. a difference of two score
  // tables), said instead of the stage's words; "{q}" and "{k}" stand for the query's and the
  // key's token. A cell the trace's mask blocks is said to be blocked.
  std::string cellMeaning;
};

struct HeatmapHover {
  bool hovered = false;
  bool clicked = false;
  int row = -1, col = -1;  // the cell under the mouse (col in slice columns)
  ImVec2 plotMin, plotMax;  // where the visible cells are on screen
  int rowStep = 1, colStep = 1;  // cells per texel drawn: > 1 when downsampled to the screen
  float pixelsPerTexelX = 1.0f, pixelsPerTexelY = 1.0f;
  int rowLabelsCut = 0;  // row labels drawn partly outside the plot's height, where the clip cuts them (tests)
};

// "1 pixel ≈ 7×7 cells (max)" when a heatmap was downsampled, else "".
std::string samplingLabel(const HeatmapHover& drawn, DownsampleRule rule);

// Draws into `size` at the cursor and advances it. `zoom` may be null (always fit).
HeatmapHover drawHeatmap(const char* id, const HeatmapSpec& spec, HeatmapZoom* zoom, ImVec2 size);

// The colour bar alone: the map from lo (bottom) to hi (top) with min / mid / max ticks.
void drawColorbar(ImDrawList* dl, void* texture, ColorRange range, ImVec2 topLeft, float height);
// The same with the ticks of a colour scale (log: 1, 0.01, ≤ 0.0001; per row: row max …).
void drawColorbar(ImDrawList* dl, void* texture, const ColorbarTicks& ticks, ImVec2 topLeft, float height);

// Width the colour bar and its tick labels need.
float colorbarWidth();

// True when the slice's columns are d_model columns a head owns (projections, merged heads,
// W_q/W_k/W_v): only then the head-colour strip and "belongs to head i" are drawn.
bool columnsOwnedByHeads(const HeatmapSpec& spec);
// A blocked cell's look, shared by every heatmap and legend: the cross over the blocked colour.
void addBlockedCross(ImDrawList* dl, ImVec2 cellMin, ImVec2 cellSize);
void addNanDot(ImDrawList* dl, ImVec2 cellMin, ImVec2 cellSize);  // the NaN cell's mark
void drawBlockedSwatch(ImDrawList* dl, ImVec2 topLeft, ColormapId colormap);  // 0.9 em square

}  // namespace mhascope::app
