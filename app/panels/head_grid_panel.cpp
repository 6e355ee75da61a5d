// All heads side by side for the current stage, on one colour scale: hover a head for a large
// preview, click it to focus it in the Heatmap tab. The projections and the merged heads show
// their d_model columns cut into the h blocks the heads get (or came from), so the split is
// visible; the inputs and the output, whose columns no head owns, are shown whole.
#include <imgui.h>

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <string>

#include "widgets/drag_slider.hpp"
#include "panels/panel.hpp"
#include "widgets/colors.hpp"
#include "widgets/export_button.hpp"
#include "widgets/flow.hpp"
#include "widgets/heatmap_view.hpp"

namespace mhascope::app {
namespace {

// A small filled tag "K/V g" right of a query head's title: the K/V head it reads, in its group's colour.
void kvTag(UiContext& ctx, int queryHead, int kvHead, ImU32 color) {
  const float em = ImGui::GetFontSize();
  ImGui::SameLine(0, 0.4f * em);
  const std::string text = "K/V " + std::to_string(kvHead);
  const ImVec2 p = ImGui::GetCursorScreenPos();
  const ImVec2 size = ImGui::CalcTextSize(text.c_str());
  const ImVec2 pad(0.25f * em, 0.0f);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  dl->AddRectFilled(p, ImVec2(p.x + size.x + 2 * pad.x, p.y + size.y), color, 0.25f * em);
  dl->AddText(ImVec2(p.x + pad.x, p.y), IM_COL32(15, 15, 15, 255), text.c_str());
  ImGui::Dummy(ImVec2(size.x + 2 * pad.x, size.y));
  ctx.probes.recordLabel("grid_kv_tag_" + std::to_string(queryHead), text);
}

}  // namespace

// Over 80 lines (161) on purpose: one tab drawn top to bottom in reading order — the export line, the
// grid of heads (or the one blocked matrix) and the hover preview — every part using the trace, batch
// item, sizes and result fetched at the top.
void drawHeadGridPanel(UiContext& ctx) {
  AppState& st = ctx.state;
  ViewState& view = ctx.view;
  if (!traceReady(ctx)) return;
  const Trace& t = st.shown.trace;
  const StageId stage = view.stage;
  view.batch = std::clamp(view.batch, 0, t.batch - 1);
  const bool perHead = stageHasHeads(stage);
  const float em = ImGui::GetFontSize();
  const ColormapId cmap = effectiveColormap(view, stage);
  // One scale for the whole grid, so colours compare across heads.
  const ColorRange range = st.shown.stageRange(stage, view.batch);

  if (t.batch > 1) {
    ImGui::SetNextItemWidth(8 * em);
    dragSliderInt("batch item", &view.batch, 0, t.batch - 1);  // 0-based, as `--batch-index`
    ImGui::SameLine(0, em);
  }
  // Grouped-query attention: N K/V heads, query head i reads K/V head i / (h/N). The stages with a
  // K/V head axis (split and rotated K, V) show their N heads; the query heads' maps carry a tag
  // naming the K/V head they read, in the colour of its group (that of the group's first head).
  const int kvN = t.kvHeads > 0 ? t.kvHeads : t.heads;
  const int group = t.heads / std::max(1, kvN);
  const bool grouped = kvN < t.heads;
  const std::vector<std::string>& stageAxes = t.axesOf(stage);
  const bool kvAxis = perHead && stageAxes.size() > 1 && stageAxes[1] == "N";
  const int headCount = kvAxis ? kvN : t.heads;  // along this stage's head axis
  // Inputs and output: no head owns a column, so no blocks (one whole matrix, like the Heatmap);
  // neither do the group map and the window mask, which have no feature columns at all. K and V's
  // N·d_k columns are cut into the N K/V heads; heads of a width of their own make h·d_k columns.
  const std::string colAxis = stageAxes.empty() ? std::string() : stageAxes.back();
  const bool blocks = !perHead && headsOwnColumns(stage) && (colAxis == "d_model" || colAxis == "h·d_k" || colAxis == "N·d_k");
  const bool kvBlocks = blocks && colAxis == "N·d_k";
  std::vector<const Slice2D*> slices;
  if (perHead) {
    for (int h = 0; h < headCount; ++h) slices.push_back(st.shown.slice(stage, view.batch, h));
  } else {
    slices.push_back(st.shown.slice(stage, view.batch, -1));
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
  // The hint wraps as a block right of the button instead of running past the column's edge.
  ImGui::PushTextWrapPos(0.0f);
  // "2 heads of Softmax · layer 3": the stage and, for a model's layer, which layer (nameSource).
  std::string of = stageInfo(stage).title;
  if (const SelectionName source = nameSource(t.layer); !source.title.empty()) of += " \u00b7 " + source.title;
  if (kvAxis) {
    ctx.probes.recordLabel("grid_hint", std::to_string(kvN) + " K/V heads of " + of);
    ImGui::TextDisabled("N = %d K/V heads of %s (h = %d query heads, %d per K/V head: query head i reads K/V head "
                        "i / %d). Hover: preview. Click: open in the Heatmap tab.", kvN, of.c_str(), t.heads,
                        group, group);
  } else if (perHead && grouped) {
    ctx.probes.recordLabel("grid_hint", std::to_string(t.heads) + " heads of " + of);
    ImGui::TextDisabled("%d heads of %s, one colour scale; the tag names the K/V head each query head reads (N = %d, "
                        "%d query heads per K/V head). Hover: preview. Click: open in the Heatmap tab.", t.heads,
                        of.c_str(), kvN, group);
  } else if (perHead) {
    ctx.probes.recordLabel("grid_hint", std::to_string(t.heads) + " heads of " + of);
    ImGui::TextDisabled("%d heads of %s, one colour scale. Hover: preview. Click: open in the Heatmap tab.", t.heads,
                        of.c_str());
  } else if (stage == StageId::KvGroups || stage == StageId::WindowMask) {
    ImGui::TextDisabled("%s: %s.", of.c_str(),
                        stage == StageId::KvGroups ? "row i (query head) has a 1 under the K/V head it reads"
                                                   : "one table for every head and batch item; 1 = hidden by the window");
  } else if (kvBlocks) {
    ImGui::TextDisabled("N·d_k columns: block g is K/V head g's columns g·d_k … (g+1)·d_k − 1 (N = %d, d_k = %d), read "
                        "by query heads g·%d … g·%d + %d.", kvN, t.dk, group, group, group - 1);
  } else if (!blocks) {
    ImGui::TextDisabled("%s: %s.", of.c_str(), noHeadOwnerNote(stage));
  } else if (stage == StageId::Concat) {
    ImGui::TextDisabled("Merge heads: block i holds head i's output, columns i·d_k … (i+1)·d_k − 1 (d_k = %d).", t.dk);
  } else {
    ImGui::TextDisabled("No head axis yet: block i is the columns i·d_k … (i+1)·d_k − 1 head i will get after the split "
                        "(d_k = %d).", t.dk);
  }
  ImGui::PopTextWrapPos();
  const float right = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
  ctx.probes.recordLabel("grid_hint_cut", ImGui::GetItemRectMax().x > right + 0.5f ? "yes" : "no");  // tests

  const Slice2D& first = *slices.front();
  const int rows = first.rows;
  const int cols = perHead || !blocks ? first.cols : t.dk;
  const int n = kvBlocks ? kvN : blocks || perHead ? headCount : 1;
  // A map's frame colour: its head's, or for a K/V head its group's.
  auto mapColor = [&](int i, float alpha) { return headColor(kvAxis || kvBlocks ? i * group : i, alpha); };
  const int gridCols = static_cast<int>(std::ceil(std::sqrt(static_cast<double>(n))));
  const int gridRows = (n + gridCols - 1) / gridCols;
  ImVec2 avail = ImGui::GetContentRegionAvail();
  // The large preview has a column of its own on the right, so it never covers a neighbouring
  // head (it shows the hovered head, else the one open in the Heatmap tab).
  const bool previewColumn = n > 1 && avail.x > 50.0f * em;
  const float previewW = previewColumn ? std::min(0.36f * avail.x, 30.0f * em) : 0.0f;
  avail.x -= previewW;
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

  auto specFor = [&](int h, const Slice2D& s, bool focused) {
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
    spec.tooltip = n == 1;  // a whole matrix: the cell tooltip; heads: the preview column
    if (n > 1) spec.frameColor = mapColor(h, focused ? 1.0f : 0.6f);
    if (blocks) {
      spec.colBegin = h * t.dk;
      spec.colEnd = (h + 1) * t.dk;
    }
    const TextureKey key{st.shown.traceSerial, static_cast<int>(stage), view.batch, perHead ? h : -1, cmap, range.lo, range.hi};
    spec.textures = &ctx.textures;
    spec.textureKey = key;
    spec.kind = stageInfo(stage).kind;
    spec.scale = effectiveColorScale(view.colorScale, spec.kind);
    return spec;
  };

  int previewHead = -1;
  HeatmapHover previewHover;
  for (int h = 0; h < n; ++h) {
    ImGui::PushID(h);
    const int gx = h % gridCols, gy = h / gridCols;
    const ImVec2 p(gridOrigin.x + static_cast<float>(gx) * (mapSize.x + gap),
                   gridOrigin.y + static_cast<float>(gy) * (mapSize.y + gap + titleH));
    ImGui::SetCursorScreenPos(p);
    const bool focused = kvAxis ? h == view.head / group : h == view.head;
    if (n > 1 && (kvAxis || kvBlocks)) {
      char title[64];
      std::snprintf(title, sizeof title, focused && kvAxis ? "K/V head %d  ◀" : "K/V head %d", h);
      ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(mapColor(h, 1.0f)), "%s", title);
    } else if (n > 1) {
      // The focus mark is shortened when the full words would run into the next head's title.
      char title[64];
      std::snprintf(title, sizeof title, focused && perHead ? "head %d  ◀ in Heatmap" : "head %d", h);
      const float tagW = grouped && perHead ? ImGui::CalcTextSize(" K/V 00 ").x + 0.5f * em : 0.0f;
      if (ImGui::CalcTextSize(title).x + tagW > mapSize.x && focused && perHead) std::snprintf(title, sizeof title, "head %d ◀", h);
      ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(headColor(h)), "%s", title);
      if (grouped && perHead) kvTag(ctx, h, h / group, headColor(h / group * group));
    } else {
      ImGui::TextUnformatted(nameSelection(stage, view.batch, -1, 0, t.layer).title.c_str());
    }
    ImGui::SetCursorScreenPos(ImVec2(p.x, p.y + titleH));  // under its own title, not at the line start
    const Slice2D& s = perHead ? *slices[static_cast<std::size_t>(h)] : first;
    const HeatmapSpec spec = specFor(h, s, focused);
    const HeatmapHover hover = drawHeatmap("map", spec, nullptr, mapSize);
    if (hover.hovered && n > 1) {
      previewHead = h;
      previewHover = hover;
    }
    if (hover.clicked && perHead) {
      view.head = kvAxis ? h * group : h;
      view.selectTab = kHeatmapTab;
    }
    ctx.probes.recordLastItem("grid_head_" + std::to_string(h));
    ImGui::PopID();
  }
  // The shared colour bar, right of the grid.
  const float gridW = static_cast<float>(gridCols) * (mapSize.x + gap);
  drawColorbar(ImGui::GetWindowDrawList(), ctx.textures.colorbar(cmap).imguiId(), range,
               ImVec2(gridOrigin.x + gridW + 0.3f * em, gridOrigin.y + titleH),
               std::max(8.0f * em, std::min(static_cast<float>(gridRows) * (mapSize.y + gap + titleH) - titleH, 20.0f * em)));

