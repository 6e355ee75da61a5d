// The pipeline's Circuits tab when its source is a model folder's layer: what the pipeline's head
// computes, read from the folder's weights around that head (core/analysis over
// core/model/circuits_source.hpp; the words: core/analysis/circuit_texts.hpp; the work:
// model_circuits_compute.*), drawn with the trainer view's widgets, colours and
// export popup (circuits_widgets.hpp):
//   source      — the folder, layer L head H (the pipeline's: the view follows its head and layer),
//                 the conventions in one line (gains folded, biases left out, RoPE's content part)
//   head        — QK, OV (d_model x d_model), E QK Eᵀ, E OV U over the text's distinct tokens
//                 (signed: the diverging map on a range symmetric about 0), its words and export
//   composition — the heads the chosen head reads (earlier layers) and the heads that read it
//                 (later layers), one L x h map each, Q, K and V side by side on one scale (0 … the
//                 largest score shown, the random baseline marked on every colour bar); hover names
//                 the pair, its score and its virtual head's copying, a click picks that head for the
//                 pipeline as a click in the Model tab does
//   copying     — every head's copying score as one L x h map (the chosen head framed)
//   chains      — the virtual heads (OV^a OV^b) of the pairs through the chosen head that V-composition
//                 ranks first, their copying beside each head's own; two combos pick any pair, whose
//                 spectrum and token-space OV the worker computes (the pair is part of its key)
//   rollout     — the last layer's mean weights beside the rollout of the text, or why there is none
// A worker computes it (never the UI thread); its progress and Cancel are at the top, an error is
// said in red there and the previous picture stays below it.
// Probes (input scripts): circuits_progress, circuits_cancel, circuits_rerun, circuits_layer and
// circuits_head (sliders; labels: the pipeline's), circuits_m_qk/_ov/_qk_tokens/_ov_tokens,
// circuits_kind_q/k/v, circuits_export_head/_reads/_readers/_copying/_rollout (+ _save, _close),
// circuits_head_map, circuits_reads_map, circuits_readers_map, circuits_copying_map,
// circuits_raw_map, circuits_rollout_map, circuits_reads_map_q/_k/_v, circuits_readers_map_q/_k/_v,
// circuits_pair_from, circuits_pair_to (+ _L{l}h{i}: their items), circuits_pair_map, circuits_export_pair;
// labels circuits_comp_scale, circuits_virtual_text, circuits_pair_text, circuits_status, circuits_step,
// circuits_conventions, circuits_head_title, circuits_head_text, circuits_comp_text,
// circuits_comp_hover, circuits_comp_clicked, circuits_copying_text, circuits_copying_hover,
// circuits_copying_chosen, circuits_rollout_text.
// [SECTION] index (in file order): status line — head (sliders, matrix) — composition — copying —
// rollout — drawModelCircuitsTab.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "render/texture_keys.hpp"
#include "analysis/circuit_texts.hpp"
#include "circuits/circuits_view.hpp"
#include "circuits/circuits_widgets.hpp"
#include "util/format.hpp"
#include "widgets/colors.hpp"
#include "widgets/drag_slider.hpp"
#include "widgets/flow.hpp"
#include "widgets/heatmap_view.hpp"
#include "widgets/wrapped_text.hpp"

