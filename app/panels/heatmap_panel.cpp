// The large heatmap of the current stage: pick the batch item and the head, zoom, export.
#include <imgui.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "render/texture_keys.hpp"
#include "widgets/drag_slider.hpp"
#include "panels/panel.hpp"
#include "widgets/colors.hpp"
#include "widgets/export_button.hpp"
#include "widgets/flow.hpp"
#include "widgets/heatmap_view.hpp"

namespace mhascope::app {
namespace {

// Why a stage without a head axis shows (or does not show) the head-colour strip.
const char* noHeadAxisNote(StageId stage) {
  if (stage == StageId::KvGroups) return "rows: the h query heads; columns: the N K/V heads; 1 = reads it";
  if (stage == StageId::WindowMask) return "the same for every head and batch item: 1 = hidden by the window";
  if (stage == StageId::Concat) return "no head axis: the strip shows which head each column came from";
  if (headsOwnColumns(stage)) return "no head axis yet: the strip shows which head will get each column";
  return noHeadOwnerNote(stage);
}

// "query head 5 reads K/V head 1 (query heads 4 … 7 share it)".
std::string kvReadNote(const Trace& t, int queryHead, int kvHead) {
  const int group = t.heads / std::max(1, t.kvHeads);
  return "query head " + std::to_string(queryHead) + " reads K/V head " + std::to_string(kvHead) + " (query heads " +
         std::to_string(kvHead * group) + " … " + std::to_string(kvHead * group + group - 1) + " share it)";
}

// One coloured button per head, the same colours as the grid and the shape drawing.
void headPicker(UiContext& ctx) {
  const int heads = ctx.state.shown.trace.heads;
  ImGui::AlignTextToFramePadding();
  ImGui::TextColored(symbolColorVec("h"), "head");
  for (int h = 0; h < heads; ++h) {
    ImGui::PushID(h);
    sameLineOrWrap(ImGui::GetFrameHeight() * 1.2f, h == 0 ? -1.0f : 2.0f);
    const bool current = h == ctx.view.head;
    ImGui::PushStyleColor(ImGuiCol_Button, headColor(h, current ? 1.0f : 0.35f));
    ImGui::PushStyleColor(ImGuiCol_ButtonHovered, headColor(h, 0.8f));
    ImGui::PushStyleColor(ImGuiCol_Text, current ? IM_COL32(0, 0, 0, 255) : ImGui::GetColorU32(ImGuiCol_Text));
    const std::string label = std::to_string(h);  // 0-based, as `--head` takes it
    if (heads <= 24) {
      if (ImGui::Button(label.c_str())) ctx.view.head = h;
    } else if (h == 0) {  // very many heads: a slider instead of a wall of buttons
      ImGui::SetNextItemWidth(ImGui::GetFontSize() * 10);
      dragSliderInt("##head", &ctx.view.head, 0, heads - 1);
    }
    ImGui::PopStyleColor(3);
    if (heads <= 24) ctx.probes.recordLastItem("head_" + std::to_string(h));
    ImGui::PopID();
  }
}

// Fit, +, − and the zoom in percent.
void zoomButtons(UiContext& ctx) {
  HeatmapZoom& zoom = ctx.view.zoom;
  if (ImGui::Button("Fit")) zoom = {};
  ctx.probes.recordLastItem("zoom_fit");
  ImGui::SameLine();
  if (ImGui::Button("+")) zoom.zoom *= 1.5f;  // drawHeatmap clamps to its largest zoom
  ctx.probes.recordLastItem("zoom_in");
  ImGui::SameLine();
  if (ImGui::Button("−")) zoom.zoom = std::max(zoom.zoom / 1.5f, 1.0f);
  ctx.probes.recordLastItem("zoom_out");
  ImGui::SameLine();
  char percent[32];
  std::snprintf(percent, sizeof percent, "%.0f%%", static_cast<double>(zoom.zoom * 100));
  ImGui::TextDisabled("%s", percent);
  ctx.probes.recordLabel("zoom", percent);
}

// Under the heatmap: how many cells a pixel shows and by which rule, and the colour scale.
void samplingAndScale(UiContext& ctx, const HeatmapSpec& spec, const HeatmapHover& drawn) {
  const std::string sampling = samplingLabel(drawn, downsampleRuleFor(spec.kind));
  const std::string scale = colorScaleLegend(spec.scale, spec.range);
  ctx.probes.recordLabel("heatmap_sampling", sampling.empty() ? "1 texel = 1 cell" : sampling);
  ctx.probes.recordLabel("heatmap_scale", colorScaleName(spec.scale));
  if (!sampling.empty()) {
    ImGui::TextColored(ImVec4(1, 0.8f, 0.3f, 1), "%s", sampling.c_str());
    if (ImGui::IsItemHovered()) {
      ImGui::SetTooltip("More cells than pixels: each pixel shows the %s of the cells it covers (zoom in for single "
                        "cells; the tooltip names the cell shown, with its exact value).",
                        downsampleRuleName(downsampleRuleFor(spec.kind)));
    }
    ImGui::SameLine(0, ImGui::GetFontSize());
  }
  ImGui::TextDisabled("%s", scale.c_str());
}

void legend(UiContext& ctx, const Trace& t, const Slice2D& s) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float em = ImGui::GetFontSize();
  bool any = false;
  auto swatch = [&](ImU32 color, const char* text, bool circle) {
    if (any) ImGui::SameLine(0, em);
    any = true;
    const ImVec2 p = ImGui::GetCursorScreenPos();
    if (circle) {
      dl->AddCircleFilled(ImVec2(p.x + 0.45f * em, p.y + 0.55f * em), 0.3f * em, color);
    } else {
      dl->AddRectFilled(ImVec2(p.x, p.y + 0.1f * em), ImVec2(p.x + 0.9f * em, p.y + 1.0f * em), color);
    }
    ImGui::Dummy(ImVec2(1.1f * em, em));
    ImGui::SameLine(0, 0.2f * em);
    ImGui::TextUnformatted(text);
  };
  const bool tokenGrid = s.rowKind == AxisKind::QueryTokens && s.colKind == AxisKind::KeyTokens;
  // Every frame: at T = 4096 the mask flags are 16 M bytes, so look only when a mask exists
  // (a causal or padding mask blocks a cell in the first row already).
  const auto nonZero = [](std::uint8_t b) { return b != 0; };
  const bool anyBlocked = (t.causal || t.keyPadding || t.attnMask || t.window > 0) && std::any_of(t.blocked.begin(), t.blocked.end(), nonZero);
  const bool anyFull = std::any_of(t.fullyMasked.begin(), t.fullyMasked.end(), nonZero);
  if (tokenGrid && anyBlocked && (s.stage == StageId::MaskedScores || s.stage == StageId::Weights)) {
    // The swatch is drawn like the cells it names: blocked colour and the cross.
    if (any) ImGui::SameLine(0, em);
    any = true;
    drawBlockedSwatch(dl, ImGui::GetCursorScreenPos(), effectiveColormap(ctx.view, s.stage));
    ImGui::Dummy(ImVec2(1.1f * em, em));
    ImGui::SameLine(0, 0.2f * em);
    ImGui::TextUnformatted(s.stage == StageId::Weights ? "blocked by the mask: weight exactly 0"
                                                       : "blocked by the mask: score −inf");
  }
  if (anyFull && s.rowKind == AxisKind::QueryTokens) swatch(kMaskFlagColor, "query with every key blocked (weights 0)", true);
  if (any) ImGui::SameLine(0, em);
  ImGui::TextDisabled("wheel: zoom   drag: pan   double-click: fit");
}

// While the worker computes a new configuration the previous picture stays; this line says
// what is under way: the phase, the time so far and, from the last compute's speed, the
// expected time as a bar.
void computeProgress(UiContext& ctx) {
  const AppState& st = ctx.state;
  if (!st.compute.computing) return;
  const ComputeProgress& p = st.compute.progress;
  const char* phase = p.phase == ComputePhase::Preparing   ? "preparing tokens, embeddings and weights"
                      : p.phase == ComputePhase::FirstHead ? "the shown head first"
                      : p.phase == ComputePhase::Forward   ? "forward pass (recording all 16 stages)"
                                                           : "queued";
  char layerText[96];
  if (p.phase == ComputePhase::Preparing && p.layers > 0) {  // a model folder's layers before the shown one
    std::snprintf(layerText, sizeof layerText, "the model's layers before this one: layer %d of %d", p.layersDone,
                  p.layers);
    phase = layerText;
  }
  char text[200];
  if (p.expectedSeconds > 0) {
    std::snprintf(text, sizeof text, "computing on the worker: %s · %.1f s of about %.1f s", phase, p.seconds,
                  p.expectedSeconds);
    const float fraction = static_cast<float>(std::min(p.seconds / p.expectedSeconds, 0.99));
    ImGui::ProgressBar(fraction, ImVec2(ImGui::GetFontSize() * 8, 0), "");
    ImGui::SameLine();
  } else {
    std::snprintf(text, sizeof text, "computing on the worker: %s · %.1f s", phase, p.seconds);
  }
  const bool first = st.compute.firstHead != nullptr && st.compute.firstHead->stage == ctx.view.stage;
  ImGui::TextColored(ImVec4(1, 0.8f, 0.3f, 1), "%s%s", text,
                     first ? "" : " (the picture below is the previous one)");
  ctx.probes.recordLabel("compute_progress", phase);
}

// A big job's first picture (shell/compute_worker.hpp FirstHead): the head the view showed, of
// the configuration being computed, alone — the same numbers the whole trace will hold — drawn
// like the trace's heatmap (zoom, pan, tooltip) until the whole trace comes. Heads, batch items
// and export wait for it.
const FirstHead* firstHeadShown(const UiContext& ctx) {
  const AppState& st = ctx.state;
  if (!st.compute.computing || !st.compute.firstHead || st.compute.firstHead->stage != ctx.view.stage) return nullptr;
  return st.compute.firstHead.get();
}

void drawFirstHead(UiContext& ctx, const FirstHead& f) {
  ViewState& view = ctx.view;
  const Slice2D& s = f.slice;
  const float em = ImGui::GetFontSize();
  ImGui::AlignTextToFramePadding();
  ImGui::TextColored(ImVec4(1, 0.8f, 0.3f, 1), "First picture: head %d (h = %d)%s, computed alone", f.head, f.heads,
                     f.batches > 1 ? (" (batch item " + std::to_string(f.batch) + ")").c_str() : "");
  if (ImGui::IsItemHovered()) {
    ImGui::SetTooltip("The head on screen, computed before the others: the very numbers the whole trace will\n"
                      "hold. The other heads and stages follow; then the head buttons, Export and the\n"
                      "other panels show the new configuration.");
  }
  sameLineOrWrap(10 * em, em);
  zoomButtons(ctx);
  const std::string title = nameSelection(f.stage, f.batch, f.head, 0, f.trace.layer).title;
  const std::string what = title + "   " + s.rowAxis + " × " + s.colAxis + " = " + std::to_string(s.rows) + " × " +
                           std::to_string(s.cols);
  ImGui::TextUnformatted(what.c_str());
  ctx.probes.recordLabel("heatmap_label", "first picture · " + title);
  computeProgress(ctx);

  HeatmapSpec spec;
  spec.slice = &s;
  spec.colormap = effectiveColormap(view, f.stage);
  spec.kind = stageInfo(f.stage).kind;
  spec.range = rangeFor(spec.kind, s.data, static_cast<std::size_t>(s.rows) * static_cast<std::size_t>(s.cols));
  spec.scale = effectiveColorScale(view.colorScale, spec.kind);
  spec.trace = &f.trace;  // the one head's mask flags (batch item 0 of that trace)
  spec.heads = 1;
  spec.dk = f.trace.dk;
  spec.showNumbers = view.showNumbers;
  spec.colorbarTexture = ctx.textures.colorbar(spec.colormap).imguiId();
  spec.frameColor = headColor(f.head);
  // Its own texture keys: a serial no trace has.
  spec.textureKey = TextureKey{kFirstHeadSpace | f.requestId, static_cast<int>(f.stage), 0, 0, spec.colormap,
                               spec.range.lo, spec.range.hi};
  spec.textures = &ctx.textures;
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float legendH = 2.0f * ImGui::GetFrameHeightWithSpacing();
  const HeatmapHover hover = drawHeatmap("main", spec, &view.zoom, ImVec2(avail.x, std::max(avail.y - legendH, 4.0f * em)));
  ctx.probes.recordRect("heatmap", hover.plotMin, hover.plotMax);
  samplingAndScale(ctx, spec, hover);
  legend(ctx, f.trace, s);
}

}  // namespace

