// The Windows tab — the sliding window and the sinks: W and S sliders, the kept keys as a picture,
// one head's weights with and without the window, the score cells kept as T grows, what
// StreamingLLM keeps, with the first token's measured share of the weight, published models' local and global
// layers, and gpt-oss's learned sink with its share on the same sentence.
#include <imgui.h>

#include <algorithm>
#include <string>

#include "lessons/lesson_tab.hpp"
#include "widgets/colors.hpp"
#include "widgets/drag_slider.hpp"
#include "widgets/wrapped_text.hpp"

namespace mhascope::app {
namespace {

// The memory table: per head, score cells with and without the window, and the keys a streaming
// decoder caches, at this T and longer ones.
void drawWindowMemory(const WindowLesson& r) {
  const ImGuiTableFlags flags = ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit;
  if (!ImGui::BeginTable("memory", 5, flags)) return;
  ImGui::TableSetupColumn("T");
  ImGui::TableSetupColumn(r.causal ? "cells, full causal" : "cells, full");
  ImGui::TableSetupColumn("cells, window + sinks");
  ImGui::TableSetupColumn("share kept");
  ImGui::TableSetupColumn("cached keys (all T -> W + S)");
  ImGui::TableHeadersRow();
  for (const WindowMemoryRow& m : r.memory) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(formatCount(m.tokens).c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(formatCount(m.fullCells).c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(formatCount(m.windowCells).c_str());
    ImGui::TableNextColumn();
    ImGui::Text("%.3g %%", m.fullCells > 0 ? 100.0 * static_cast<double>(m.windowCells) / static_cast<double>(m.fullCells) : 0.0);
    ImGui::TableNextColumn();
    ImGui::Text("%s -> %s", formatCount(m.tokens).c_str(), formatCount(m.cachedKeys).c_str());
  }
  ImGui::EndTable();
}

// Published models' local and global layers: the first layers' pattern, the counts, and the cache at two contexts
// as a share of what every layer global would cache.
void drawLayerPatterns(UiContext& ctx) {
  const std::string text = layerPatternsText();
  textWrapped(text);
  ctx.probes.recordLabel("windows_layer_patterns", text);
  const ImGuiTableFlags flags = ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit;
  if (!ImGui::BeginTable("layer_patterns", 6, flags)) return;
  ImGui::TableSetupColumn("model");
  ImGui::TableSetupColumn("W");
  ImGui::TableSetupColumn("layers 0-11");
  ImGui::TableSetupColumn("local / global");
  const std::string shortCache = "at " + formatCount(kPatternShortContext);
  const std::string longCache = "at " + formatCount(kPatternLongContext);
  ImGui::TableSetupColumn(shortCache.c_str());
  ImGui::TableSetupColumn(longCache.c_str());
  ImGui::TableHeadersRow();
  std::string rows;
  for (const PublishedLayerPattern& p : publishedLayerPatterns()) {
    const int global = globalLayerCount(p);
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(p.name);
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(formatCount(p.window).c_str());
    ImGui::TableNextColumn();
    const std::string strip = layerPatternStrip(p, 12);
    ImGui::TextUnformatted(strip.c_str());
    ImGui::TableNextColumn();
    ImGui::Text("%d / %d", p.layers - global, global);
    for (const std::int64_t n : {kPatternShortContext, kPatternLongContext}) {
      ImGui::TableNextColumn();
      ImGui::Text("%.1f %%", 100.0 * layerPatternCacheShare(p, n));
    }
    rows += std::string(rows.empty() ? "" : "; ") + p.name + " " + strip + " " + std::to_string(p.layers - global) + "/" +
            std::to_string(global);
  }
  ImGui::EndTable();
  ctx.probes.recordLabel("windows_layer_pattern_rows", rows);
  textWrappedDisabled("From each model's config.json. Layers: L local (windowed), G global. At n tokens: the keys (and values) "
                      "the layers cache at that context, as a share of what they would with every layer global.");
}

}  // namespace

// Over 80 lines (90) on purpose: one tab drawn top to bottom in reading order — the sliders, the
// three pictures, the memory table and the sink paragraphs — every part using the trace, batch item,
// head and result fetched at the top.
void drawWindowsTab(UiContext& ctx, const LessonOutcome<WindowLesson>& outcome, lessons::Windows::Choices& pick) {
  lessonHeader(ctx, "Sliding windows and sinks", windowLessonIntro());
  if (!rerunLessonReady<lessons::Windows>(ctx)) return;
  const Trace& t = ctx.state.shown.trace;
  const float em = ImGui::GetFontSize();
  pick.keepInRange(t);
  ImGui::SetNextItemWidth(9 * em);
  dragSliderInt("window W", &pick.window, 1, std::max(1, t.tk));
  ctx.probes.recordLastItem("windows_w");
  ImGui::SameLine(0, em);
  ImGui::SetNextItemWidth(9 * em);
  dragSliderInt("sinks S", &pick.sinks, 0, std::max(0, t.tk));
  ctx.probes.recordLastItem("windows_s");
  ImGui::SameLine(0, em);
  ImGui::RadioButton("causal", &pick.causal, 1);
  ctx.probes.recordLastItem("windows_causal");
  ImGui::SameLine();
  ImGui::RadioButton("no causal mask", &pick.causal, 0);
  ctx.probes.recordLastItem("windows_bidirectional");
  const std::string start = windowStartText(t);
  textWrappedDisabled(start);
  ctx.probes.recordLabel("windows_start", start);
  // The result of the choices above, or of the previous ones for the frame until the scheduler has
  // recomputed it.
  if (!lessonOk(outcome)) return;
  const WindowLesson* r = outcome.get();
  const int variant = ctx.state.shown.lessons.of<lessons::Windows>().variant;
  const int b = std::clamp(ctx.view.batch, 0, t.batch - 1);
  const int h = std::clamp(ctx.view.head, 0, t.heads - 1);
  ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(headColor(h)), "head %d (pick it in the Heatmap tab)", h);
  ImGui::SameLine(0, em);
  ImGui::Text("W = %d, S = %d, %s: per head %s of %s score cells kept", r->window, r->sinks,
              r->causal ? "causal" : "no causal mask", formatCount(r->keptCells).c_str(), formatCount(r->fullCells).c_str());
  ctx.probes.recordLabel("windows_cells", "kept " + std::to_string(r->keptCells) + " of " + std::to_string(r->fullCells));
  const std::size_t cells = static_cast<std::size_t>(t.tq) * static_cast<std::size_t>(t.tk);
  const std::size_t head = (static_cast<std::size_t>(b) * static_cast<std::size_t>(t.heads) + static_cast<std::size_t>(h)) * cells;
  const float labelsW = 4.5f * em;
  const float side = std::clamp((ImGui::GetContentRegionAvail().x - colorbarWidth() - 3.0f * (labelsW + em)) / 3.0f,
                                8.0f * em, 22.0f * em);
  struct Pic {
    const char* title;
    const Trace* trace;
    const float* data;
  };
  const Pic pics[] = {{"kept keys: 1 window, 0.5 sink, x hidden", &r->windowed, r->keep.ptr() + static_cast<std::size_t>(b) * cells},
                      {"weights with the window", &r->windowed, r->windowed.tensor(StageId::Weights).ptr() + head},
                      {"weights without it", &r->full, r->full.tensor(StageId::Weights).ptr() + head}};
  for (int i = 0; i < 3; ++i) {
    ImGui::PushID(i);
    if (i) ImGui::SameLine(0, em);
    ImGui::BeginGroup();
    ImGui::TextUnformatted(pics[i].title);
    MatrixPicture m;
    m.data = pics[i].data;
    m.rows = t.tq;
    m.cols = t.tk;
    m.rowLabels = t.queryTokens[static_cast<std::size_t>(b)];
    m.colLabels = t.keyTokens[static_cast<std::size_t>(b)];
    m.range = ColorRange{0.0f, 1.0f};  // the three share 0..1: one colour bar, on the last
    m.trace = pics[i].trace;
    m.batchIndex = b;
    m.head = i == 0 ? -1 : h;
    m.textureTag = 100000000 + 3 * variant + i;
    m.colorbar = i == 2;
    m.numbers = t.tk <= 10 && i > 0;
    drawMatrix(ctx, "m", m, ImVec2(side + labelsW + (m.colorbar ? colorbarWidth() : 0.0f), side + 4.5f * em));
    if (i == 0) ctx.probes.recordLastItem("windows_mask");
    ImGui::EndGroup();
    ImGui::PopID();
  }
  const std::string keep = windowKeepText(*r);
  textWrapped(keep);
  ctx.probes.recordLabel("windows_keep", keep);
  drawWindowMemory(*r);
  const std::string reach = windowReachText(*r);
  textWrapped(reach);
  ctx.probes.recordLabel("windows_reach", reach);
  ImGui::Spacing();
  textWrappedDisabled(streamingLlmText());
  const std::string first = firstKeyText(*r, h);
  textWrapped(first);
  ctx.probes.recordLabel("windows_first_key", first);
  textWrappedDisabled(formatText("Mean |output difference| against no window: %.3g with the %d sink(s), %.3g with the same "
                                 "window and no sink.",
                                 r->meanAbsOutputDiff, r->sinks, r->meanAbsOutputDiffNoSinks));
  ImGui::Spacing();
  drawLayerPatterns(ctx);
  ImGui::Spacing();
  const std::string learned = learnedSinkText(*r, h);
  textWrapped(learned);
  ctx.probes.recordLabel("windows_learned_sink", learned);
}

}  // namespace mhascope::app

// The lesson's tab (core/lessons/windows.hpp), for the window's UiContext.
template <class Ui>
void mhascope::lessons::Windows::drawTab(Ui& ui, const LessonOutcome<Result>& shown, Choices& choices) {
  app::drawWindowsTab(ui, shown, choices);
}
template void mhascope::lessons::Windows::drawTab(app::UiContext&, const LessonOutcome<Result>&, Choices&);