namespace mhascope::app {
namespace {

using analysis::Composition;
using ModelCircuits = analysis::OneHeadCircuits;



// "L3", "h5": axis labels (snprintf: GCC 12 warns falsely on "L" + std::to_string in a loop).
std::string tag(char prefix, int n) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%c%d", prefix, n);
  return buf;
}

TextureKey keyOf(const ModelCircuitsState& s, int picture, ColormapId colormap, ColorRange range, int head = -1) {
  return TextureKey{kModelCircuitsSpace | s.resultSerial, kModelCircuitsSlot + picture, 0, head, colormap, range.lo, range.hi};
}

// Progress and Cancel while the worker runs; the error in red, or "Cancelled", with Compute again.
void drawStatus(UiContext& ctx, ModelCircuitsView& v, const ModelCircuitsKey& want) {
  const float em = ImGui::GetFontSize();
  ModelCircuitsState& s = v.state;
  if (s.busy()) {
    const std::string what = "the circuits of layer " + std::to_string(want.layer) + ", head " + std::to_string(want.head) + " …";
    ImGui::AlignTextToFramePadding();
    ImGui::TextDisabled("computing %s", what.c_str());
    ImGui::SameLine();
    ImGui::ProgressBar(static_cast<float>(s.job->progress()), ImVec2(16.0f * em, 0.0f), s.job->stepText(kModelCircuitsReading).c_str());
    ctx.probes.recordLastItem("circuits_progress");
    ImGui::SameLine();
    if (ImGui::Button("Cancel")) s.requestCancel();
    ctx.probes.recordLastItem("circuits_cancel");
    if (s.result) {
      ImGui::SameLine();
      ImGui::TextDisabled("the previous picture stays until this one is ready");
    }
    return;
  }
  if (s.error.empty() && !s.cancelled) return;
  ImGui::PushTextWrapPos(0.0f);
  if (!s.error.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, kErrorColor);
    ImGui::TextUnformatted(s.error.c_str());
    ImGui::PopStyleColor();
  } else {
    ImGui::TextDisabled("Cancelled.");
  }
  ImGui::PopTextWrapPos();
  // On a line of its own: after a message wrapped to the tab's width, SameLine would put the
  // button past the edge, out of sight.
  if (ImGui::SmallButton("Compute again")) s.computeAgain();
  ctx.probes.recordLastItem("circuits_rerun");
  if (s.result) {
    ImGui::SameLine();
    ImGui::TextDisabled("Below: the previous picture.");
  }
}

// The layer and head sliders: the pipeline's, applied when the drag ends (a layer reopens the
// pipeline on that layer, which is not something to do on every step of a drag).
void drawHeadPicker(UiContext& ctx, ModelCircuitsView& v, const ModelCircuits& c, const ModelCircuitsKey& want) {
  const float em = ImGui::GetFontSize();
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("head");
  ImGui::SameLine();
  int layer = v.layerEdit >= 0 ? v.layerEdit : std::clamp(want.layer, 0, std::max(0, c.layers - 1));
  ImGui::SetNextItemWidth(7 * em);
  ImGui::BeginDisabled(c.layers < 2);
  const SliderEdit le = dragSliderInt("##layer", &layer, 0, std::max(0, c.layers - 1), "layer %d", ImGuiSliderFlags_AlwaysClamp);
  ImGui::EndDisabled();
  ctx.probes.recordLastFrame("circuits_layer");
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("The pipeline's layer: the pipeline opens the layer chosen here");
  v.layerEdit = le.active ? layer : -1;
  ImGui::SameLine();
  int head = v.headEdit >= 0 ? v.headEdit : std::clamp(want.head, 0, std::max(0, c.heads - 1));
  ImGui::SetNextItemWidth(7 * em);
  ImGui::BeginDisabled(c.heads < 2);
  const SliderEdit he = dragSliderInt("##head", &head, 0, std::max(0, c.heads - 1), "head %d", ImGuiSliderFlags_AlwaysClamp);
  ImGui::EndDisabled();
  ctx.probes.recordLastFrame("circuits_head");
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("The pipeline's head (its head buttons choose the same)");
  v.headEdit = he.active ? head : -1;
  if ((le.deactivated || (le.changed && !le.active)) && layer != want.layer) selectModelHead(ctx.state, ctx.view, layer, want.head);
  if ((he.deactivated || (he.changed && !he.active)) && head != want.head) selectModelHead(ctx.state, ctx.view, want.layer, head);
  ctx.probes.recordLabel("circuits_layer", std::to_string(want.layer));
  ctx.probes.recordLabel("circuits_head", std::to_string(want.head));
}