void drawHeatmapPanel(UiContext& ctx) {
  AppState& st = ctx.state;
  ViewState& view = ctx.view;
  if (const FirstHead* first = firstHeadShown(ctx)) return drawFirstHead(ctx, *first);  // also before any trace
  if (!traceReady(ctx)) return;
  const Trace& t = st.shown.trace;
  const StageId stage = view.stage;
  view.batch = std::clamp(view.batch, 0, t.batch - 1);
  view.head = std::clamp(view.head, 0, t.heads - 1);
  const float em = ImGui::GetFontSize();

  // Toolbar: batch item, head, zoom, export.
  if (t.batch > 1) {
    ImGui::SetNextItemWidth(8 * em);
    dragSliderInt("batch item", &view.batch, 0, t.batch - 1);  // 0-based, as `--batch-index`
    ctx.probes.recordLastItem("batch");
    sameLineOrWrap(4 * em, em);
  }
  if (stageHasHeads(stage)) {
    headPicker(ctx);
  } else if (t.axesOf(stage).back() == "N·d_k") {  // K, V projections with N K/V heads
    ImGui::AlignTextToFramePadding();
    ImGui::TextDisabled("no head axis yet: N·d_k columns, K/V head g gets columns g·d_k … (g+1)·d_k − 1 (N = %d)",
                        t.kvHeads);
  } else {
    ImGui::AlignTextToFramePadding();
    ImGui::TextDisabled("%s", noHeadAxisNote(stage));
  }
  sameLineOrWrap(10 * em, em);
  zoomButtons(ctx);

  // K and V have N heads under grouped-query attention: the picked query head shows the K/V head
  // it reads, and says so.
  const int kvHead = kvHeadRead(t, stage, view.head);
  const Slice2D* s = st.shown.slice(stage, view.batch, kvHead);
  const std::string kvNote = kvHead == view.head ? std::string() : kvReadNote(t, view.head, kvHead);
  ctx.probes.recordLabel("kv_head_note", kvNote);
  if (!kvNote.empty()) ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(headColor(view.head)), "%s", kvNote.c_str());
  if (!s) {
    ImGui::TextDisabled("nothing to show for this stage");
    return;
  }
  HeatmapSpec spec;
  spec.slice = s;
  spec.colormap = effectiveColormap(view, stage);
  spec.range = viewRange(st, view, stage, view.batch, view.head);
  spec.kind = stageInfo(stage).kind;
  spec.scale = effectiveColorScale(view.colorScale, spec.kind);
  spec.trace = &t;
  spec.heads = t.heads;
  spec.dk = t.dk;
  spec.showNumbers = view.showNumbers;
  spec.colorbarTexture = ctx.textures.colorbar(spec.colormap).imguiId();
  if (s->head >= 0) spec.frameColor = headColor(s->head);
  const TextureKey key{st.shown.traceSerial, static_cast<int>(stage), view.batch, s->head, spec.colormap, spec.range.lo,
                       spec.range.hi};
  spec.textures = &ctx.textures;
  spec.textureKey = key;

  sameLineOrWrap(ImGui::CalcTextSize("Export…").x + 2 * ImGui::GetStyle().FramePadding.x, em);
  ExportTarget target;
  target.slices = {s};
  target.colormap = spec.colormap;
  target.range = spec.range;
  drawExportButton(ctx, "export_heatmap", target);

  // What is shown: the same words as the exported title and file name (nameSelection), then
  // the shape in symbols.
  const std::string what = nameSlice(*s).title + "   " + s->rowAxis + " × " + s->colAxis + " = " +
                           std::to_string(s->rows) + " × " + std::to_string(s->cols);
  ImGui::TextUnformatted(what.c_str());
  ctx.probes.recordLabel("heatmap_label", nameSlice(*s).title);
  if (t.selfAttention && (stage == StageId::Key || stage == StageId::Value)) {
    ImGui::SameLine();
    ImGui::TextDisabled("(self-attention: the same rows as X_q)");
  }
  computeProgress(ctx);

  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float legendH = 2.0f * ImGui::GetFrameHeightWithSpacing();
  const HeatmapHover hover = drawHeatmap("main", spec, &view.zoom, ImVec2(avail.x, std::max(avail.y - legendH, 4.0f * em)));
  ctx.probes.recordRect("heatmap", hover.plotMin, hover.plotMax);
  ctx.probes.recordLabel("row_labels_cut", std::to_string(hover.rowLabelsCut));
  samplingAndScale(ctx, spec, hover);
  legend(ctx, t, *s);
}

}  // namespace mhascope::app
