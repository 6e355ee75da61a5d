// [SECTION] index
//   layout      — where labels, cells and the colour bar go, and the cell size at a zoom
//   text        — vertical labels, number formatting
//   tooltip     — what a hovered cell means, in tokens and axis names
//   drawHeatmap — the widget
//   colour bar
#include "widgets/heatmap_view.hpp"

#include <imgui.h>
#include <imgui_internal.h>  // SetItemUsingMouseWheel (1.86 keeps it internal)

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "widgets/colors.hpp"
#include "widgets/labels.hpp"
#include "util/format.hpp"

namespace mhascope::app {
namespace {

// ---------------------------------------------------------------------------------------------
// [SECTION] layout
// ---------------------------------------------------------------------------------------------

constexpr float kMaxZoom = 64.0f;
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
  // unclipped; callers keep labels short (fitText) so they stay in their margin.
  dl->PushClipRectFullScreen();
  dl->AddText(bottomLeft, color, text.c_str());
  dl->PopClipRect();
  for (int i = first; i < dl->VtxBuffer.Size; ++i) {
    ImDrawVert& v = dl->VtxBuffer[i];
    const float dx = v.pos.x - bottomLeft.x;
    const float dy = v.pos.y - bottomLeft.y;
    v.pos = ImVec2(bottomLeft.x + dy, bottomLeft.y - dx);
  }
}

std::string formatTick(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", static_cast<double>(v));
  return buf;
}

// ---------------------------------------------------------------------------------------------
// [SECTION] tooltip
// ---------------------------------------------------------------------------------------------

bool blockedAt(const HeatmapSpec& spec, int r, int dataCol) {
  const Slice2D& s = *spec.slice;
  return s.isBlockedCell(r, dataCol) || s.at(r, dataCol) == -std::numeric_limits<float>::infinity();
}

// One axis position in words: "query «cat» (row 1 of T_q)", "feature 5 of d_k (d_model 13)".
std::string describeIndex(const Slice2D& s, bool row, int index, const HeatmapSpec& spec) {
  const std::string& axis = row ? s.rowAxis : s.colAxis;
  const auto& labels = row ? s.rowLabels : s.colLabels;
  const std::string token = index < static_cast<int>(labels.size())
                                ? readableToken(labels[static_cast<std::size_t>(index)], ImGui::GetFont())
                                : std::string("?");
  const std::string pos = std::to_string(index);
  if (axis == "T_q") return "query  «" + token + "»   (position " + pos + " of T_q)";
  if (axis == "T_k") return "key    «" + token + "»   (position " + pos + " of T_k)";
  if (axis == "d_k" && s.head >= 0 && spec.dk > 0) {
    return "feature " + pos + " of d_k   (column " + std::to_string(s.head * spec.dk + index) + " of d_model)";
  }
  if (!row && columnsOwnedByHeads(spec) && spec.dk > 0 && spec.heads > 1) {
    const int i = index / spec.dk;
    return "feature " + pos + " of " + axis + "   (column " + pos + " belongs to head floor(" + pos + " / " +
           std::to_string(spec.dk) + ") = " + std::to_string(i) + ")";
  }
  if (!row && axis == "d_model" && !s.weight && !headsOwnColumns(s.stage)) {
    return "feature " + pos + " of d_model   (" + noHeadOwnerNote(s.stage) + ")";
  }
  return "feature " + pos + " of " + axis;
}

void cellTooltip(const HeatmapSpec& spec, int r, int c) {
  const Slice2D& s = *spec.slice;
  const int dataCol = spec.colBegin + c;
  const float v = s.at(r, dataCol);
  ImGui::BeginTooltip();
  ImGui::TextUnformatted(describeIndex(s, true, r, spec).c_str());
  ImGui::TextUnformatted(describeIndex(s, false, dataCol, spec).c_str());
  ImGui::Separator();
  if (std::isinf(v) && v < 0) {
    ImGui::Text("value  −inf   (softmax gives it weight 0)");
  } else if (std::isnan(v)) {
    ImGui::TextColored(ImVec4(1, 0.3f, 1, 1), "value  NaN   (not a number: a bug worth seeing)");
  } else {
    ImGui::Text("value  %.9g", static_cast<double>(v));
  }
  const bool tokens = s.rowAxis == "T_q" && s.colAxis == "T_k";
  // What the number means for this query/key pair, in words.
  if (tokens && std::isfinite(v) && !blockedAt(spec, r, dataCol)) {
    const std::string q = "«" + readableToken(s.rowLabels[static_cast<std::size_t>(r)], ImGui::GetFont()) + "»";
    const std::string k = "«" + readableToken(s.colLabels[static_cast<std::size_t>(dataCol)], ImGui::GetFont()) + "»";
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    if (s.stage == StageId::Weights) {
      ImGui::Text("%s puts %.1f%% of its attention on %s (each row sums to 100%%)", q.c_str(), 100.0 * v, k.c_str());
    } else if (s.stage == StageId::Scores) {
      ImGui::Text("dot product of %s's query and %s's key in this head", q.c_str(), k.c_str());
    } else if (s.stage == StageId::ScaledScores || s.stage == StageId::MaskedScores) {
      ImGui::Text("the score of %s against %s, scaled", q.c_str(), k.c_str());
    }
    ImGui::PopStyleColor();
  }
  // A value the mask forces: say why (blocked key, a query with one visible key).
  if (spec.trace && tokens && !s.weight) {
    const std::string why = forcedCellReason(*spec.trace, s.stage, s.batchIndex, r, dataCol);
    if (!why.empty()) {
      ImGui::TextColored(ImVec4(1.0f, 0.85f, 0.45f, 1.0f), "%s", why.c_str());
    } else if (s.stage != StageId::MaskedScores && s.stage != StageId::Weights &&
               spec.trace->isBlocked(s.batchIndex, r, dataCol)) {
      ImGui::TextDisabled("the mask will block this key for this query (at the Mask stage)");
    }
  }
  if (spec.trace && s.rowAxis == "T_q" && !s.weight && spec.trace->isFullyMasked(s.batchIndex, r)) {
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(kMaskFlagColor),
                       "every key is blocked for this query: its weights and head output are 0 (its final output "
                       "row is b_o; PyTorch gives NaN there)");
  }
  ImGui::EndTooltip();
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// [SECTION] drawHeatmap
// ---------------------------------------------------------------------------------------------

HeatmapHover drawHeatmap(const char* id, const HeatmapSpec& spec, HeatmapZoom* zoom, ImVec2 size) {
  HeatmapHover hover;
  ImGui::PushID(id);
  const Slice2D& s = *spec.slice;
  const int colBegin = std::clamp(spec.colBegin, 0, s.cols);
  const int colEnd = spec.colEnd < 0 ? s.cols : std::clamp(spec.colEnd, colBegin, s.cols);
  Layout L;
  L.rows = s.rows;
  L.cols = colEnd - colBegin;
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const float em = ImGui::GetFontSize();
  if (L.rows <= 0 || L.cols <= 0 || size.x < 4 || size.y < 4) {
    ImGui::Dummy(ImVec2(std::max(size.x, 1.0f), std::max(size.y, 1.0f)));
    ImGui::PopID();
    return hover;
  }
  const ImFont* font = ImGui::GetFont();
  if (spec.axisLabels) {
    L.rowLabelW = std::clamp(maxLabelWidth(s, true, 0, L.rows, font), 1.5f * em, 9.0f * em) + 0.6f * em;
    // The corner's axis names ("T_q ↓", "d_model →") stay left of the first column's label.
    const float corner = std::max(ImGui::CalcTextSize((s.rowAxis + " ↓").c_str()).x,
                                  ImGui::CalcTextSize((s.colAxis + " →").c_str()).x);
    L.rowLabelW = std::max(L.rowLabelW, corner + 0.6f * em);
    L.colLabelH = std::clamp(maxLabelWidth(s, false, colBegin, colEnd, font), 1.5f * em, 7.0f * em) + 0.6f * em;
  }
  // The head-colour strip only over columns a head owns (never the inputs or the output).
  const bool modelCols = columnsOwnedByHeads(spec) && spec.heads > 1 && spec.dk > 0;
  if (modelCols) L.stripH = 0.45f * em;
  const float cbW = spec.colorbarTexture ? colorbarWidth() : 0.0f;
  const float availW = std::max(1.0f, size.x - L.rowLabelW - cbW);
  const float availH = std::max(1.0f, size.y - L.colLabelH - L.stripH);
  fitCells(L, availW, availH);
  float z = zoom ? std::clamp(zoom->zoom, 1.0f, kMaxZoom) : 1.0f;
  L.cellW *= z;
  L.cellH *= z;
  L.plotMin = ImVec2(origin.x + L.rowLabelW, origin.y + L.colLabelH + L.stripH);
  L.plotMax = ImVec2(L.plotMin.x + std::min(availW, L.cellW * static_cast<float>(L.cols)),
                     L.plotMin.y + std::min(availH, L.cellH * static_cast<float>(L.rows)));
  const float plotW = L.plotMax.x - L.plotMin.x;
  const float plotH = L.plotMax.y - L.plotMin.y;

  // Pan, in cells, kept inside the matrix.
  float panX = 0, panY = 0;
  auto clampPan = [&] {
    panX = std::clamp(panX, 0.0f, std::max(0.0f, static_cast<float>(L.cols) - plotW / L.cellW));
    panY = std::clamp(panY, 0.0f, std::max(0.0f, static_cast<float>(L.rows) - plotH / L.cellH));
  };
  if (zoom) {
    panX = zoom->panX;
    panY = zoom->panY;
    clampPan();
  }

  // Input: an invisible button over the cells catches hover, drag and wheel.
  ImGui::SetCursorScreenPos(L.plotMin);
  ImGui::InvisibleButton("cells", ImVec2(std::max(plotW, 1.0f), std::max(plotH, 1.0f)));
  hover.hovered = ImGui::IsItemHovered();
  hover.plotMin = L.plotMin;
  hover.plotMax = L.plotMax;
  hover.clicked = ImGui::IsItemClicked(ImGuiMouseButton_Left);
  ImGuiIO& io = ImGui::GetIO();
  if (zoom && spec.interactive) {
    if (hover.hovered) ImGui::SetItemUsingMouseWheel();
    if (hover.hovered && io.MouseWheel != 0.0f) {
      // Zoom about the mouse: the cell under it stays under it.
      const float mx = (io.MousePos.x - L.plotMin.x) / L.cellW + panX;
      const float my = (io.MousePos.y - L.plotMin.y) / L.cellH + panY;
      const float newZ = std::clamp(z * std::pow(1.25f, io.MouseWheel), 1.0f, kMaxZoom);
      L.cellW *= newZ / z;
      L.cellH *= newZ / z;
      z = newZ;
      panX = mx - (io.MousePos.x - L.plotMin.x) / L.cellW;
      panY = my - (io.MousePos.y - L.plotMin.y) / L.cellH;
    }
    if (ImGui::IsItemActive() && ImGui::IsMouseDragging(ImGuiMouseButton_Left, 2.0f)) {
      panX -= io.MouseDelta.x / L.cellW;
      panY -= io.MouseDelta.y / L.cellH;
    }
    if (hover.hovered && ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left)) {
      z = 1.0f;
      panX = panY = 0;
    }
    clampPan();
    zoom->zoom = z;
    zoom->panX = panX;
    zoom->panY = panY;
  }

  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 img0(L.plotMin.x - panX * L.cellW, L.plotMin.y - panY * L.cellH);
  const ImVec2 img1(img0.x + L.cellW * static_cast<float>(L.cols), img0.y + L.cellH * static_cast<float>(L.rows));
  const int c0 = std::max(0, static_cast<int>(std::floor(panX)));
  const int c1 = std::min(L.cols, static_cast<int>(std::ceil(panX + plotW / L.cellW)));
  const int r0 = std::max(0, static_cast<int>(std::floor(panY)));
  const int r1 = std::min(L.rows, static_cast<int>(std::ceil(panY + plotH / L.cellH)));
  auto cellMin = [&](int r, int c) {
    return ImVec2(img0.x + static_cast<float>(c) * L.cellW, img0.y + static_cast<float>(r) * L.cellH);
  };

