// Over 500 lines, kept in one file on purpose: the layout, the zoom/pan and the overlay passes share the
// View geometry (cell positions, visible range) that every pass reads; splitting would pass it around.
// [SECTION] index
//   layout      — where labels, cells and the colour bar go, and the cell size at a zoom
//   text        — vertical labels, number formatting
//   (the tooltip — what a hovered cell means — is in heatmap_tooltip.cpp)
//   drawHeatmap — layout, zoom/pan, cells, overlay passes (grid, crosses, numbers, row flags and
//                 hover, head strip), labels, tooltip: one function each
//   colour bar
#include "widgets/heatmap_view.hpp"

#include <imgui.h>
#include <imgui_internal.h>  // SetItemUsingMouseWheel (1.86 keeps it internal)

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "widgets/colors.hpp"
#include "widgets/heatmap_tooltip.hpp"
#include "widgets/labels.hpp"
#include "util/format.hpp"

namespace mhascope::app {
namespace {

// ---------------------------------------------------------------------------------------------
// [SECTION] layout
// ---------------------------------------------------------------------------------------------

constexpr float kMinMaxZoom = 64.0f;  // at least; long sequences zoom until a cell is ~6 em wide
constexpr ImU32 kLitLabel = IM_COL32(255, 230, 120, 255);
constexpr float kMinCrossCell = 8.0f;  // px; as the exported pictures (export_heatmap.cpp)

struct Layout {
  ImVec2 plotMin, plotMax;   // the visible part of the cells
  float cellW = 1, cellH = 1;
  float rowLabelW = 0, colLabelH = 0, stripH = 0;
  int rows = 0, cols = 0;
};

float maxLabelWidth(const Slice2D& s, bool rowsAxis, int begin, int end, const ImFont* font) {
  const auto& labels = rowsAxis ? s.rowLabels : s.colLabels;
  float w = 0;
  const int n = static_cast<int>(labels.size());
  // Long sequences: measuring a sample is enough to size the margin.
  const int step = std::max(1, (end - begin) / 64);
  for (int i = begin; i < std::min(end, n); i += step) {
    w = std::max(w, ImGui::CalcTextSize(readableToken(labels[static_cast<std::size_t>(i)], font).c_str()).x);
  }
  return w;
}

// Cells are square unless the matrix is long and thin (T x d_model with d_model ≫ T): then
// up to 6:1, and rows at least one text line tall when that fits, so every token keeps its
// label and its row stays visible.
void fitCells(Layout& L, float availW, float availH) {
  const float fitW = availW / static_cast<float>(L.cols);
  const float fitH = availH / static_cast<float>(L.rows);
  const float ratio = static_cast<float>(std::max(L.rows, L.cols)) / static_cast<float>(std::min(L.rows, L.cols));
  const float maxAspect = ratio > 6.0f ? 6.0f : 1.0f;
  L.cellW = std::min(fitW, fitH * maxAspect);
  L.cellH = std::min(fitH, L.cellW * maxAspect);
  L.cellW = std::min(fitW, std::max(L.cellW, L.cellH / maxAspect));
  const float line = ImGui::GetTextLineHeightWithSpacing();
  if (L.cols > L.rows && L.cellH < line) L.cellH = std::min(fitH, line);
  if (L.rows > L.cols && L.cellW < line) L.cellW = std::min(fitW, line);
}

// ---------------------------------------------------------------------------------------------
// [SECTION] text
// ---------------------------------------------------------------------------------------------

// Text reading bottom-to-top whose baseline starts at `bottomLeft`: drawn flat, then its
// vertices turned by -90° (1.86 has no rotated text).
void addVerticalText(ImDrawList* dl, ImVec2 bottomLeft, ImU32 color, const std::string& text) {
  const int first = dl->VtxBuffer.Size;
  // AddText drops glyphs outside the clip rectangle *before* the turn, so the glyphs are made
  // unclipped; callers keep labels short (fitText) so they stay in their margin. Their draw
  // command then gets the clip rectangle in force again: a map scrolled partly out of its window
  // has its labels cut by the window's edge, not drawn over what is above it.
  const ImVec2 clipMin = dl->GetClipRectMin(), clipMax = dl->GetClipRectMax();
  dl->PushClipRectFullScreen();
  dl->AddText(bottomLeft, color, text.c_str());
  dl->CmdBuffer.back().ClipRect = ImVec4(clipMin.x, clipMin.y, clipMax.x, clipMax.y);
  dl->PopClipRect();
  for (int i = first; i < dl->VtxBuffer.Size; ++i) {
    ImDrawVert& v = dl->VtxBuffer[i];
    const float dx = v.pos.x - bottomLeft.x;
    const float dy = v.pos.y - bottomLeft.y;
    v.pos = ImVec2(bottomLeft.x + dy, bottomLeft.y - dx);
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// [SECTION] drawHeatmap — layout, zoom/pan, cells, overlay passes, labels, tooltip
// ---------------------------------------------------------------------------------------------

namespace {

// Where the cells are: the layout, the pan, and the visible cell range [r0, r1) x [c0, c1).
struct View {
  Layout L;
  ImVec2 origin;
  int colBegin = 0, colEnd = 0;
  float zoom = 1.0f, panX = 0.0f, panY = 0.0f;  // pan in cells
  float maxZoom = kMinMaxZoom;
  float availW = 1.0f, availH = 1.0f;      // the room for the cells
  float fitCellW = 1.0f, fitCellH = 1.0f;  // a cell's size at zoom 1
  bool zoomedNow = false;                  // this frame's input changed the zoom
  ImVec2 img0;  // screen position of cell (0, 0)
  int r0 = 0, r1 = 0, c0 = 0, c1 = 0;
  bool modelCols = false;  // the head-colour strip over d_model columns heads own
  ImVec2 cellMin(int r, int c) const {
    return ImVec2(img0.x + static_cast<float>(c) * L.cellW, img0.y + static_cast<float>(r) * L.cellH);
  }
  float plotW() const { return L.plotMax.x - L.plotMin.x; }
  float plotH() const { return L.plotMax.y - L.plotMin.y; }
};

// The plot rectangle at the cells' size: the cells, up to the room there is (whole pixels, so
// texels land on them). Again after a zoom, in the same frame: a map narrower than its room at
// fit grows with the zoom, and the frame that zooms must show (and texture) the columns the next
// one will.
void sizePlot(View& v) {
  Layout& L = v.L;
  L.plotMax = ImVec2(L.plotMin.x + std::floor(std::min(v.availW, L.cellW * static_cast<float>(L.cols))),
                     L.plotMin.y + std::floor(std::min(v.availH, L.cellH * static_cast<float>(L.rows))));
  L.plotMax.x = std::max(L.plotMax.x, L.plotMin.x + 1.0f);
  L.plotMax.y = std::max(L.plotMax.y, L.plotMin.y + 1.0f);
}

// Label margins, fitted cells, zoom, and the plot rectangle.
View layoutHeatmap(const HeatmapSpec& spec, const HeatmapZoom* zoom, ImVec2 size) {
  const Slice2D& s = *spec.slice;
  View v;
  v.colBegin = std::clamp(spec.colBegin, 0, s.cols);
  v.colEnd = spec.colEnd < 0 ? s.cols : std::clamp(spec.colEnd, v.colBegin, s.cols);
  Layout& L = v.L;
  L.rows = s.rows;
  L.cols = v.colEnd - v.colBegin;
  v.origin = ImGui::GetCursorScreenPos();
  const float em = ImGui::GetFontSize();
  const ImFont* font = ImGui::GetFont();
  if (spec.axisLabels) {
    L.rowLabelW = std::clamp(maxLabelWidth(s, true, 0, L.rows, font), 1.5f * em, 9.0f * em) + 0.6f * em;
    // The corner's axis names ("T_q ↓", "d_model →") stay left of the first column's label.
    const float corner = std::max(ImGui::CalcTextSize((s.rowAxis + " ↓").c_str()).x,
                                  ImGui::CalcTextSize((s.colAxis + " →").c_str()).x);
    L.rowLabelW = std::max(L.rowLabelW, corner + 0.6f * em);
    L.colLabelH = std::clamp(maxLabelWidth(s, false, v.colBegin, v.colEnd, font), 1.5f * em, 7.0f * em) + 0.6f * em;
  }
  // The head-colour strip only over columns a head owns (never the inputs or the output).
  v.modelCols = columnsOwnedByHeads(spec) && spec.heads > 1 && spec.dk > 0;
  if (v.modelCols) L.stripH = 0.45f * em;
  const float cbW = spec.colorbarTexture ? colorbarWidth() : 0.0f;
  const float availW = std::max(1.0f, size.x - L.rowLabelW - cbW);
  const float availH = std::max(1.0f, size.y - L.colLabelH - L.stripH);
  fitCells(L, availW, availH);
  v.maxZoom = std::max(kMinMaxZoom, 6.0f * em / std::max(std::min(L.cellW, L.cellH), 1e-3f));
  v.zoom = zoom ? std::clamp(zoom->zoom, 1.0f, v.maxZoom) : 1.0f;
  v.fitCellW = L.cellW;
  v.fitCellH = L.cellH;
  L.cellW = v.fitCellW * v.zoom;
  L.cellH = v.fitCellH * v.zoom;
  L.plotMin = ImVec2(std::round(v.origin.x + L.rowLabelW), std::round(v.origin.y + L.colLabelH + L.stripH));
  v.availW = availW;
  v.availH = availH;
  sizePlot(v);
  if (zoom) {
    v.panX = zoom->panX;
    v.panY = zoom->panY;
  }
  return v;
}

void clampPan(View& v) {
  v.panX = std::clamp(v.panX, 0.0f, std::max(0.0f, static_cast<float>(v.L.cols) - v.plotW() / v.L.cellW));
  v.panY = std::clamp(v.panY, 0.0f, std::max(0.0f, static_cast<float>(v.L.rows) - v.plotH() / v.L.cellH));
}

// An invisible button over the cells catches hover, drag and wheel: zoom about the mouse (the
// cell under it stays under it), drag to pan, double-click to fit.
void handleZoomPan(View& v, const HeatmapSpec& spec, HeatmapZoom* zoom, HeatmapHover& hover) {
  Layout& L = v.L;
  clampPan(v);
  ImGui::SetCursorScreenPos(L.plotMin);
  ImGui::InvisibleButton("cells", ImVec2(v.plotW(), v.plotH()));
  hover.hovered = ImGui::IsItemHovered();
  hover.plotMin = L.plotMin;
  hover.plotMax = L.plotMax;
  hover.clicked = ImGui::IsItemClicked(ImGuiMouseButton_Left);
  if (!zoom || !spec.interactive) return;
  const ImGuiIO& io = ImGui::GetIO();
  if (hover.hovered) ImGui::SetItemUsingMouseWheel();
  if (hover.hovered && io.MouseWheel != 0.0f) {
    const float mx = (io.MousePos.x - L.plotMin.x) / L.cellW + v.panX;
    const float my = (io.MousePos.y - L.plotMin.y) / L.cellH + v.panY;
    const float newZ = std::clamp(v.zoom * std::pow(1.25f, io.MouseWheel), 1.0f, v.maxZoom);
    v.zoomedNow = newZ != v.zoom;
    v.zoom = newZ;
    L.cellW = v.fitCellW * v.zoom;  // as the next frame's layout has it, to the bit
    L.cellH = v.fitCellH * v.zoom;
    v.panX = mx - (io.MousePos.x - L.plotMin.x) / L.cellW;
    v.panY = my - (io.MousePos.y - L.plotMin.y) / L.cellH;
  }
  if (ImGui::IsItemActive() && ImGui::IsMouseDragging(ImGuiMouseButton_Left, 2.0f)) {
    v.panX -= io.MouseDelta.x / L.cellW;
    v.panY -= io.MouseDelta.y / L.cellH;
  }
  if (hover.hovered && ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left)) {
    v.zoomedNow = v.zoom != 1.0f;
    v.zoom = 1.0f;
    L.cellW = v.fitCellW;
    L.cellH = v.fitCellH;
    v.panX = v.panY = 0;
  }
  sizePlot(v);
  clampPan(v);
  zoom->zoom = v.zoom;
  zoom->panX = v.panX;
  zoom->panY = v.panY;
}

// The visible cells, and the cell under the mouse.
void placeCells(View& v, HeatmapHover& hover) {
  const Layout& L = v.L;
  v.img0 = ImVec2(L.plotMin.x - v.panX * L.cellW, L.plotMin.y - v.panY * L.cellH);
  v.c0 = std::max(0, static_cast<int>(std::floor(v.panX)));
  v.c1 = std::min(L.cols, static_cast<int>(std::ceil(v.panX + v.plotW() / L.cellW)));
  v.r0 = std::max(0, static_cast<int>(std::floor(v.panY)));
  v.r1 = std::min(L.rows, static_cast<int>(std::ceil(v.panY + v.plotH() / L.cellH)));
  if (hover.hovered) {
    const ImVec2 m = ImGui::GetIO().MousePos;
    hover.col = std::clamp(static_cast<int>((m.x - v.img0.x) / L.cellW), 0, L.cols - 1);
    hover.row = std::clamp(static_cast<int>((m.y - v.img0.y) / L.cellH), 0, L.rows - 1);
  }
}

// Cells per texel so that a texel is at least one screen pixel: 1 when cells are that big.
int stepForCell(float cellPoints, float framebufferScale) {
  const float px = cellPoints * std::max(framebufferScale, 1e-3f);
  return px >= 1.0f ? 1 : static_cast<int>(std::ceil(1.0f / px - 1e-4f));
}

// The cells: a texture of the visible cells (and a margin) at the screen's resolution, clipped.
void drawCells(ImDrawList* dl, const HeatmapSpec& spec, const View& v, HeatmapHover& hover) {
  if (!spec.textures) return;
  const Slice2D& s = *spec.slice;
  const ImVec2 fbScale = ImGui::GetIO().DisplayFramebufferScale;
  TextureKey key = spec.textureKey;
  key.scale = spec.scale;
  key.rule = downsampleRuleFor(spec.kind);
  key.stepX = stepForCell(v.L.cellW, fbScale.x);
  key.stepY = stepForCell(v.L.cellH, fbScale.y);
  // The frame whose input zooms draws last frame's picture stretched, if it holds the view (a
  // wheel burst on a T = 4096 map read up to 6 M cells a frame, for steps the next frame left).
  // Then, the zoom resting: only the visible cells at the new steps; then the margin for panning.
  std::optional<HeatmapTexture> shown;
  if (v.zoomedNow) shown = spec.textures->covering(key, CellWindow{v.r0, v.colBegin + v.c0, v.r1 - v.r0, v.c1 - v.c0});
  if (!shown) {
    const auto span = spec.textures->zoomedFrom(key) ? visibleSpan : textureSpan;
    std::tie(key.row, key.rows) = span(v.r0, v.r1, s.rows, key.stepY);
    std::tie(key.col, key.cols) = span(v.colBegin + v.c0, v.colBegin + v.c1, s.cols, key.stepX);
    shown = spec.textures->get(key, s.data, s.rows, s.cols, s.blockedCells);
  }
  const HeatmapTexture& tex = *shown;
  hover.rowStep = tex.rowStep;
  hover.colStep = tex.colStep;
  hover.pixelsPerTexelX = v.L.cellW * fbScale.x * static_cast<float>(tex.colStep);
  hover.pixelsPerTexelY = v.L.cellH * fbScale.y * static_cast<float>(tex.rowStep);
  // Texel (i, j) is the block of cells from (tex.row + i·rowStep, tex.col + j·colStep).
  const ImVec2 a = v.cellMin(tex.row, tex.col - v.colBegin);
  const ImVec2 b(a.x + v.L.cellW * static_cast<float>(tex.width * tex.colStep),
                 a.y + v.L.cellH * static_cast<float>(tex.height * tex.rowStep));
  dl->AddImage(tex.imguiId, a, b, ImVec2(0, 0), ImVec2(tex.u1, tex.v1));
}

// Grid lines, only when they do not drown the colours.
void drawGridLines(ImDrawList* dl, const View& v) {
  if (v.L.cellW < 7 || v.L.cellH < 7) return;
  const ImU32 gridCol = IM_COL32(0, 0, 0, 70);
  for (int c = v.c0; c <= v.c1; ++c) dl->AddLine(v.cellMin(v.r0, c), v.cellMin(v.r1, c), gridCol);
  for (int r = v.r0; r <= v.r1; ++r) dl->AddLine(v.cellMin(r, v.c0), v.cellMin(r, v.c1), gridCol);
}

// Blocked cells (the texture already has them in the blocked colour): the cross every view and
// the exported pictures draw, so a 0 from the mask is told apart from a tiny weight.
// Small cells mean thousands of crosses (a causal T = 4096 map zoomed to 12-pixel cells: 1100),
// and an antialiased 1.5-pixel line is 6 triangles where a plain one is 2: below kSmoothCrossCell
// the crosses are drawn without antialiasing (a 2–5 pixel stroke looks the same), which took
// ~40 % off such a frame with the software renderer.
constexpr float kSmoothCrossCell = 24.0f;  // px

// NaN cells get their dot at the same size (colormap.hpp: the marks differ by pattern and
// lightness, never by hue alone).
void drawBlockedCrosses(ImDrawList* dl, const HeatmapSpec& spec, const View& v) {
  if (v.L.cellW < kMinCrossCell || v.L.cellH < kMinCrossCell) return;
  const ImDrawListFlags flags = dl->Flags;
  if (std::min(v.L.cellW, v.L.cellH) < kSmoothCrossCell) dl->Flags &= ~ImDrawListFlags_AntiAliasedLines;
  const ImVec2 cell(v.L.cellW, v.L.cellH);
  for (int r = v.r0; r < v.r1; ++r) {
    for (int c = v.c0; c < v.c1; ++c) {
      if (blockedAt(spec, r, v.colBegin + c)) {
        addBlockedCross(dl, v.cellMin(r, c), cell);
      } else if (std::isnan(spec.slice->at(r, v.colBegin + c))) {
        addNanDot(dl, v.cellMin(r, c), cell);
      }
    }
  }
  dl->Flags = flags;
}

// Numbers, only when a cell can hold one legibly.
void drawCellNumbers(ImDrawList* dl, const HeatmapSpec& spec, const View& v) {
  const float em = ImGui::GetFontSize();
  const float numW = ImGui::CalcTextSize("-0.00").x + 0.3f * em;
  if (!spec.showNumbers || v.L.cellW < numW || v.L.cellH < em * 1.05f) return;
  const Slice2D& s = *spec.slice;
  for (int r = v.r0; r < v.r1; ++r) {
    for (int c = v.c0; c < v.c1; ++c) {
      if (blockedAt(spec, r, v.colBegin + c)) continue;  // the cross says it
      const float value = s.at(r, v.colBegin + c);
      const std::string txt = formatCellValue(value);  // the exporter's rule (core/util/format.hpp)
      const ImVec2 ts = ImGui::CalcTextSize(txt.c_str());
      const ImVec2 a = v.cellMin(r, c);
      // The text colour follows the cell's colour on the scale in use.
      const float pos = colorPosition(spec.scale, spec.range, value, spec.scale == ColorScale::PerRow ? rowMaxOf(spec, r) : 0.0f);
      const RGBA8 px = mapValue(spec.colormap, ColorRange{0.0f, 1.0f}, pos);
      dl->AddText(ImVec2(a.x + (v.L.cellW - ts.x) * 0.5f, a.y + (v.L.cellH - ts.y) * 0.5f),
                  textColorOn(IM_COL32(px.r, px.g, px.b, 255)), txt.c_str());
    }
  }
}

// Fully masked query rows: a red frame across the row; the hovered row and column lit.
void drawRowFlagsAndHover(ImDrawList* dl, const HeatmapSpec& spec, const View& v, const HeatmapHover& hover) {
  const Slice2D& s = *spec.slice;
  if (spec.trace && s.rowAxis == "T_q") {
    for (int r = v.r0; r < v.r1; ++r) {
      if (!spec.trace->isFullyMasked(s.batchIndex, r)) continue;
      const ImVec2 a = v.cellMin(r, v.c0), b(v.cellMin(r, v.c1).x, v.cellMin(r + 1, v.c1).y);
      const RGBA8 e = maskedRowEdgeColor();
      dl->AddRect(a, b, IM_COL32(e.r, e.g, e.b, 255), 0, 0, 4.0f);  // the dark edge, then the red inside it
      dl->AddRect(a, b, kMaskFlagColor, 0, 0, 2.0f);
    }
  }
  if (!hover.hovered) return;
  const ImU32 lit = IM_COL32(255, 255, 255, 45);
  dl->AddRectFilled(v.cellMin(hover.row, v.c0), ImVec2(v.cellMin(hover.row, v.c1).x, v.cellMin(hover.row + 1, v.c1).y), lit);
  dl->AddRectFilled(v.cellMin(v.r0, hover.col), ImVec2(v.cellMin(v.r1, hover.col + 1).x, v.cellMin(v.r1, hover.col).y), lit);
  const ImVec2 a = v.cellMin(hover.row, hover.col);
  dl->AddRect(a, ImVec2(a.x + v.L.cellW, a.y + v.L.cellH), IM_COL32(255, 255, 255, 255), 0, 0, 2.0f);
}

// Which head owns which columns of d_model (the split to come, or the merge just done).
void drawHeadStrip(ImDrawList* dl, const HeatmapSpec& spec, const View& v) {
  if (!v.modelCols) return;
  const Layout& L = v.L;
  dl->PushClipRect(ImVec2(L.plotMin.x, L.plotMin.y - L.stripH), ImVec2(L.plotMax.x, L.plotMin.y), true);
  for (int h = 0; h < spec.heads; ++h) {
    const int a = h * spec.dk - v.colBegin, b = (h + 1) * spec.dk - v.colBegin;
    if (b <= v.c0 || a >= v.c1) continue;
    dl->AddRectFilled(ImVec2(v.cellMin(0, a).x, L.plotMin.y - L.stripH), ImVec2(v.cellMin(0, b).x, L.plotMin.y - 1.0f),
                      headColor(h));
  }
  dl->PopClipRect();
}

// The share of a line of text its glyphs fill (the rest is the blank above and below them).
constexpr float kLabelInk = 0.75f;

// Every k-th row (or column) gets a label, k the same all along the axis. A label's box is a line
// (em) tall: neighbours may share the quarter of blank line between them, so cells a little thinner
// than a line keep every label. Cells thinner than a line move the first label inside the plot, half
// a line minus half a cell later than its cell's centre: k is then large enough that the k-th label
// still clears it, (k + 1/2)·cell ≥ (1 + 1/2 − 1/4)·em, so no label but the hovered one is skipped.
int labelStride(float cell, float em) {
  const float k = std::ceil(kLabelInk * em / cell);
  const float clearFirst = cell < em ? std::ceil((1.0f + 0.5f - (1.0f - kLabelInk)) * em / cell - 0.5f) : 1.0f;
  return std::max(1, static_cast<int>(std::max(k, clearFirst)));
}

// Row labels: every k-th when the cells are smaller than a label's glyphs; the hovered one lit.
// Returns how many labels were drawn partly outside the plot's height (cut by the clip).
int drawRowLabels(ImDrawList* dl, const HeatmapSpec& spec, const View& v, const HeatmapHover& hover) {
  const Slice2D& s = *spec.slice;
  const float em = ImGui::GetFontSize();
  const ImU32 textCol = ImGui::GetColorU32(ImGuiCol_Text);
  const int rowStride = labelStride(v.L.cellH, em);
  dl->PushClipRect(ImVec2(v.origin.x, v.L.plotMin.y), ImVec2(v.L.plotMin.x, v.L.plotMax.y), true);
  int cut = 0;
  float lastBottom = -1e30f;  // of the label drawn before, so a label moved inside never covers it
  for (int r = v.r0; r < v.r1; ++r) {
    if (r % rowStride != 0 && r != hover.row) continue;
    const std::string label = fitText(readableToken(s.rowLabels[static_cast<std::size_t>(r)], ImGui::GetFont()),
                                      v.L.rowLabelW - 0.6f * em);
    const ImVec2 ts = ImGui::CalcTextSize(label.c_str());
    // Centred on its row, but inside the plot's height: rows thinner than a line of text would
    // centre the first label half above the plot, where the clip cut it under "T_q ↓".
    const float centred = v.cellMin(r, 0).y + (v.L.cellH - ts.y) * 0.5f;
    const float y = std::max(std::min(centred, v.L.plotMax.y - ts.y), v.L.plotMin.y);
    if (y < lastBottom - (1.0f - kLabelInk) * em && r != hover.row) continue;
    lastBottom = y + ts.y;
    if (y < v.L.plotMin.y - 0.5f || y + ts.y > v.L.plotMax.y + 0.5f) ++cut;
    dl->AddText(ImVec2(v.L.plotMin.x - 0.4f * em - ts.x, y), r == hover.row ? kLitLabel : textCol, label.c_str());
    if (spec.trace && s.rowAxis == "T_q" && spec.trace->isFullyMasked(s.batchIndex, r)) {
      dl->AddCircleFilled(ImVec2(v.origin.x + 0.3f * em, y + ts.y * 0.5f), 0.25f * em, kMaskFlagColor);
    }
  }
  dl->PopClipRect();
  return cut;
}

// Column labels (turned upright, in the heads' colours over d_model) and the corner's axis names.
void drawColumnLabels(ImDrawList* dl, const HeatmapSpec& spec, const View& v, const HeatmapHover& hover) {
  const Slice2D& s = *spec.slice;
  const float em = ImGui::GetFontSize();
  const ImU32 textCol = ImGui::GetColorU32(ImGuiCol_Text);
  const int colStride = labelStride(v.L.cellW, em);
  const float labelBottom = v.L.plotMin.y - v.L.stripH - 0.3f * em;
  dl->PushClipRect(ImVec2(v.L.plotMin.x, v.origin.y), ImVec2(v.L.plotMax.x, labelBottom + 1), true);
  float lastRight = -1e30f;  // of the label drawn before, so a label moved inside never covers it
  for (int c = v.c0; c < v.c1; ++c) {
    const int dataCol = v.colBegin + c;
    if (dataCol % colStride != 0 && c != hover.col) continue;
    const float centre = v.cellMin(0, c).x + 0.5f * v.L.cellW;
    if (centre < v.L.plotMin.x || centre > v.L.plotMax.x) continue;  // half-hidden column: no label
    const std::string label = fitText(readableToken(s.colLabels[static_cast<std::size_t>(dataCol)], ImGui::GetFont()),
                                      v.L.colLabelH - 0.6f * em);
    // Centred on its column, but inside the plot's width (as the row labels): columns thinner than
    // a line of text would centre the first label half left of the plot, where the clip cut it.
    const float centred = v.cellMin(0, c).x + (v.L.cellW - em) * 0.5f;
    const float x = std::max(std::min(centred, v.L.plotMax.x - em), v.L.plotMin.x);
    if (x < lastRight - (1.0f - kLabelInk) * em && c != hover.col) continue;
    lastRight = x + em;
    ImU32 col = c == hover.col ? kLitLabel : textCol;
    if (v.modelCols && c != hover.col) col = headColor(dataCol / spec.dk);
    addVerticalText(dl, ImVec2(x, labelBottom), col, label);
  }
  dl->PopClipRect();
  const ImVec2 corner(v.origin.x + 0.2f * em, v.origin.y + v.L.colLabelH - 2.3f * em);
  dl->AddText(corner, symbolColor(s.colAxis), (s.colAxis + " →").c_str());
  dl->AddText(ImVec2(corner.x, corner.y + 1.1f * em), symbolColor(s.rowAxis), (s.rowAxis + " ↓").c_str());
}

}  // namespace

HeatmapHover drawHeatmap(const char* id, const HeatmapSpec& spec, HeatmapZoom* zoom, ImVec2 size) {
  HeatmapHover hover;
  ImGui::PushID(id);
  const Slice2D& s = *spec.slice;
  const int cols = (spec.colEnd < 0 ? s.cols : std::clamp(spec.colEnd, 0, s.cols)) - std::clamp(spec.colBegin, 0, s.cols);
  if (s.rows <= 0 || cols <= 0 || size.x < 4 || size.y < 4) {
    ImGui::Dummy(ImVec2(std::max(size.x, 1.0f), std::max(size.y, 1.0f)));
    ImGui::PopID();
    return hover;
  }
  View v = layoutHeatmap(spec, zoom, size);
  handleZoomPan(v, spec, zoom, hover);
  placeCells(v, hover);

  ImDrawList* dl = ImGui::GetWindowDrawList();
  dl->PushClipRect(v.L.plotMin, v.L.plotMax, true);
  drawCells(dl, spec, v, hover);
  hoverBlockExtreme(spec, v.colBegin, v.L.cols, hover);
  drawGridLines(dl, v);
  drawBlockedCrosses(dl, spec, v);
  drawCellNumbers(dl, spec, v);
  drawRowFlagsAndHover(dl, spec, v, hover);
  dl->PopClipRect();
  if (spec.frameColor) {
    dl->AddRect(ImVec2(v.L.plotMin.x - 1, v.L.plotMin.y - 1), ImVec2(v.L.plotMax.x + 1, v.L.plotMax.y + 1), spec.frameColor, 0, 0, 2.0f);
  }
  drawHeadStrip(dl, spec, v);
  if (spec.axisLabels) {
    hover.rowLabelsCut = drawRowLabels(dl, spec, v, hover);
    drawColumnLabels(dl, spec, v, hover);
  }
  const float em = ImGui::GetFontSize();
  if (spec.colorbarTexture) {
    drawColorbar(dl, spec.colorbarTexture, colorbarTicks(spec.scale, spec.range),
                 ImVec2(v.L.plotMax.x + 0.8f * em, v.L.plotMin.y), std::max(v.plotH(), 8.0f * em));
  }
  if (hover.hovered && spec.tooltip) cellTooltip(spec, hover);

  // Leave the cursor below the whole widget.
  ImGui::SetCursorScreenPos(v.origin);
  const float barH = spec.colorbarTexture ? 8.0f * em : 0.0f;
  ImGui::Dummy(ImVec2(size.x, std::max(v.L.colLabelH + v.L.stripH + std::max(v.plotH(), barH), 1.0f)));
  ImGui::PopID();
  return hover;
}

std::string samplingLabel(const HeatmapHover& drawn, DownsampleRule rule) {
  if (drawn.rowStep <= 1 && drawn.colStep <= 1) return {};
  char buf[128];
  const bool onePixel = drawn.pixelsPerTexelX < 1.5f && drawn.pixelsPerTexelY < 1.5f;
  std::snprintf(buf, sizeof buf, onePixel ? "1 pixel ≈ %d×%d cells (%s)" : "1 texel = %d×%d cells (%s)", drawn.rowStep,
                drawn.colStep, downsampleRuleName(rule));
  return buf;
}

// ---------------------------------------------------------------------------------------------
// [SECTION] colour bar
// ---------------------------------------------------------------------------------------------

bool columnsOwnedByHeads(const HeatmapSpec& spec) {
  const Slice2D& s = *spec.slice;
  if (spec.heads <= 0 || spec.dk <= 0 || s.cols != spec.heads * spec.dk) return false;
  if (s.weight) {  // W_q, W_k, W_v (and their biases): output column j feeds head floor(j / d_k)
    const WeightId w = *s.weight;
    return w == WeightId::Wq || w == WeightId::Wk || w == WeightId::Wv || w == WeightId::Bq || w == WeightId::Bk ||
           w == WeightId::Bv;
  }
  return s.colAxis == "d_model" && headsOwnColumns(s.stage);
}

void addBlockedCross(ImDrawList* dl, ImVec2 cellMin, ImVec2 cellSize) {
  const RGBA8 c = blockedMarkColor();
  const float d = std::min(cellSize.x, cellSize.y) * 0.22f;
  const ImVec2 m(cellMin.x + cellSize.x * 0.5f, cellMin.y + cellSize.y * 0.5f);
  dl->AddLine(ImVec2(m.x - d, m.y - d), ImVec2(m.x + d, m.y + d), IM_COL32(c.r, c.g, c.b, 255), 1.5f);
  dl->AddLine(ImVec2(m.x - d, m.y + d), ImVec2(m.x + d, m.y - d), IM_COL32(c.r, c.g, c.b, 255), 1.5f);
}

void addNanDot(ImDrawList* dl, ImVec2 cellMin, ImVec2 cellSize) {
  const RGBA8 c = nanMarkColor();
  const float radius = std::max(1.5f, std::min(cellSize.x, cellSize.y) * 0.18f);
  dl->AddCircleFilled(ImVec2(cellMin.x + cellSize.x * 0.5f, cellMin.y + cellSize.y * 0.5f), radius, IM_COL32(c.r, c.g, c.b, 255));
}

void drawBlockedSwatch(ImDrawList* dl, ImVec2 topLeft, ColormapId colormap) {
  const float em = ImGui::GetFontSize();
  const RGBA8 c = blockedColor(colormap);
  const ImVec2 a(topLeft.x, topLeft.y + 0.1f * em);
  dl->AddRectFilled(a, ImVec2(a.x + 0.9f * em, a.y + 0.9f * em), IM_COL32(c.r, c.g, c.b, 255));
  addBlockedCross(dl, a, ImVec2(0.9f * em, 0.9f * em));
}

float colorbarWidth() {
  const float em = ImGui::GetFontSize();
  return 0.8f * em + 1.1f * em + 0.75f * em + ImGui::CalcTextSize("-0.000e+00").x * 0.75f;
}

void drawColorbar(ImDrawList* dl, void* texture, ColorRange range, ImVec2 topLeft, float height) {
  drawColorbar(dl, texture, colorbarTicks(ColorScale::Linear, range), topLeft, height);
}

void drawColorbar(ImDrawList* dl, void* texture, const ColorbarTicks& ticks, ImVec2 topLeft, float height) {
  const float em = ImGui::GetFontSize();
  const float barW = 1.1f * em;
  const ImVec2 a = topLeft;
  const ImVec2 b(topLeft.x + barW, topLeft.y + height);
  // The strip texture runs lo → hi left to right; turned upright here, hi at the top.
  dl->AddImageQuad(texture, ImVec2(a.x, a.y), ImVec2(b.x, a.y), ImVec2(b.x, b.y), ImVec2(a.x, b.y), ImVec2(1, 0.5f),
                   ImVec2(1, 0.5f), ImVec2(0, 0.5f), ImVec2(0, 0.5f));
  dl->AddRect(a, b, IM_COL32(200, 200, 200, 160));
  const ImU32 textCol = ImGui::GetColorU32(ImGuiCol_Text);
  const std::string* labels[3] = {&ticks.top, &ticks.middle, &ticks.bottom};
  for (int i = 0; i < 3; ++i) {
    const float y = a.y + height * 0.5f * static_cast<float>(i);
    // A short tick, then a clear gap: a tick touching "0.5" reads as "-0.5".
    dl->AddLine(ImVec2(b.x, y), ImVec2(b.x + 0.25f * em, y), textCol);
    const float ty = std::clamp(y - 0.5f * em, a.y - 0.2f * em, b.y - 0.8f * em);
    dl->AddText(ImVec2(b.x + 0.75f * em, ty), textCol, labels[i]->c_str());
  }
}

}  // namespace mhascope::app
