// All heads side by side for the current stage, on one colour scale: hover a head for a large
// preview, click it to focus it in the Heatmap tab. Stages without a head axis show their
// d_model columns cut into the h blocks the heads get (or came from), so the split is visible.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "panels/panel.hpp"
#include "widgets/colors.hpp"
#include "widgets/export_button.hpp"
#include "widgets/flow.hpp"
#include "widgets/heatmap_view.hpp"

namespace mhascope::app {

void drawHeadGridPanel(UiContext& ctx) {
  AppState& st = ctx.state;
  ViewState& view = ctx.view;
  if (!st.hasTrace()) {
    ImGui::TextDisabled(st.computing ? "computing the first picture…" : "no picture yet: fix the configuration on the left");
    return;
  }
  const Trace& t = st.trace;
  const StageId stage = view.stage;
  view.batch = std::clamp(view.batch, 0, t.batch - 1);
  const bool perHead = stageHasHeads(stage);
  const float em = ImGui::GetFontSize();
  const ColormapId cmap = effectiveColormap(view, stage);
  // One scale for the whole grid, so colours compare across heads.
  const ColorRange range = st.stageRange(stage, view.batch);

  if (t.batch > 1) {
    ImGui::SetNextItemWidth(8 * em);
    int b = view.batch + 1;
    if (ImGui::SliderInt("batch item", &b, 1, t.batch)) view.batch = b - 1;
    ImGui::SameLine(0, em);
  }
  std::vector<const Slice2D*> slices;
  if (perHead) {
    for (int h = 0; h < t.heads; ++h) slices.push_back(st.slice(stage, view.batch, h));
  } else {
    slices.push_back(st.slice(stage, view.batch, -1));
  }
  if (std::find(slices.begin(), slices.end(), nullptr) != slices.end()) return;
  ExportTarget target;
  target.slices = slices;
  target.grid = perHead;
  target.colormap = cmap;
  target.range = range;
  drawExportButton(ctx, "export_grid", target);
  ImGui::SameLine(0, em);
  ImGui::AlignTextToFramePadding();
  if (perHead) {
    ImGui::TextDisabled("%d heads of %s, one colour scale. Hover: preview. Click: open in the Heatmap tab.", t.heads,
                        stageInfo(stage).title);
  } else if (stage == StageId::Output) {
    ImGui::TextWrapped("Output has no head axis and W_o has mixed the heads: these column blocks no longer belong to one head.");
  } else if (stage == StageId::Concat) {
    ImGui::TextDisabled("Merge heads: block h holds head h's output, d_k = %d columns each.", t.dk);
  } else {
    ImGui::TextDisabled("No head axis yet: block h is the d_k = %d columns head h will get after the split.", t.dk);
  }

  const Slice2D& first = *slices.front();
  const int rows = first.rows;
  const int cols = perHead ? first.cols : t.dk;
  const int n = t.heads;
  const int gridCols = static_cast<int>(std::ceil(std::sqrt(static_cast<double>(n))));
  const int gridRows = (n + gridCols - 1) / gridCols;
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float cbW = colorbarWidth() + 0.5f * em;
  const float titleH = ImGui::GetTextLineHeightWithSpacing();
  const float gap = 0.6f * em;
  const float cellW = std::max(2.0f * em, (avail.x - cbW) / static_cast<float>(gridCols) - gap);
  const float cellH = std::max(2.0f * em, avail.y / static_cast<float>(gridRows) - gap - titleH);
  // Token labels on every map when there is room for them (few heads, short sequences);
  // otherwise bare square cells, as many as fit.
  const bool labels = n <= 9 && std::min(cellW / static_cast<float>(cols + 5), cellH / static_cast<float>(rows + 5)) >= em;
  const float side = std::min(cellW / static_cast<float>(cols), cellH / static_cast<float>(rows));
  const ImVec2 mapSize = labels ? ImVec2(cellW, cellH)
                                : ImVec2(std::max(side * static_cast<float>(cols), 2.0f * em),
                                         std::max(side * static_cast<float>(rows), 2.0f * em));
  const ImVec2 gridOrigin = ImGui::GetCursorScreenPos();

  for (int h = 0; h < n; ++h) {
    ImGui::PushID(h);
    const int gx = h % gridCols, gy = h / gridCols;
    const ImVec2 p(gridOrigin.x + static_cast<float>(gx) * (mapSize.x + gap),
                   gridOrigin.y + static_cast<float>(gy) * (mapSize.y + gap + titleH));
    ImGui::SetCursorScreenPos(p);
    const bool focused = h == view.head;
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(headColor(h)), focused ? "head %d  ◀ in Heatmap" : "head %d", h + 1);
    ImGui::SetCursorScreenPos(ImVec2(p.x, p.y + titleH));  // under its own title, not at the line start
    const Slice2D& s = perHead ? *slices[static_cast<std::size_t>(h)] : first;
    HeatmapSpec spec;
    spec.slice = &s;
    spec.colormap = cmap;
    spec.range = range;
    spec.trace = &t;
    spec.heads = t.heads;
    spec.dk = t.dk;
    spec.axisLabels = labels;
    spec.interactive = false;
    spec.showNumbers = view.showNumbers;
    spec.tooltip = false;
    spec.frameColor = headColor(h, focused ? 1.0f : 0.6f);
    if (!perHead) {
      spec.colBegin = h * t.dk;
      spec.colEnd = (h + 1) * t.dk;
    }
    const TextureKey key{st.traceSerial, static_cast<int>(stage), view.batch, perHead ? h : -1, cmap, range.lo, range.hi};
    spec.texture = ctx.textures.get(key, s.data, s.rows, s.cols);
    const HeatmapHover hover = drawHeatmap("map", spec, nullptr, mapSize);
    if (hover.hovered) {
      ImGui::BeginTooltip();
      ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(headColor(h)), "head %d", h + 1);
      ImGui::SameLine();
      ImGui::TextDisabled(perHead ? "(click to open it in the Heatmap tab)" : "(its d_k columns)");
      HeatmapSpec big = spec;
      big.axisLabels = true;
      big.colorbarTexture = nullptr;
      const float previewSide = 22.0f * em;
      const float k = previewSide / static_cast<float>(std::max(rows, cols));
      drawHeatmap("preview", big, nullptr,
                  ImVec2(static_cast<float>(cols) * k + 9.6f * em, static_cast<float>(rows) * k + 7.6f * em));
      const float v = s.at(hover.row, spec.colBegin + hover.col);
      ImGui::Text("cell (%d, %d) = %.6g", hover.row, spec.colBegin + hover.col, static_cast<double>(v));
      ImGui::EndTooltip();
    }
    if (hover.clicked) {
      view.head = h;
      view.selectTab = kHeatmapTab;
    }
    ctx.probes.recordLastItem("grid_head_" + std::to_string(h + 1));
    ImGui::PopID();
  }
  // The shared colour bar, right of the grid.
  const float gridW = static_cast<float>(gridCols) * (mapSize.x + gap);
  drawColorbar(ImGui::GetWindowDrawList(), ctx.textures.colorbar(cmap).imguiId(), range,
               ImVec2(gridOrigin.x + gridW + 0.3f * em, gridOrigin.y + titleH),
               std::max(8.0f * em, std::min(static_cast<float>(gridRows) * (mapSize.y + gap + titleH) - titleH, 20.0f * em)));
  ImGui::SetCursorScreenPos(gridOrigin);
  ImGui::Dummy(ImVec2(gridW + cbW, static_cast<float>(gridRows) * (mapSize.y + gap + titleH)));
}

}  // namespace mhascope::app