  if (hover.hovered) {
    hover.col = std::clamp(static_cast<int>((io.MousePos.x - img0.x) / L.cellW), 0, L.cols - 1);
    hover.row = std::clamp(static_cast<int>((io.MousePos.y - img0.y) / L.cellH), 0, L.rows - 1);
  }

  // Cells: the texture (or the head's block of it), clipped to the plot.
  dl->PushClipRect(L.plotMin, L.plotMax, true);
  const float u0 = static_cast<float>(colBegin) / static_cast<float>(s.cols);
  const float u1 = static_cast<float>(colEnd) / static_cast<float>(s.cols);
  dl->AddImage(spec.texture.imguiId, img0, img1, ImVec2(u0, 0), ImVec2(u1, 1));

  if (L.cellW >= 7 && L.cellH >= 7) {  // grid lines only when they do not drown the colours
    const ImU32 gridCol = IM_COL32(0, 0, 0, 70);
    for (int c = c0; c <= c1; ++c) dl->AddLine(cellMin(r0, c), cellMin(r1, c), gridCol);
    for (int r = r0; r <= r1; ++r) dl->AddLine(cellMin(r, c0), cellMin(r, c1), gridCol);
  }
  // Blocked cells (the texture already has them in the blocked colour): the cross every view
  // and the exported pictures draw, so a 0 from the mask is told apart from a tiny weight.
  if (L.cellW >= kMinCrossCell && L.cellH >= kMinCrossCell) {
    for (int r = r0; r < r1; ++r) {
      for (int c = c0; c < c1; ++c) {
        if (blockedAt(spec, r, colBegin + c)) addBlockedCross(dl, cellMin(r, c), ImVec2(L.cellW, L.cellH));
      }
    }
  }
  // Numbers, only when a cell can hold one legibly.
  const float numW = ImGui::CalcTextSize("-0.00").x + 0.3f * em;
  if (spec.showNumbers && L.cellW >= numW && L.cellH >= em * 1.05f) {
    for (int r = r0; r < r1; ++r) {
      for (int c = c0; c < c1; ++c) {
        if (blockedAt(spec, r, colBegin + c)) continue;  // the cross says it
        const float v = s.at(r, colBegin + c);
        const std::string txt = formatCellValue(v);  // the exporter's rule (core/util/format.hpp)
        const ImVec2 ts = ImGui::CalcTextSize(txt.c_str());
        const ImVec2 a = cellMin(r, c);
        const ImU32 bg = [&] {
          const RGBA8 px = mapValue(spec.colormap, spec.range, v);
          return IM_COL32(px.r, px.g, px.b, 255);
        }();
        dl->AddText(ImVec2(a.x + (L.cellW - ts.x) * 0.5f, a.y + (L.cellH - ts.y) * 0.5f), textColorOn(bg), txt.c_str());
      }
    }
  }
  // Fully masked query rows: a red frame across the row.
  if (spec.trace && s.rowAxis == "T_q") {
    for (int r = r0; r < r1; ++r) {
      if (!spec.trace->isFullyMasked(s.batchIndex, r)) continue;
      dl->AddRect(cellMin(r, c0), ImVec2(cellMin(r, c1).x, cellMin(r + 1, c1).y), kMaskFlagColor, 0, 0, 2.0f);
    }
  }
  // Hover: the row and the column lit, the cell framed.
  if (hover.hovered) {
    const ImU32 lit = IM_COL32(255, 255, 255, 45);
    dl->AddRectFilled(cellMin(hover.row, c0), ImVec2(cellMin(hover.row, c1).x, cellMin(hover.row + 1, c1).y), lit);
    dl->AddRectFilled(cellMin(r0, hover.col), ImVec2(cellMin(r1, hover.col + 1).x, cellMin(r1, hover.col).y), lit);
    const ImVec2 a = cellMin(hover.row, hover.col);
    dl->AddRect(a, ImVec2(a.x + L.cellW, a.y + L.cellH), IM_COL32(255, 255, 255, 255), 0, 0, 2.0f);
  }
  dl->PopClipRect();
  if (spec.frameColor) dl->AddRect(ImVec2(L.plotMin.x - 1, L.plotMin.y - 1), ImVec2(L.plotMax.x + 1, L.plotMax.y + 1), spec.frameColor, 0, 0, 2.0f);

