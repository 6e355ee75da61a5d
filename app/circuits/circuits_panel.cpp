// The Circuits panel (state and jobs: circuits_view.hpp), drawn in the Train mode from the scrubbed
// step and in the pipeline from an opened checkpoint (a model folder's layer in the pipeline has its
// own view around the pipeline's head, model_circuits_panel.cpp, with the same widgets):
//   head      — QK, OV, E QK E^T or E OV U of the chosen layer and head (signed: the diverging map
//               on a range symmetric about 0, as every signed heatmap), with its words and export
//   composition — the Q, K and V score of every (earlier, later) head pair as three (L h) x (L h)
//               heatmaps side by side on one scale (0 … the largest score, the random baseline marked on
//               each colour bar; pairs that cannot compose are blocked), the pairs above the random
//               baseline as an arrow diagram (width = score), the words naming the strongest pair
//   copying   — each head's copying score as a bar
//   chains    — the virtual heads (OV^a OV^b) of the pairs V-composition ranks first, their copying
//               beside each head's own, and the pair picked (a table cell, or two combos) with its
//               E OV^a OV^b U when the worker kept it (analysis::Circuits::virtualOvTokens)
//   rollout   — the last layer's raw weights (mean over heads) beside the rollout through all
//               layers, on the probe sequence; the words follow the hovered row
// Each text is built by core (core/analysis: compositionText, copyingText, headCircuitText,
// rolloutText) from the numbers drawn, and tested against them there; the rollout section is one
// function for every source (drawRolloutSection over analysis::Rollout).
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
#include "circuits/circuits_widgets.hpp"
#include "train_lab/lab_state.hpp"
#include "widgets/colors.hpp"
#include "widgets/export_button.hpp"
#include "widgets/flow.hpp"
#include "widgets/heatmap_view.hpp"
#include "widgets/wrapped_text.hpp"