void drawHeadSection(UiContext& ctx, ModelCircuitsView& v, const ModelCircuitsResult& r, const ModelCircuitsKey& want, float side) {
  const ModelCircuits& c = r.circuits;
  drawHeadPicker(ctx, v, c, want);
  const bool tokenSpace = !c.tokenIds.empty();
  drawCircuitsMatrixPicker(ctx, v.matrix, tokenSpace, c.qkPositions.size() > 0);
  const RowMatrix& m = v.matrix == 0   ? c.qk
                       : v.matrix == 1 ? c.ov
                       : v.matrix == 2 ? c.qkTokens
                       : v.matrix == 3 ? c.ovTokens
                                       : c.qkPositions;
  Slice2D slice;
  slice.stage = StageId::Scores;  // signed numbers: the diverging map on a range symmetric about 0
  slice.head = c.head;
  slice.rows = static_cast<int>(m.rows());
  slice.cols = static_cast<int>(m.cols());
  slice.data = m.data();
  slice.rowAxis = kCircuitsRowAxes[v.matrix];
  slice.colAxis = kCircuitsColAxes[v.matrix];
  if (v.matrix == 2 || v.matrix == 3) slice.rowLabels = slice.colLabels = r.axisLabels;
  const ColormapId colormap = ctx.view.colormap.value_or(defaultColormap(DataKind::Signed));
  const ColorRange range = rangeFor(DataKind::Signed, m.data(), static_cast<std::size_t>(m.size()));
  const std::string title = analysis::headName(c.layer, c.head) + ": " + kCircuitsMatrixNames[v.matrix] +
                            (v.matrix == 0   ? " = W_q W_kᵀ (query x QK keyᵀ = score; W as y = x W stores it)"
                             : v.matrix == 1 ? " = W_v W_o (what the head writes for a key; W as y = x W stores it)"
                             : v.matrix == 2 ? " (which token looks at which)"
                             : v.matrix == 3 ? " (attending to a token raises these logits)"
                                             : " (which position looks at which, from the positions alone)");
  ImGui::SameLine();
  const std::string stem = r.folderName + "_" + kCircuitsMatrixStems[v.matrix] + "_l" + std::to_string(c.layer) + "_h" +
                           std::to_string(c.head);
  drawCircuitsExport(ctx, "circuits_export_head", slice, colormap, range, title,
                     modelCircuitsSource(r) + " (norm gains folded, biases left out)", stem);
  ImGui::TextUnformatted(title.c_str());
  ctx.probes.recordLabel("circuits_head_title", title);
  const float mapSide = v.matrix >= 2 ? tokenMapSide(slice, side) : side;
  const HeatmapHover hh = drawCircuitsMap(ctx, "head map", slice, DataKind::Signed, colormap, range,
                                          keyOf(v.state, kCircuitsMatrix + v.matrix, colormap, range, c.head), mapSide);
  ctx.probes.recordRect("circuits_head_map", hh.plotMin, hh.plotMax);
  const std::string words = analysis::oneHeadMatrixText(c, r.distinctTokens, v.matrix);
  textWrappedDisabled(words);
  ctx.probes.recordLabel("circuits_head_text", words);
}

// Where a cell's centre is on a map of `rows` x `cols` drawn in [plotMin, plotMax].
ImVec2 cellRect(const HeatmapHover& h, int rows, int cols, int r, int c, ImVec2& max) {
  const float w = (h.plotMax.x - h.plotMin.x) / static_cast<float>(cols), ht = (h.plotMax.y - h.plotMin.y) / static_cast<float>(rows);
  const ImVec2 min(h.plotMin.x + w * static_cast<float>(c), h.plotMin.y + ht * static_cast<float>(r));
  max = ImVec2(min.x + w, min.y + ht);
  return min;
}

// A map of heads (rows: layers first..first+rows-1, columns: heads) sized to its cells: a few
// rows of a deep model's heads would be stretched tall in a square.
ImVec2 headMapSize(int rows, int cols, float width) {
  const float em = ImGui::GetFontSize();
  const float cell = std::clamp((width - colorbarWidth() - 4.0f * em) / static_cast<float>(std::max(1, cols)), 0.6f * em, 2.8f * em);
  return ImVec2(cell * static_cast<float>(cols) + colorbarWidth() + 4.0f * em,
                std::max(cell * static_cast<float>(rows) + 2.5f * em, 6.0f * em));
}

struct HeadMapPick {
  int layer = -1, head = -1;
  bool clicked = false;
};