  // Which head owns which columns of d_model (the split to come, or the merge just done).
  if (modelCols) {
    dl->PushClipRect(ImVec2(L.plotMin.x, L.plotMin.y - L.stripH), ImVec2(L.plotMax.x, L.plotMin.y), true);
    for (int h = 0; h < spec.heads; ++h) {
      const int a = h * spec.dk - colBegin, b = (h + 1) * spec.dk - colBegin;
      if (b <= c0 || a >= c1) continue;
      dl->AddRectFilled(ImVec2(cellMin(0, a).x, L.plotMin.y - L.stripH), ImVec2(cellMin(0, b).x, L.plotMin.y - 1.0f),
                        headColor(h));
    }
    dl->PopClipRect();
  }

  // Axis labels: every k-th when the cells are smaller than a line of text.
  if (spec.axisLabels) {
    const ImU32 textCol = ImGui::GetColorU32(ImGuiCol_Text);
    const ImU32 litText = IM_COL32(255, 230, 120, 255);
    const int rowStride = std::max(1, static_cast<int>(std::ceil(em / L.cellH)));
    dl->PushClipRect(ImVec2(origin.x, L.plotMin.y), ImVec2(L.plotMin.x, L.plotMax.y), true);
    for (int r = r0; r < r1; ++r) {
      if (r % rowStride != 0 && r != hover.row) continue;
      const std::string label = fitText(readableToken(s.rowLabels[static_cast<std::size_t>(r)], font), L.rowLabelW - 0.6f * em);
      const ImVec2 ts = ImGui::CalcTextSize(label.c_str());
      const float y = cellMin(r, 0).y + (L.cellH - ts.y) * 0.5f;
      dl->AddText(ImVec2(L.plotMin.x - 0.4f * em - ts.x, y), r == hover.row ? litText : textCol, label.c_str());
      if (spec.trace && s.rowAxis == "T_q" && spec.trace->isFullyMasked(s.batchIndex, r)) {
        dl->AddCircleFilled(ImVec2(origin.x + 0.3f * em, y + ts.y * 0.5f), 0.25f * em, kMaskFlagColor);
      }
    }
    dl->PopClipRect();
    const int colStride = std::max(1, static_cast<int>(std::ceil(em / L.cellW)));
    const float labelBottom = L.plotMin.y - L.stripH - 0.3f * em;
    dl->PushClipRect(ImVec2(L.plotMin.x, origin.y), ImVec2(L.plotMax.x, labelBottom + 1), true);
    for (int c = c0; c < c1; ++c) {
      const int dataCol = colBegin + c;
      if (dataCol % colStride != 0 && c != hover.col) continue;
      const float centre = cellMin(0, c).x + 0.5f * L.cellW;
      if (centre < L.plotMin.x || centre > L.plotMax.x) continue;  // half-hidden column: no label
      std::string label = fitText(readableToken(s.colLabels[static_cast<std::size_t>(dataCol)], font), L.colLabelH - 0.6f * em);
      const float x = cellMin(0, c).x + (L.cellW - em) * 0.5f;
      ImU32 col = c == hover.col ? litText : textCol;
      if (modelCols) col = c == hover.col ? litText : headColor(dataCol / spec.dk);
      addVerticalText(dl, ImVec2(x, labelBottom), col, label);
    }
    dl->PopClipRect();
    // The corner says which axis is which, in the symbols' colours.
    const ImVec2 corner(origin.x + 0.2f * em, origin.y + L.colLabelH - 2.3f * em);
    dl->AddText(corner, symbolColor(s.colAxis), (s.colAxis + " →").c_str());
    dl->AddText(ImVec2(corner.x, corner.y + 1.1f * em), symbolColor(s.rowAxis), (s.rowAxis + " ↓").c_str());
  }