namespace mhascope::app {

using namespace mhascope::analysis;

namespace {

// The chosen head's matrix.
void drawHeadSection(UiContext& ctx, CircuitsView& view, const CircuitsEntry& e, const CircuitsInput& in, float side) {
  const Circuits& c = *e.circuits;
  view.layer = std::clamp(view.layer, 0, c.layers - 1);
  view.head = std::clamp(view.head, 0, c.heads - 1);
  const float em = ImGui::GetFontSize();
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("head");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(7 * em);
  ImGui::BeginDisabled(c.layers < 2);
  ImGui::SliderInt("##layer", &view.layer, 0, c.layers - 1, "layer %d", ImGuiSliderFlags_AlwaysClamp);
  ImGui::EndDisabled();
  ctx.probes.recordLastItem("circuits_layer");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(7 * em);
  ImGui::BeginDisabled(c.heads < 2);
  ImGui::SliderInt("##head", &view.head, 0, c.heads - 1, "head %d", ImGuiSliderFlags_AlwaysClamp);
  ImGui::EndDisabled();
  ctx.probes.recordLastItem("circuits_head");
  drawCircuitsMatrixPicker(ctx, view.matrix, c.tokenSpace, c.positions > 0);
  const HeadCircuit& h = c.at(view.layer, view.head);
  const RowMatrix& m = view.matrix == 0   ? h.qk
                       : view.matrix == 1 ? h.ov
                       : view.matrix == 2 ? h.qkTokens
                       : view.matrix == 3 ? h.ovTokens
                                          : h.qkPositions;
  Slice2D slice;
  slice.stage = StageId::Scores;  // signed numbers: the diverging map on a range symmetric about 0
  slice.head = view.head;
  slice.rows = static_cast<int>(m.rows());
  slice.cols = static_cast<int>(m.cols());
  slice.data = m.data();
  const bool tokens = view.matrix == 2 || view.matrix == 3;
  slice.rowAxis = kCircuitsRowAxes[view.matrix];
  slice.colAxis = kCircuitsColAxes[view.matrix];
  if (tokens) slice.rowLabels = slice.colLabels = in.vocabLabels;
  const ColormapId colormap = ctx.view.colormap.value_or(defaultColormap(DataKind::Signed));
  const ColorRange range = rangeFor(DataKind::Signed, m.data(), static_cast<std::size_t>(m.size()));
  const std::string title = headName(view.layer, view.head) + ": " + kCircuitsMatrixNames[view.matrix] +
                            (view.matrix == 0   ? " = W_qᵀ W_k (query x QK keyᵀ = score)"
                             : view.matrix == 1 ? " = W_vᵀ W_oᵀ (what the head writes for a key)"
                             : view.matrix == 2 ? " (which token looks at which)"
                             : view.matrix == 3 ? " (attending to a token raises these logits)"
                                                : " (which position looks at which, from the positions alone)");
  ImGui::SameLine();
  const std::string stem = std::string(kCircuitsMatrixStems[view.matrix]) + "_l" + std::to_string(view.layer) + "_h" +
                           std::to_string(view.head);
  drawCircuitsExport(ctx, "circuits_export_head", slice, colormap, range, title,
                     in.source + " (LayerNorm and biases left out)", stem);
  ImGui::TextUnformatted(title.c_str());
  const TextureKey key{kCheckpointCircuitsSpace | e.serial, view.keyBase + kCircuitsMatrix + view.matrix, 0, view.layer * c.heads + view.head, colormap, range.lo, range.hi};
  const float mapSide = view.matrix >= 2 ? tokenMapSide(slice, side) : side;
  const HeatmapHover hh = drawCircuitsMap(ctx, "head map", slice, DataKind::Signed, colormap, range, key, mapSide);
  ctx.probes.recordRect("circuits_head_map", hh.plotMin, hh.plotMax);
  const std::string words = headCircuitText(c, view.layer, view.head);
  textWrappedDisabled(words);
  ctx.probes.recordLabel("circuits_head_text", words);
}

// Layer columns of head nodes, an arrow per pair above the baseline, width = score.
void drawArrows(UiContext& ctx, const Circuits& c, char kind, float top, ImVec2 size) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 p0 = ImGui::GetCursorScreenPos();
  ImGui::InvisibleButton("arrows", size);
  ctx.probes.recordLastItem("circuits_arrows");
  const float em = ImGui::GetFontSize();
  auto node = [&](int layer, int head) {
    const float x = p0.x + em * 2.0f + (size.x - 4.0f * em) * (c.layers > 1 ? static_cast<float>(layer) / static_cast<float>(c.layers - 1) : 0.5f);
    const float y = p0.y + size.y * (static_cast<float>(head) + 0.5f) / static_cast<float>(c.heads);
    return ImVec2(x, y);
  };
  const float r = 0.55f * em;
  int drawn = 0;
  for (const Composition& p : c.pairs) {
    const double s = compositionScore(p, kind);
    if (s <= c.baseline) continue;
    ++drawn;
    const ImVec2 a = node(p.fromLayer, p.fromHead), b = node(p.toLayer, p.toHead);
    const float width = 1.0f + 7.0f * static_cast<float>(s / std::max(1e-9, static_cast<double>(top))) * em / 13.0f;
    const ImU32 col = headColor(p.fromLayer * c.heads + p.fromHead, 0.85f);
    const float dx = b.x - a.x, dy = b.y - a.y, len = std::max(1.0f, std::sqrt(dx * dx + dy * dy));
    const ImVec2 u(dx / len, dy / len);
    const ImVec2 from(a.x + u.x * r, a.y + u.y * r), tip(b.x - u.x * r, b.y - u.y * r);
    const float head = 0.6f * em + width;
    const ImVec2 base(tip.x - u.x * head, tip.y - u.y * head);
    dl->AddLine(from, base, col, width);
    dl->AddTriangleFilled(tip, ImVec2(base.x - u.y * head * 0.5f, base.y + u.x * head * 0.5f),
                          ImVec2(base.x + u.y * head * 0.5f, base.y - u.x * head * 0.5f), col);
  }
  for (int l = 0; l < c.layers; ++l) {
    for (int i = 0; i < c.heads; ++i) {
      const ImVec2 n = node(l, i);
      dl->AddCircleFilled(n, r, headColor(l * c.heads + i));
      const std::string tag = circuitsHeadTag(l, i);
      const ImVec2 ts = ImGui::CalcTextSize(tag.c_str());
      const float tx = l == 0 && c.layers > 1 ? n.x - r - ts.x - 0.2f * em : n.x + r + 0.2f * em;
      dl->AddText(ImVec2(tx, n.y - 0.5f * ts.y), ImGui::GetColorU32(ImGuiCol_Text), tag.c_str());
    }
  }
  ctx.probes.recordLabel("circuits_arrows_drawn", std::to_string(drawn) + " of " + std::to_string(c.pairs.size()));
}

void drawCompositionSection(UiContext& ctx, CircuitsView& view, const CircuitsEntry& e, const CircuitsInput& in, float side) {
  const Circuits& c = *e.circuits;
  const float em = ImGui::GetFontSize();
  const char kind = drawCircuitsKindPicker(ctx, view.kind);
  if (c.pairs.empty()) {
    const std::string words = compositionText(c, kind);
    textWrappedDisabled(words);
    ctx.probes.recordLabel("circuits_comp_text", words);
    return;
  }
  ImGui::SameLine();
  ImGui::TextDisabled("(the arrows, the words and the export; the three tables are side by side)");
  // (L h, L h) per kind: rows the earlier head a, columns the later head b; pairs that cannot compose blocked.
  const int n = c.layers * c.heads;
  RowMatrix m[3] = {RowMatrix::Zero(n, n), RowMatrix::Zero(n, n), RowMatrix::Zero(n, n)};
  std::vector<std::uint8_t> blocked(static_cast<std::size_t>(n * n), 1);
  float top = 0;
  for (const Composition& p : c.pairs) {
    const int a = p.fromLayer * c.heads + p.fromHead, b = p.toLayer * c.heads + p.toHead;
    for (int k = 0; k < 3; ++k) m[k](a, b) = static_cast<float>(compositionScore(p, "QKV"[k]));
    blocked[static_cast<std::size_t>(a * n + b)] = 0;
    top = std::max({top, static_cast<float>(p.q), static_cast<float>(p.k), static_cast<float>(p.v)});
  }
  std::vector<std::string> labels;
  for (int l = 0; l < c.layers; ++l)
    for (int i = 0; i < c.heads; ++i) labels.push_back(circuitsHeadTag(l, i));
  // One scale for Q, K and V and every pair (0 … the largest score of any kind): a colour is one score.
  const ColorRange range{0.0f, top > 0 ? top : 1.0f};
  const std::string scale = compositionScaleText(c.baseline, range.hi) +
                            " Rows: the head a that writes; columns: the head b that reads. Click a cell for that pair's virtual head.";
  textWrappedDisabled(scale);
  ctx.probes.recordLabel("circuits_comp_scale", scale);
  const ColormapId probability = probabilityColormap(ctx.view);
  // Three columns: each map as large as a label on every head needs (tokenMapSide), within its third.
  const float column = std::max(8.0f * em, (ImGui::GetContentRegionAvail().x - 2.0f * em) / 3.0f);
  const float most = column - colorbarWidth() - 0.5f * em;
  const float x0 = ImGui::GetCursorPosX();
  for (int k = 0; k < 3; ++k) {
    const char kk = "QKV"[k];
    Slice2D slice;
    slice.stage = StageId::Weights;  // scores in [0, 1]: the sequential map
    slice.rows = slice.cols = n;
    slice.data = m[k].data();
    slice.rowAxis = "a";  // short: three maps share the row (the scale line says which is which)
    slice.colAxis = "b";
    slice.rowLabels = slice.colLabels = labels;
    slice.setBlockedCells(blocked);
    const float small = std::min(tokenMapSide(slice, std::min(side, most)), most);
    if (k > 0) ImGui::SameLine(x0 + static_cast<float>(k) * (column + em));
    ImGui::PushID(k);
    ImGui::BeginGroup();
    const std::string title = std::string(1, kk) + "-composition (" + (kk == 'Q' ? "queries" : kk == 'K' ? "keys" : "values") + ")";
    if (k == view.kind) {
      ImGui::TextUnformatted(title.c_str());
      ImGui::SameLine();
      drawCircuitsExport(ctx, "circuits_export_comp", slice, probability, range,
                         title + " of every pair (random baseline " + formatGeneral(c.baseline, 3) + ")",
                         in.source + " (LayerNorm and biases left out)", std::string("composition_") + static_cast<char>(kk - 'A' + 'a'));
    } else {
      ImGui::TextDisabled("%s", title.c_str());
    }
    const TextureKey key{kCheckpointCircuitsSpace | e.serial, view.keyBase + kCircuitsReads + k, 0, -1, probability, range.lo,
                         range.hi};
    // No tooltip: it speaks of attention weights; the scores are written in the cells.
    const HeatmapHover hc = drawCircuitsMap(ctx, "comp map", slice, DataKind::Probability, probability, range, key, small, false);
    markColorbar(hc, range, static_cast<float>(c.baseline));
    ctx.probes.recordRect(std::string("circuits_comp_map_") + static_cast<char>(kk - 'A' + 'a'), hc.plotMin, hc.plotMax);
    if (k == view.kind) ctx.probes.recordRect("circuits_comp_map", hc.plotMin, hc.plotMax);
    if (hc.hovered && hc.row >= 0 && hc.col >= 0 && hc.row < n && hc.col < n) {
      const HeadPair p{hc.row / c.heads, hc.row % c.heads, hc.col / c.heads, hc.col % c.heads};
      if (const Composition* q = c.pair(p)) {
        ImGui::SetTooltip("%s → %s: %c %.3f (random baseline %.3f)\nvirtual head: copying %+.3f\nclick: show this pair's virtual head",
                          headName(p.fromLayer, p.fromHead).c_str(), headName(p.toLayer, p.toHead).c_str(), kk,
                          compositionScore(*q, kk), c.baseline, q->virtualCopying);
        if (hc.clicked) view.pair = p;
      }
    }
    ImGui::EndGroup();
    ImGui::PopID();
  }
  ImGui::Text("pairs above the baseline %.3f by %c-composition; width = score", c.baseline, kind);
  drawArrows(ctx, c, kind, top, ImVec2(std::max(12.0f * em, side), 0.6f * side));
  const std::string words = compositionText(c, kind);
  textWrappedDisabled(words);
  ctx.probes.recordLabel("circuits_comp_text", words);
}

// Chains of heads: the virtual heads of the pairs V-composition ranks first, and the pair picked (a cell
// of the tables or the two combos), with its E OV^a OV^b U when the worker kept it.
void drawVirtualSection(UiContext& ctx, CircuitsView& view, const CircuitsEntry& e, const CircuitsInput& in, float side) {
  const Circuits& c = *e.circuits;
  const std::string words = virtualHeadsText(c);
  textWrappedDisabled(words);
  ctx.probes.recordLabel("circuits_virtual_text", words);
  drawPairPicker(ctx, c.layers, c.heads, view.pair);
  const Composition* p = view.pair ? c.pair(*view.pair) : nullptr;
  if (!p) {
    ImGui::TextDisabled("Pick the two heads of a pair (or click a cell of a table above) to see its virtual head.");
    ctx.probes.recordLabel("circuits_pair_text", "");
    return;
  }
  const std::string text = virtualPairText(c, *p);
  textWrappedDisabled(text);
  ctx.probes.recordLabel("circuits_pair_text", text);
  const std::size_t i = static_cast<std::size_t>(p - c.pairs.data());
  if (i >= c.virtualOvTokens.size()) {
    if (c.tokenSpace) ImGui::TextDisabled("Its token-space OV is kept only for a vocabulary this small: every pair's V x V together at most %lld cells.",
                                          static_cast<long long>(kMaxVirtualTokenCells));
    return;
  }
  const RowMatrix& t = c.virtualOvTokens[i];
  Slice2D slice;
  slice.stage = StageId::Scores;  // signed: the diverging map on a range symmetric about 0
  slice.rows = static_cast<int>(t.rows());
  slice.cols = static_cast<int>(t.cols());
  slice.data = t.data();
  slice.rowAxis = "attended token";
  slice.colAxis = "predicted token";
  slice.rowLabels = slice.colLabels = in.vocabLabels;
  const ColormapId colormap = ctx.view.colormap.value_or(defaultColormap(DataKind::Signed));
  const ColorRange range = rangeFor(DataKind::Signed, t.data(), static_cast<std::size_t>(t.size()));
  const std::string title = headName(p->fromLayer, p->fromHead) + " → " + headName(p->toLayer, p->toHead) +
                            ": E OV^a OV^b U (attending to a token raises these logits, through both heads)";
  ImGui::TextUnformatted(title.c_str());
  sameLineOrWrap(6.0f * ImGui::GetFontSize());
  drawCircuitsExport(ctx, "circuits_export_pair", slice, colormap, range, title, in.source + " (LayerNorm and biases left out)",
                     "virtual_ov_tokens_l" + std::to_string(p->fromLayer) + "_h" + std::to_string(p->fromHead) + "_l" +
                         std::to_string(p->toLayer) + "_h" + std::to_string(p->toHead));
  const TextureKey key{kCheckpointCircuitsSpace | e.serial, view.keyBase + kCircuitsVirtual, 0, static_cast<int>(i), colormap,
                       range.lo, range.hi};
  const HeatmapHover hv = drawCircuitsMap(ctx, "pair map", slice, DataKind::Signed, colormap, range, key,
                                          tokenMapSide(slice, side));
  ctx.probes.recordRect("circuits_pair_map", hv.plotMin, hv.plotMax);
}

void drawCopyingSection(UiContext& ctx, const Circuits& c) {
  const float em = ImGui::GetFontSize();
  ImGui::TextUnformatted("copying score (E OV U's eigenvalues: sum / sum of moduli)");
  for (const HeadCircuit& h : c.perHead) {
    ImGui::PushID(h.layer * c.heads + h.head);
    char value[32];
    std::snprintf(value, sizeof value, "%.3f", h.copying);
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(headColor(h.layer * c.heads + h.head)), "%-4s", circuitsHeadTag(h.layer, h.head).c_str());
    ImGui::SameLine(4.5f * em);
    ImGui::PushStyleColor(ImGuiCol_PlotHistogram, ImGui::ColorConvertU32ToFloat4(headColor(h.layer * c.heads + h.head, 0.8f)));
    ImGui::ProgressBar(static_cast<float>(std::max(0.0, h.copying)), ImVec2(14 * em, 0), value);
    ImGui::PopStyleColor();
    ctx.probes.recordLabel("circuits_copying_L" + std::to_string(h.layer) + "_h" + std::to_string(h.head), value);
    ImGui::PopID();
  }
  const std::string words = copyingText(c);
  textWrappedDisabled(words);
  ctx.probes.recordLabel("circuits_copying_text", words);
}

}  // namespace