// One side of the composition: `pairs` laid out by (the other head's layer, head) as a map with
// rows first..first+rows-1; hover names the pair, a click picks the other head.
HeadMapPick drawCompositionMap(UiContext& ctx, const ModelCircuitsView& v, const ModelCircuitsResult& r,
                               const std::vector<Composition>& pairs, bool reads, char kind, ColorRange range,
                               float width) {
  const ModelCircuits& c = r.circuits;
  const int first = reads ? 0 : c.layer + 1;
  const int rows = reads ? c.layer : c.layers - c.layer - 1;
  const int kindIndex = kind == 'Q' ? 0 : kind == 'K' ? 1 : 2;
  const bool chosen = kindIndex == v.kind;  // the kind whose words, export and hover probe are the tab's
  const std::string probe = std::string(reads ? "circuits_reads_map" : "circuits_readers_map");
  HeadMapPick pick;
  if (rows <= 0 || pairs.empty()) {
    ImGui::PushTextWrapPos(ImGui::GetCursorPosX() + width);  // its half of the row, not the whole row
    ImGui::TextDisabled("%s", reads ? "Layer 0: no earlier head writes to the stream before it, so it reads none."
                                    : "The last layer: no later head reads what it writes.");
    ImGui::PopTextWrapPos();
    return pick;
  }
  RowMatrix m = RowMatrix::Zero(rows, c.heads);
  for (const Composition& p : pairs) {
    const int l = (reads ? p.fromLayer : p.toLayer) - first, h = reads ? p.fromHead : p.toHead;
    if (l >= 0 && l < rows && h >= 0 && h < c.heads) m(l, h) = static_cast<float>(analysis::compositionScore(p, kind));
  }
  Slice2D slice;
  slice.stage = StageId::Weights;  // scores in [0, 1]: the sequential map
  slice.rows = rows;
  slice.cols = c.heads;
  slice.data = m.data();
  slice.rowAxis = "layer";
  slice.colAxis = "head";
  for (int l = 0; l < rows; ++l) slice.rowLabels.push_back(tag('L', first + l));
  for (int h = 0; h < c.heads; ++h) slice.colLabels.push_back(tag('h', h));
  const std::string me = analysis::headName(c.layer, c.head);
  const int last = first + rows - 1;
  const std::string layers = rows == 1 ? "layer " + std::to_string(first)
                                       : "layers " + std::to_string(first) + " … " + std::to_string(last);
  // Short: the map has a third of the row, and the head is named in the line above the sections.
  const std::string title = std::string(reads ? "reads: " : "read by: ") + layers;
  ImGui::TextUnformatted(title.c_str());
  const ColormapId probability = probabilityColormap(ctx.view);
  if (chosen) {
    ImGui::SameLine();
    const std::string stem = std::string(reads ? "reads_" : "read_by_") + static_cast<char>(kind - 'A' + 'a') + "_l" +
                             std::to_string(c.layer) + "_h" + std::to_string(c.head);
    drawCircuitsExport(ctx, reads ? "circuits_export_reads" : "circuits_export_readers", slice, probability, range,
                       std::string(1, kind) + "-composition: " + me + (reads ? " reads the heads of " : " is read by the heads of ") +
                           layers + " (random baseline " + formatGeneral(c.baseline, 3) + ")",
                       r.folderName + " (norm gains folded, biases left out)", stem);
  }
  const ImVec2 size = headMapSize(rows, c.heads, width);
  const HeatmapHover hv = drawCircuitsMap(ctx, reads ? "reads map" : "readers map", slice, DataKind::Probability,
                                          probability, range,
                                          keyOf(v.state, (reads ? kCircuitsReads : kCircuitsReaders) + kindIndex, probability, range),
                                          size, false);
  markColorbar(hv, range, static_cast<float>(c.baseline));
  ctx.probes.recordRect(probe + "_" + static_cast<char>(kind - 'A' + 'a'), hv.plotMin, hv.plotMax);
  if (chosen) ctx.probes.recordRect(probe, hv.plotMin, hv.plotMax);
  if (hv.hovered && hv.row >= 0 && hv.row < rows && hv.col >= 0 && hv.col < c.heads) {
    pick.layer = first + hv.row;
    pick.head = hv.col;
    pick.clicked = hv.clicked;
    for (const Composition& p : pairs) {
      const bool match = reads ? p.fromLayer == pick.layer && p.fromHead == pick.head : p.toLayer == pick.layer && p.toHead == pick.head;
      if (!match) continue;
      const std::string text = analysis::compositionCellText(c, p, kind);
      ImGui::SetTooltip("%s\nvirtual head: copying %+.3f\nclick: layer %d, head %d in the pipeline", text.c_str(),
                        p.virtualCopying, pick.layer, pick.head);
      ctx.probes.recordLabel("circuits_comp_hover", text);
    }
    ImVec2 max;
    const ImVec2 min = cellRect(hv, rows, c.heads, hv.row, hv.col, max);
    ImGui::GetWindowDrawList()->AddRect(min, max, IM_COL32(255, 255, 255, 200), 0.0f, 0, 1.5f);
  }
  return pick;
}

