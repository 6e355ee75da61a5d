// The widgets every Circuits view shares (circuits_widgets.hpp): a section's title, the matrix and
// composition pickers, a map with its labels and colour bar, the baseline mark, the head and pair
// pickers, the export popup of a picture and the rollout section.
#include "circuits/circuits_widgets.hpp"

#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>

#include "render/texture_keys.hpp"
#include "export/export.hpp"
#include "panels/panel.hpp"
#include "util/format.hpp"
#include "analysis/circuit_texts.hpp"
#include "analysis/rollout.hpp"
#include "circuits/circuits_view.hpp"
#include "train_lab/lab_state.hpp"
#include "widgets/colors.hpp"
#include "widgets/export_button.hpp"
#include "widgets/flow.hpp"
#include "widgets/heatmap_view.hpp"
#include "widgets/wrapped_text.hpp"

namespace mhascope::app {

namespace {

// Index labels for an axis without its own (d_model), or with too few: the heatmap labels every axis.
void fillLabels(std::vector<std::string>& labels, int n) {
  if (static_cast<int>(labels.size()) == n) return;
  labels.clear();
  for (int i = 0; i < n; ++i) labels.push_back(std::to_string(i));
}

}  // namespace

void circuitsSectionTitle(const char* title) {
  ImGui::Spacing();
  ImGui::Separator();
  ImGui::TextUnformatted(title);
}

std::string circuitsHeadTag(int layer, int head) { return "L" + std::to_string(layer) + " H" + std::to_string(head); }

void drawCircuitsMatrixPicker(UiContext& ctx, int& matrix, bool tokenSpace, bool positionSpace) {
  const float em = ImGui::GetFontSize();
  const auto available = [&](int m) {
    return m == kCircuitsPositionMatrix ? positionSpace : m >= 2 ? tokenSpace : true;
  };
  if (!available(matrix)) matrix = 1;
  for (int m = 0; m <= kCircuitsPositionMatrix; ++m) {
    ImGui::PushID(m);
    sameLineOrWrap(5 * em);
    ImGui::BeginDisabled(!available(m));
    if (ImGui::RadioButton(kCircuitsMatrixNames[m], matrix == m)) matrix = m;
    ImGui::EndDisabled();
    if (m == kCircuitsPositionMatrix && ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) {
      ImGui::SetTooltip(positionSpace ? "The score from the positions alone: a previous-token head has a bright sub-diagonal"
                                      : "Only for a model with a learned position table (GPT-2, the Train mode's learned positions)");
    }
    ctx.probes.recordLastItem(std::string("circuits_m_") + kCircuitsMatrixStems[m]);
    ImGui::PopID();
  }
}

char drawCircuitsKindPicker(UiContext& ctx, int& kind) {
  constexpr char kKinds[] = {'Q', 'K', 'V'};
  constexpr const char* kProbes[] = {"circuits_kind_q", "circuits_kind_k", "circuits_kind_v"};
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("composition");
  for (int k = 0; k < 3; ++k) {
    ImGui::PushID(k);
    ImGui::SameLine();
    if (ImGui::RadioButton(std::string(1, kKinds[k]).c_str(), kind == k)) kind = k;
    ctx.probes.recordLastItem(kProbes[k]);
    ImGui::PopID();
  }
  return kKinds[std::clamp(kind, 0, 2)];
}

// The export of one circuits picture: the window's one Export… form, with the picture's own title
// and file name.
void drawCircuitsExport(UiContext& ctx, const char* probe, const Slice2D& slice, ColormapId colormap, ColorRange range,
                        const std::string& title, const std::string& subtitle, const std::string& stem) {
  ExportForm form;
  form.probe = probe;
  form.title = title;
  form.stem = stem;
  form.tooltip = "Save this picture (PNG, SVG or PDF)";
  form.note = "The picture as drawn here: its colour scale, labels and title";
  drawExportForm(ctx, form, [&] {
    ExportPicture p;
    p.slices.push_back(slice);
    p.options.colormap = colormap;
    p.options.range = range;
    p.options.title = title;
    p.options.subtitle = subtitle;
    return p;
  });
}

HeatmapHover drawCircuitsMap(UiContext& ctx, const char* id, Slice2D& slice, DataKind kind, ColormapId colormap,
                             ColorRange range, TextureKey key, float side, bool tooltip) {
  return drawCircuitsMap(ctx, id, slice, kind, colormap, range, key, ImVec2(side + colorbarWidth(), side), tooltip);
}

HeatmapHover drawCircuitsMap(UiContext& ctx, const char* id, Slice2D& slice, DataKind kind, ColormapId colormap,
                             ColorRange range, TextureKey key, ImVec2 size, bool tooltip) {
  fillLabels(slice.rowLabels, slice.rows);
  fillLabels(slice.colLabels, slice.cols);
  HeatmapSpec spec;
  spec.slice = &slice;
  spec.textures = &ctx.textures;
  spec.textureKey = key;
  spec.kind = kind;
  spec.colormap = colormap;
  spec.range = range;
  spec.interactive = false;
  spec.showNumbers = true;
  spec.axisLabels = true;
  spec.tooltip = tooltip;
  spec.colorbarTexture = ctx.textures.colorbar(colormap).imguiId();
  return drawHeatmap(id, spec, nullptr, size);
}

float tokenMapSide(const Slice2D& slice, float side) {
  const float em = ImGui::GetFontSize();
  const int n = std::max(slice.rows, slice.cols);
  float widest = 0;
  for (const auto* labels : {&slice.rowLabels, &slice.colLabels})
    for (const std::string& l : *labels) widest = std::max(widest, ImGui::CalcTextSize(l.c_str()).x);
  // The widget's margins (drawHeatmap's layout): the column labels' height is the widest label within
  // [1.5 em, 7 em] + 0.6 em; the row labels' width the widest within [1.5 em, 9 em], or the corner's axis
  // names if wider, + 0.6 em.
  const float colLabels = std::clamp(widest, 1.5f * em, 7.0f * em) + 0.6f * em;
  const float corner = std::max(ImGui::CalcTextSize((slice.rowAxis + " ↓").c_str()).x,
                                ImGui::CalcTextSize((slice.colAxis + " →").c_str()).x);
  const float rowLabels = std::max(std::clamp(widest, 1.5f * em, 9.0f * em), corner) + 0.6f * em;
  // drawCircuitsMap's size is (side + colour bar, side): the cells get side minus the labels each way.
  const float wanted = static_cast<float>(n) * 1.05f * em + std::max(rowLabels, colLabels);
  const float room = ImGui::GetContentRegionAvail().x - colorbarWidth();
  return std::max(side, std::min(wanted, room));
}

// The bar's place is the heatmap widget's (drawHeatmap): 0.8 em right of the plot, 1.1 em wide, from the
// plot's top, at least 8 em tall.
void markColorbar(const HeatmapHover& h, ColorRange range, float value) {
  if (!(range.hi > range.lo) || value < range.lo || value > range.hi || h.plotMax.x <= h.plotMin.x) return;
  const float em = ImGui::GetFontSize();
  const float height = std::max(h.plotMax.y - h.plotMin.y, 8.0f * em);
  const float x0 = h.plotMax.x + 0.8f * em, x1 = x0 + 1.1f * em;
  const float y = h.plotMin.y + height * (1.0f - (value - range.lo) / (range.hi - range.lo));
  ImDrawList* dl = ImGui::GetWindowDrawList();
  dl->AddLine(ImVec2(x0 - 0.3f * em, y), ImVec2(x1, y), IM_COL32(255, 255, 255, 255), 2.0f);
  dl->AddTriangleFilled(ImVec2(x0 - 0.6f * em, y - 0.3f * em), ImVec2(x0 - 0.6f * em, y + 0.3f * em), ImVec2(x0 - 0.1f * em, y),
                        IM_COL32(255, 255, 255, 255));
}

namespace {

// "L1 h3": a head in the pair picker.
std::string headItem(int layer, int head) { return "L" + std::to_string(layer) + " h" + std::to_string(head); }

// One combo over the heads of layers [firstLayer, lastLayer]; true when one was chosen.
bool drawHeadCombo(UiContext& ctx, const std::string& probe, int firstLayer, int lastLayer, int heads, int& layer, int& head) {
  const float em = ImGui::GetFontSize();
  bool chosen = false;
  ImGui::SetNextItemWidth(6.0f * em);
  const bool open = ImGui::BeginCombo(("##" + probe).c_str(), headItem(layer, head).c_str());
  if (!open) ctx.probes.recordLastItem(probe);  // the box (once open, the popup is the last item)
  if (!open) return false;
  for (int l = firstLayer; l <= lastLayer; ++l)
    for (int h = 0; h < heads; ++h) {
      ImGui::PushID(l * heads + h);
      if (ImGui::Selectable(headItem(l, h).c_str(), l == layer && h == head)) {
        layer = l;
        head = h;
        chosen = true;
      }
      ctx.probes.recordLastItem(probe + "_L" + std::to_string(l) + "h" + std::to_string(h));
      ImGui::PopID();
    }
  ImGui::EndCombo();
  return chosen;
}

}  // namespace

void drawPairPicker(UiContext& ctx, int layers, int heads, std::optional<analysis::HeadPair>& pair) {
  if (pair && !analysis::checkPair(*pair, layers, heads).empty()) pair.reset();  // another model's
  if (layers < 2) return;
  analysis::HeadPair p = pair.value_or(analysis::HeadPair{0, 0, 1, 0});
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("pick a pair: earlier head");
  ImGui::SameLine();
  bool changed = drawHeadCombo(ctx, "circuits_pair_from", 0, layers - 2, heads, p.fromLayer, p.fromHead);
  if (p.toLayer <= p.fromLayer) p.toLayer = p.fromLayer + 1;  // an earlier head picked past the later one
  ImGui::SameLine();
  ImGui::TextUnformatted("→ later head");
  ImGui::SameLine();
  changed |= drawHeadCombo(ctx, "circuits_pair_to", p.fromLayer + 1, layers - 1, heads, p.toLayer, p.toHead);
  if (changed) pair = p;
  ctx.probes.recordLabel("circuits_pair_from", headItem(p.fromLayer, p.fromHead));
  ctx.probes.recordLabel("circuits_pair_to", headItem(p.toLayer, p.toHead));
}

// The rollout beside the last layer's raw weights, the same for every source (the numbers: core's
// analysis::Rollout, made off the draw calls).
void drawRolloutSection(UiContext& ctx, const RolloutPicture& p, float side) {
  const float em = ImGui::GetFontSize();
  if (!p.rollout || p.rollout->empty() || p.rollout->rawLast.size() == 0) {
    const std::string why = "Rollout: " + p.missing;
    textWrappedDisabled(why);
    ctx.probes.recordLabel("circuits_rollout_text", why);
    return;
  }
  const analysis::Rollout& r = *p.rollout;
  const int T = static_cast<int>(r.rolled.rows());
  Slice2D rawSlice, rollSlice;
  for (Slice2D* sl : {&rawSlice, &rollSlice}) {
    sl->stage = StageId::Weights;
    sl->rows = sl->cols = T;
    sl->rowAxis = "T_q";
    sl->colAxis = "T_k";  // the rollout's columns are the input tokens: the keys of layer 0
    sl->rowLabels = p.labels;
    sl->colLabels = p.labels;
  }
  rawSlice.data = r.rawLast.data();
  rollSlice.data = r.rolled.data();
  const ColorRange range{0.0f, 1.0f};
  // Two maps and their colour bars side by side, each with room for its row labels (~4 em).
  // Two maps side by side: each grows (up to half the row) until every token has its label.
  const float halfRoom = 0.5f * ImGui::GetContentRegionAvail().x - colorbarWidth() - 5.0f * em;
  const float half = std::min(tokenMapSide(rawSlice, side), halfRoom);
  ImGui::BeginGroup();
  ImGui::Text("last layer's weights (mean over %d heads)", r.heads);
  const HeatmapHover hr = drawCircuitsMap(ctx, "raw map", rawSlice, DataKind::Probability, probabilityColormap(ctx.view), range, p.rawKey, half);
  ctx.probes.recordRect("circuits_raw_map", hr.plotMin, hr.plotMax);
  ImGui::EndGroup();
  ImGui::SameLine(0.0f, em);
  ImGui::BeginGroup();
  const std::string rollTitle = "rollout through all " + std::to_string(r.layers) + " layer" + (r.layers == 1 ? "" : "s");
  ImGui::TextUnformatted(rollTitle.c_str());
  ImGui::SameLine();
  drawCircuitsExport(ctx, "circuits_export_rollout", rollSlice, probabilityColormap(ctx.view), range,
                     "Attention rollout (Abnar & Zuidema 2020) through " + std::to_string(r.layers) + " layers",
                     p.exportSubtitle, p.exportStem);
  const HeatmapHover hl = drawCircuitsMap(ctx, "rollout map", rollSlice, DataKind::Probability, probabilityColormap(ctx.view), range, p.rollKey, half);
  ctx.probes.recordRect("circuits_rollout_map", hl.plotMin, hl.plotMax);
  ImGui::EndGroup();
  int row = T - 1;
  if (hl.hovered && hl.row >= 0) row = hl.row;
  else if (hr.hovered && hr.row >= 0) row = hr.row;
  const std::string words = analysis::rolloutText(r, p.labels, row);
  textWrappedDisabled(words + (row == T - 1 ? " (Hover a row for another position.)" : ""));
  ctx.probes.recordLabel("circuits_rollout_text", words);
}

}  // namespace mhascope::app