void drawCircuitsView(UiContext& ctx, CircuitsView& view) {
  const float em = ImGui::GetFontSize();
  const CircuitsInput& in = view.input;
  if (!in.error.empty()) {
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(kErrorColor), "%s", in.error.c_str());
    ImGui::PopTextWrapPos();
    ctx.probes.recordLabel("circuits_status", in.error);
    return;
  }
  if (!in.params) {
    textWrappedDisabled(in.missing);
    ctx.probes.recordLabel("circuits_status", in.missing);
    return;
  }
  const CircuitsEntry* e = view.cached(in.params);
  std::string status;
  if (e) {
    view.shownSerial = e->serial;
    view.shownSource = in.source;
  } else {
    // Still computing: keep the last picture on screen (no jump in the layout), and say so.
    for (const CircuitsEntry& c : view.cache)
      if (c.serial == view.shownSerial) e = &c;
    status = "computing the circuits of " + in.source + " …" + (e ? " (showing " + view.shownSource + ")" : "");
  }
  ctx.probes.recordLabel("circuits_status", status.empty() ? "ready" : status);
  ctx.probes.recordLabel("circuits_step", e ? view.shownSource : "");
  if (!status.empty()) ImGui::TextDisabled("%s", status.c_str());
  if (!e) return;
  if (!e->circuits) {
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(kErrorColor), "%s", e->error.c_str());
    ImGui::PopTextWrapPos();
    ctx.probes.recordLabel("circuits_status", e->error);
    return;
  }
  if (status.empty()) {
    textWrappedDisabled(view.shownSource + ": read from the weights alone (LayerNorm and biases left out, as in "
                        "Elhage et al. 2021)");
  }
  const float side = std::clamp(0.42f * ImGui::GetContentRegionAvail().x - colorbarWidth(), 8.0f * em, 22.0f * em);
  ImGui::PushID("circuits");
  circuitsSectionTitle("Head: QK and OV circuits");
  // The head's d_model x d_model (or V x V) matrix gets the width: its cells are many and small.
  drawHeadSection(ctx, view, *e, in, std::clamp(0.6f * ImGui::GetContentRegionAvail().x - colorbarWidth(), 8.0f * em, 26.0f * em));
  circuitsSectionTitle("Composition: which earlier head a later head reads");
  drawCompositionSection(ctx, view, *e, in, side);
  circuitsSectionTitle("Copying");
  drawCopyingSection(ctx, *e->circuits);
  circuitsSectionTitle("Chains of heads: virtual heads through the values");
  drawVirtualSection(ctx, view, *e, in, side);
  circuitsSectionTitle("Attention rollout");
  RolloutPicture rollout;
  rollout.rollout = in.rollout;
  rollout.labels = in.probeLabels;
  rollout.missing = in.rolloutWhy.empty() ? std::string("no attention picture for this step") : in.rolloutWhy;
  rollout.exportSubtitle = in.source;
  rollout.exportStem = "rollout";
  rollout.rawKey = TextureKey{in.rolloutSerial, view.keyBase + kCircuitsRawWeights, 0, -1, probabilityColormap(ctx.view), 0.0f, 1.0f};
  rollout.rollKey = TextureKey{in.rolloutSerial, view.keyBase + kCircuitsRollout, 0, -1, probabilityColormap(ctx.view), 0.0f, 1.0f};
  drawRolloutSection(ctx, rollout, side);
  ImGui::PopID();
}