void drawCompositionSection(UiContext& ctx, ModelCircuitsView& v, const ModelCircuitsResult& r) {
  const ModelCircuits& c = r.circuits;
  const float em = ImGui::GetFontSize();
  const char kind = drawCircuitsKindPicker(ctx, v.kind);
  ImGui::SameLine();
  ImGui::TextDisabled("(the words below and the export; the three are drawn side by side)");
  // One scale for all six maps — Q, K and V, the heads read and the heads that read — so a colour means
  // one score wherever it is: 0 … the largest score shown, the random baseline marked on each bar.
  float top = 0;
  for (const auto* side : {&c.reads, &c.readBy})
    for (const Composition& p : *side) top = std::max({top, static_cast<float>(p.q), static_cast<float>(p.k), static_cast<float>(p.v)});
  const ColorRange range{0.0f, top > 0 ? top : 1.0f};
  const std::string scale = analysis::compositionScaleText(c.baseline, range.hi);
  textWrappedDisabled(scale);
  ctx.probes.recordLabel("circuits_comp_scale", scale);
  const float third = (ImGui::GetContentRegionAvail().x - 2.0f * em) / 3.0f;
  const float x0 = ImGui::GetCursorPosX();
  std::vector<HeadMapPick> picks;
  for (int k = 0; k < 3; ++k) {
    const char kk = "QKV"[k];
    if (k > 0) ImGui::SameLine(x0 + static_cast<float>(k) * (third + em));  // each column starts at one place
    ImGui::PushID(k);
    ImGui::BeginGroup();
    const std::string head = std::string(1, kk) + ": the later head's " + (kk == 'Q' ? "queries" : kk == 'K' ? "keys" : "values");
    if (k == v.kind) ImGui::TextUnformatted(head.c_str());
    else ImGui::TextDisabled("%s", head.c_str());
    picks.push_back(drawCompositionMap(ctx, v, r, c.reads, true, kk, range, third));
    picks.push_back(drawCompositionMap(ctx, v, r, c.readBy, false, kk, range, third));
    ImGui::EndGroup();
    ImGui::PopID();
  }
  for (const HeadMapPick& p : picks) {
    if (!p.clicked) continue;
    selectModelHead(ctx.state, ctx.view, p.layer, p.head);
    v.picked = tag('L', p.layer) + " " + tag('h', p.head);
  }
  ctx.probes.recordLabel("circuits_comp_clicked", v.picked);
  const std::string words = analysis::oneHeadCompositionText(c, kind);
  textWrappedDisabled(words);
  ctx.probes.recordLabel("circuits_comp_text", words);
}

// Chains of heads: the virtual heads of the pairs V-composition ranks first through the chosen head, and
// any pair the user picks (its two combos: the job computes its spectrum and token-space OV).
void drawVirtualSection(UiContext& ctx, ModelCircuitsView& v, const ModelCircuitsResult& r, float side) {
  const ModelCircuits& c = r.circuits;
  const std::string words = analysis::oneHeadVirtualHeadsText(c);
  textWrappedDisabled(words);
  ctx.probes.recordLabel("circuits_virtual_text", words);
  if (c.layers < 2) return;
  drawPairPicker(ctx, c.layers, c.heads, v.pair);  // a new pair: the update step starts the job with it
  if (!c.picked) {
    const char* why = v.pair ? "computing that pair …" : "Pick the two heads of a pair to see its virtual head.";
    ImGui::TextDisabled("%s", why);
    ctx.probes.recordLabel("circuits_pair_text", why);
    return;
  }
  const std::string text = analysis::pickedVirtualText(c);
  textWrappedDisabled(text);
  ctx.probes.recordLabel("circuits_pair_text", text);
  const analysis::VirtualHead& vh = *c.picked;
  if (vh.ovTokens.size() == 0) return;
  Slice2D slice;
  slice.stage = StageId::Scores;  // signed: the diverging map on a range symmetric about 0
  slice.rows = static_cast<int>(vh.ovTokens.rows());
  slice.cols = static_cast<int>(vh.ovTokens.cols());
  slice.data = vh.ovTokens.data();
  slice.rowAxis = "attended token";
  slice.colAxis = "predicted token";
  slice.rowLabels = slice.colLabels = r.axisLabels;
  const ColormapId colormap = ctx.view.colormap.value_or(defaultColormap(DataKind::Signed));
  const ColorRange range = rangeFor(DataKind::Signed, vh.ovTokens.data(), static_cast<std::size_t>(vh.ovTokens.size()));
  const std::string title = analysis::headName(vh.fromLayer, vh.fromHead) + " → " + analysis::headName(vh.toLayer, vh.toHead) +
                            ": E OV^a OV^b U (attending to a token raises these logits, through both heads)";
  ImGui::TextUnformatted(title.c_str());
  sameLineOrWrap(6.0f * ImGui::GetFontSize());
  drawCircuitsExport(ctx, "circuits_export_pair", slice, colormap, range, title,
                     modelCircuitsSource(r) + " (norm gains folded, biases left out)",
                     r.folderName + "_virtual_ov_tokens_l" + std::to_string(vh.fromLayer) + "_h" + std::to_string(vh.fromHead) +
                         "_l" + std::to_string(vh.toLayer) + "_h" + std::to_string(vh.toHead));
  const HeatmapHover hv = drawCircuitsMap(ctx, "pair map", slice, DataKind::Signed, colormap, range,
                                          keyOf(v.state, kCircuitsVirtual, colormap, range),
                                          tokenMapSide(slice, side));
  ctx.probes.recordRect("circuits_pair_map", hv.plotMin, hv.plotMax);
}