  if (spec.colorbarTexture) {
    drawColorbar(dl, spec.colorbarTexture, spec.range, ImVec2(L.plotMax.x + 0.8f * em, L.plotMin.y),
                 std::max(plotH, 8.0f * em));
  }

  if (hover.hovered && spec.tooltip) cellTooltip(spec, hover.row, hover.col);

  // Leave the cursor below the whole widget.
  ImGui::SetCursorScreenPos(origin);
  ImGui::Dummy(ImVec2(size.x, std::max(L.colLabelH + L.stripH + std::max(plotH, spec.colorbarTexture ? 8.0f * em : 0.0f),
                                       1.0f)));
  ImGui::PopID();
  return hover;
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
  const float em = ImGui::GetFontSize();
  const float barW = 1.1f * em;
  const ImVec2 a = topLeft;
  const ImVec2 b(topLeft.x + barW, topLeft.y + height);
  // The strip texture runs lo → hi left to right; turned upright here, hi at the top.
  dl->AddImageQuad(texture, ImVec2(a.x, a.y), ImVec2(b.x, a.y), ImVec2(b.x, b.y), ImVec2(a.x, b.y), ImVec2(1, 0.5f),
                   ImVec2(1, 0.5f), ImVec2(0, 0.5f), ImVec2(0, 0.5f));
  dl->AddRect(a, b, IM_COL32(200, 200, 200, 160));
  const ImU32 textCol = ImGui::GetColorU32(ImGuiCol_Text);
  const float values[3] = {range.hi, 0.5f * (range.lo + range.hi), range.lo};
  for (int i = 0; i < 3; ++i) {
    const float y = a.y + height * 0.5f * static_cast<float>(i);
    // A short tick, then a clear gap: a tick touching "0.5" reads as "-0.5".
    dl->AddLine(ImVec2(b.x, y), ImVec2(b.x + 0.25f * em, y), textCol);
    const float ty = std::clamp(y - 0.5f * em, a.y - 0.2f * em, b.y - 0.8f * em);
    dl->AddText(ImVec2(b.x + 0.75f * em, ty), textCol, formatTick(values[i]).c_str());
  }
}

}  // namespace mhascope::app