void drawTrainCircuits(TrainLab& lab, UiContext& ctx) {
  if (lab.scrollToCircuitsFrames > 0) {  // asked for by the pipeline's Circuits tab: this panel, its header at the top
    const float target = ImGui::GetCursorPosY() - ImGui::GetFrameHeightWithSpacing();
    ImGui::SetScrollY(target);
    // Asked again on the next frames until the column is long enough to scroll there: its pictures
    // come once computed.
    lab.scrollToCircuitsFrames = target <= ImGui::GetScrollMaxY() ? 0 : lab.scrollToCircuitsFrames - 1;
  }
  lab.circuits.keyBase = kTrainCircuitsSlot;
  drawCircuitsView(ctx, lab.circuits);
}

// The pipeline's tab: one panel, its source deciding the view — a model folder's layer around the
// pipeline's head, or a checkpoint's every pair of heads.
void drawCircuitsTab(UiContext& ctx) {
  if (!ctx.circuits) return;
  if (!ctx.state.doc.files.model.empty()) {
    drawModelCircuitsTab(ctx, ctx.circuits->model);
    return;
  }
  CircuitsView& view = ctx.circuits->checkpoint;
  view.keyBase = kTabCircuitsSlot;
  // No checkpoint open, but the Train mode holds a run: its circuits are one click away, in the Train
  // mode's Circuits panel (which reads any of its steps); the click only changes the view.
  TrainLab* lab = ctx.train;
  if (ctx.state.doc.files.checkpoint.empty() && lab && lab->run.view && !lab->run.view->params.empty()) {
    char label[160];
    std::snprintf(label, sizeof label, "Show the circuits of the run just trained (Train mode, step %lld)",
                  static_cast<long long>(lab->run.shown.step));
    if (ImGui::Button(label)) {
      lab->active = true;
      lab->scrollToCircuitsFrames = TrainLab::kScrollToCircuitsFrames;
    }
    ctx.probes.recordLastItem("circuits_show_train_run");
    ctx.probes.recordLabel("circuits_show_train_run", label);
  }
  // Its own scrolling area, as the model folder's view has: the tab's area leaves the mouse wheel to
  // zoomable heatmaps, and the sections run far below the window.
  ImGui::BeginChild("checkpoint circuits", ImVec2(0.0f, 0.0f), false);
  drawCircuitsView(ctx, view);
  ImGui::EndChild();
}

}  // namespace mhascope::app