  // The preview column: the hovered head large, with labels, and the hovered cell's value.
  if (previewColumn) {
    const int h = previewHead >= 0 ? previewHead : std::clamp(kvAxis ? view.head / group : view.head, 0, n - 1);
    const Slice2D& s = perHead ? *slices[static_cast<std::size_t>(h)] : first;
    ImGui::SetCursorScreenPos(ImVec2(gridOrigin.x + gridW + cbW + 0.5f * em, gridOrigin.y));
    ImGui::BeginGroup();
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(mapColor(h, 1.0f)), kvAxis || kvBlocks ? "K/V head %d" : "head %d", h);
    ImGui::SameLine();
    ImGui::TextDisabled(previewHead >= 0 ? (perHead ? "(hovered; click: Heatmap)" : "(its d_k columns)")
                                         : "(hover a head to see it here)");
    HeatmapSpec big = specFor(h, s, true);
    big.axisLabels = true;
    big.tooltip = false;
    big.colorbarTexture = nullptr;
    const float w = previewW - 1.0f * em;
    const float k = std::max(1.0f, (w - 9.6f * em) / static_cast<float>(std::max(rows, cols)));
    drawHeatmap("preview", big, nullptr,
                ImVec2(w, std::min(static_cast<float>(rows) * k + 7.6f * em, std::max(avail.y - titleH, 8.0f * em))));
    if (previewHead >= 0) {
      const int c = big.colBegin + previewHover.col;
      ImGui::Text("cell (%d, %d) = %.6g", previewHover.row, c, static_cast<double>(s.at(previewHover.row, c)));
    }
    ImGui::EndGroup();
  }
  ImGui::SetCursorScreenPos(gridOrigin);
  ImGui::Dummy(ImVec2(gridW + cbW + previewW, static_cast<float>(gridRows) * (mapSize.y + gap + titleH)));
}

}  // namespace mhascope::app