void drawCopyingSection(UiContext& ctx, ModelCircuitsView& v, const ModelCircuitsResult& r) {
  const ModelCircuits& c = r.circuits;
  if (c.copying.size() != static_cast<std::size_t>(c.layers) * static_cast<std::size_t>(c.heads) || c.layers <= 0) return;
  RowMatrix m(c.layers, c.heads);
  for (int l = 0; l < c.layers; ++l)
    for (int h = 0; h < c.heads; ++h) m(l, h) = static_cast<float>(c.copyingAt(l, h));
  Slice2D slice;
  slice.stage = StageId::Scores;  // in [-1, 1]: the diverging map, 0 in its middle
  slice.rows = c.layers;
  slice.cols = c.heads;
  slice.data = m.data();
  slice.rowAxis = "layer";
  slice.colAxis = "head";
  for (int l = 0; l < c.layers; ++l) slice.rowLabels.push_back(tag('L', l));
  for (int h = 0; h < c.heads; ++h) slice.colLabels.push_back(tag('h', h));
  const ColormapId colormap = ctx.view.colormap.value_or(defaultColormap(DataKind::Signed));
  const ColorRange range{-1.0f, 1.0f};
  const std::string title = "copying score of every head, on [-1, 1]";
  ImGui::TextUnformatted(title.c_str());
  sameLineOrWrap(6.0f * ImGui::GetFontSize());
  drawCircuitsExport(ctx, "circuits_export_copying", slice, colormap, range, "Copying score of every head",
                     r.folderName + " (E OV U's eigenvalues: sum / sum of moduli; norm gains folded)", r.folderName + "_copying");
  const ImVec2 size = headMapSize(c.layers, c.heads, std::min(ImGui::GetContentRegionAvail().x, 48.0f * ImGui::GetFontSize()));
  const HeatmapHover hv = drawCircuitsMap(ctx, "copying map", slice, DataKind::Signed, colormap, range,
                                          keyOf(v.state, kCircuitsCopying, colormap, range), size, false);
  ctx.probes.recordRect("circuits_copying_map", hv.plotMin, hv.plotMax);
  ImVec2 max;
  const ImVec2 min = cellRect(hv, c.layers, c.heads, c.layer, c.head, max);
  ImGui::GetWindowDrawList()->AddRect(min, max, IM_COL32(255, 255, 255, 255), 0.0f, 0, 2.0f);  // the chosen head
  if (hv.hovered && hv.row >= 0 && hv.row < c.layers && hv.col >= 0 && hv.col < c.heads) {
    const std::string text = analysis::copyingCellText(c, hv.row, hv.col);
    ImGui::SetTooltip("%s\nclick: layer %d, head %d in the pipeline", text.c_str(), hv.row, hv.col);
    ctx.probes.recordLabel("circuits_copying_hover", text);
    if (hv.clicked) {
      selectModelHead(ctx.state, ctx.view, hv.row, hv.col);
      v.picked = tag('L', hv.row) + " " + tag('h', hv.col);
    }
  }
  ctx.probes.recordLabel("circuits_copying_chosen", analysis::copyingCellText(c, c.layer, c.head));
  const std::string words = analysis::oneHeadCopyingText(c);
  textWrappedDisabled(words);
  ctx.probes.recordLabel("circuits_copying_text", words);
}

}  // namespace

void drawModelCircuitsTab(UiContext& ctx, ModelCircuitsView& v) {
  const float em = ImGui::GetFontSize();
  const ModelCircuitsKey want = modelCircuitsKey(ctx.state, ctx.view, v.pair);  // its job: the update step's (updateCircuits)
  ModelCircuitsState& s = v.state;
  ctx.probes.recordLabel("circuits_status", modelCircuitsStatus(s, want));
  drawStatus(ctx, v, want);
  if (!s.result) {
    if (!s.busy() && s.error.empty()) textWrappedDisabled("Nothing computed yet.");
    ctx.probes.recordLabel("circuits_step", "");
    return;
  }
  const ModelCircuitsResult& r = *s.result;
  const std::string source = modelCircuitsSource(r);
  ImGui::TextUnformatted(source.c_str());
  ImGui::SameLine();
  ImGui::TextDisabled(s.resultKey == want ? "(the pipeline's layer and head: the view follows them)"
                                          : "(the previous picture, until the pipeline's is ready)");
  ctx.probes.recordLabel("circuits_step", source);
  const std::string conventions =
      analysis::oneHeadConventions(r.rope) + (r.familyNote.empty() ? "" : " " + r.familyNote);
  const ModelCircuits& c = r.circuits;
  std::string shared;  // grouped-query attention: which K/V head the chosen query head reads
  if (c.kvHeads > 0 && c.kvHeads < c.heads) {
    shared = " Head " + std::to_string(c.head) + " reads K/V head " + std::to_string(c.head / (c.heads / c.kvHeads)) +
             " of N = " + std::to_string(c.kvHeads) + ".";
  }
  textWrappedDisabled(conventions + " L = " + std::to_string(c.layers) + ", h = " + std::to_string(c.heads) +
                      ", d_model = " + std::to_string(c.dModel) + ", V = " + withThousands(c.vocab) + "." + shared);
  ctx.probes.recordLabel("circuits_conventions", conventions);
  // The sections below scroll with the mouse wheel (the tab's own area leaves the wheel to zoomable
  // heatmaps; these maps do not zoom), the status and source lines above stay in sight.
  ImGui::BeginChild("model circuits", ImVec2(0.0f, 0.0f), false);
  const float side = std::clamp(0.42f * ImGui::GetContentRegionAvail().x - colorbarWidth(), 8.0f * em, 22.0f * em);
  ImGui::PushID("model circuits");
  circuitsSectionTitle("Head: QK and OV circuits");
  drawHeadSection(ctx, v, r, want, std::clamp(0.6f * ImGui::GetContentRegionAvail().x - colorbarWidth(), 8.0f * em, 26.0f * em));
  circuitsSectionTitle("Composition: the earlier heads this head reads, the later heads that read it");
  drawCompositionSection(ctx, v, r);
  circuitsSectionTitle("Copying");
  drawCopyingSection(ctx, v, r);
  circuitsSectionTitle("Chains of heads: virtual heads through the values");
  drawVirtualSection(ctx, v, r, side);
  circuitsSectionTitle("Attention rollout of the text");
  RolloutPicture rollout;
  rollout.rollout = &c.rollout;
  rollout.labels = r.textLabels;
  rollout.missing = c.rollout.why.empty() ? std::string("not computed for this text") : c.rollout.why;
  rollout.exportSubtitle = r.folderName + " on the text";
  rollout.exportStem = r.folderName + "_rollout";
  rollout.rawKey = keyOf(v.state, kCircuitsRawWeights, probabilityColormap(ctx.view), ColorRange{0.0f, 1.0f});
  rollout.rollKey = keyOf(v.state, kCircuitsRollout, probabilityColormap(ctx.view), ColorRange{0.0f, 1.0f});
  drawRolloutSection(ctx, rollout, side);
  ImGui::PopID();
  ImGui::EndChild();
}

}  // namespace mhascope::app
