// The KV cache tab — a decoding stepper: the prefill P slider, "Next token" and "Reset"; the K and V
// caches as they grow (the new row framed), the new query row's weights against the cache in every
// head, the check against the full causal forward, and bytes and FLOPs per step.
#include <imgui.h>

#include <algorithm>
#include <string>
#include <vector>

#include "lessons/lesson_tab.hpp"
#include "widgets/colors.hpp"
#include "widgets/drag_slider.hpp"
#include "widgets/wrapped_text.hpp"

namespace mhascope::app {
namespace {

constexpr ImU32 kNewRowColor = IM_COL32(255, 190, 40, 255);

// A frame around the last of `rows` rows of a picture drawn just now.
void frameLastRow(const HeatmapHover& drawn, int rows) {
  if (rows < 1) return;
  const float rowH = (drawn.plotMax.y - drawn.plotMin.y) / static_cast<float>(rows);
  const ImVec2 a(drawn.plotMin.x - 1.0f, drawn.plotMax.y - rowH - 1.0f), z(drawn.plotMax.x + 1.0f, drawn.plotMax.y + 1.0f);
  ImGui::GetWindowDrawList()->AddRect(a, z, kNewRowColor, 0.0f, 0, 2.0f);
}

// Every step so far: tokens made, cache bytes after it, its FLOPs and a full recompute's.
void drawStepTable(const KvCacheLesson& r) {
  const ImGuiTableFlags flags = ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit |
                                ImGuiTableFlags_ScrollY;
  const auto& steps = r.session.result.steps;
  const float height = std::min(static_cast<float>(steps.size() + 1), 7.0f) * ImGui::GetFrameHeightWithSpacing();
  if (!ImGui::BeginTable("steps", 5, flags, ImVec2(0, height))) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn("step");
  ImGui::TableSetupColumn("tokens made");
  ImGui::TableSetupColumn("cache after it");
  ImGui::TableSetupColumn("FLOPs with the cache");
  ImGui::TableSetupColumn("FLOPs recomputing all");
  ImGui::TableHeadersRow();
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const DecodeStep& s = steps[i];
    ImGui::TableNextRow();
    if (i + 1 == steps.size()) ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg0, IM_COL32(255, 190, 40, 60));
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(i == 0 ? "prefill" : std::to_string(i).c_str());
    ImGui::TableNextColumn();
    ImGui::Text("%lld .. %lld", static_cast<long long>(s.first), static_cast<long long>(s.first + s.count - 1));
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(formatBytes(s.cacheBytes).c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(formatCount(static_cast<std::int64_t>(s.flops)).c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(formatCount(static_cast<std::int64_t>(s.recomputeFlops)).c_str());
  }
  if (ImGui::GetScrollMaxY() > 0) ImGui::SetScrollY(ImGui::GetScrollMaxY());  // the newest step in view
  ImGui::EndTable();
}

}  // namespace

// Over 80 lines (110) on purpose: one tab drawn top to bottom in reading order — the stepper's
// controls, the two caches and the new row's weights, the step's sentence, the check and the step
// table — every part using the trace, batch item, head and result fetched at the top.
void drawKvCacheTab(UiContext& ctx, const LessonOutcome<KvCacheLesson>& outcome, lessons::KvCache::Choices& pick) {
  lessonHeader(ctx, "KV-cache decoding, step by step", kvCacheLessonIntro());
  if (!rerunLessonReady<lessons::KvCache>(ctx)) return;
  const Trace& t = ctx.state.shown.trace;
  const float em = ImGui::GetFontSize();
  pick.keepInRange(t);
  ImGui::SetNextItemWidth(9 * em);
  if (dragSliderInt("prefill P", &pick.prefill, 1, std::max(1, t.tk)).changed) pick.steps = 0;  // a new prompt
  ctx.probes.recordLastItem("kv_prefill");
  ImGui::SameLine(0, em);
  const bool done = pick.prefill + pick.steps >= t.tk;
  ImGui::BeginDisabled(done);
  if (ImGui::Button("Next token")) ++pick.steps;
  ImGui::EndDisabled();
  ctx.probes.recordLastItem("kv_next");
  ImGui::SameLine();
  if (ImGui::Button("Reset")) pick.steps = 0;
  ctx.probes.recordLastItem("kv_reset");
  ImGui::SameLine(0, em);
  ImGui::TextDisabled(done ? "every token of the text is decoded" : "the next token is the next one of your text");
  if (!lessonOk(outcome)) return;
  const KvCacheLesson* r = outcome.get();
  const int variant = ctx.state.shown.lessons.of<lessons::KvCache>().variant;
  const int n = r->length();
  const int b = std::clamp(ctx.view.batch, 0, t.batch - 1);
  const int h = std::clamp(ctx.view.head, 0, r->full.heads - 1);
  const int N = kvHeadsOf(r->session.options), g = h / (r->full.heads / N), dk = r->full.dk;
  const bool rope = r->session.options.positions == AttnPositions::Rope;
  ctx.probes.recordLabel("kv_rows", "rows " + std::to_string(n) + " step " + std::to_string(r->steps));
  ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(headColor(h)), "query head %d reads K/V head %d of %d", h, g, N);
  ImGui::SameLine(0, em);
  ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(kNewRowColor), "framed: the row this step made");
  if (!t.causal) textWrappedDisabled("Decoding runs under the causal mask, whatever the mask control says.");
  const std::vector<std::string>& tokens = r->full.keyTokens[static_cast<std::size_t>(b)];
  const std::vector<std::string> made(tokens.begin(), tokens.begin() + n);
  const std::size_t cacheAt = (static_cast<std::size_t>(b) * N + g) * static_cast<std::size_t>(r->tokens) * dk;
  // Cells sized to the tables (t rows of d_k), so the new-row weights fit beside the two caches.
  const float cell = std::clamp(std::min(14.0f * em / static_cast<float>(n), 10.0f * em / static_cast<float>(dk)), 0.5f * em, 1.6f * em);
  const ImVec2 cacheSize(static_cast<float>(dk) * cell + 4.5f * em + colorbarWidth(),
                         std::max(static_cast<float>(n) * cell, 5.0f * em) + 3.0f * em);
  for (int i = 0; i < 2; ++i) {  // the K and V caches
    ImGui::PushID(i);
    if (i) ImGui::SameLine(0, em);
    ImGui::BeginGroup();
    ImGui::TextUnformatted(i == 0 ? (rope ? "K cache (after RoPE)" : "K cache") : "V cache");
    MatrixPicture m;
    m.data = (i == 0 ? r->session.result.kCache : r->session.result.vCache).ptr() + cacheAt;
    m.rows = n;
    m.cols = dk;
    m.rowAxis = "T";
    m.colAxis = "d_k";
    m.rowLabels = made;
    m.kind = DataKind::Signed;
    m.batchIndex = b;
    m.head = h;
    m.textureTag = 268435456 + 4 * variant + i;
    m.numbers = dk <= 8 && n <= 12;
    const HeatmapHover drawn = drawMatrix(ctx, "cache", m, cacheSize);
    frameLastRow(drawn, n);
    ctx.probes.recordLastItem(i == 0 ? "kv_k_cache" : "kv_v_cache");
    ImGui::EndGroup();
    ImGui::PopID();
  }
  ImGui::Text("query %d's weights against the %d cached keys, every head (the one row this step computes)", n - 1, n);
  MatrixPicture w;
  w.data = r->session.lastWeights.ptr() + static_cast<std::size_t>(b) * r->full.heads * n;
  w.rows = r->full.heads;
  w.cols = n;
  w.rowAxis = "h";
  w.colAxis = "T_k";
  for (int i = 0; i < r->full.heads; ++i) w.rowLabels.push_back("head " + std::to_string(i));
  w.colLabels = made;
  w.batchIndex = b;
  w.textureTag = 268435456 + 4 * variant + 2;
  w.numbers = n <= 10;
  const float labels = 5.5f * em + colorbarWidth();
  const float wCell = std::clamp((ImGui::GetContentRegionAvail().x - labels) / static_cast<float>(n), 0.3f * em, 1.6f * em);
  drawMatrix(ctx, "row", w,
             ImVec2(static_cast<float>(n) * wCell + labels,
                    std::clamp(static_cast<float>(r->full.heads) * wCell, 2.0f * em, 14.0f * em) + 3.0f * em));
  const std::string text = kvCacheStepText(*r);
  textWrapped(text);
  ctx.probes.recordLabel("kv_step_text", text);
  textWrappedDisabled(formatText("Check: max |decode - full causal forward| %.2g over the outputs so far, %.2g on the new "
                                 "row's weights (the full forward computes all %d x %d cells at once).",
                                 r->maxAbsOutputDiff, r->maxAbsWeightDiff, r->tokens, r->tokens));
  ctx.probes.recordLabel("kv_match", r->maxAbsOutputDiff < 1e-5 && r->maxAbsWeightDiff < 1e-5 ? "decode equals the full forward"
                                                                                                : "decode differs");
  drawStepTable(*r);
  ImGui::Spacing();
  const std::string scale = kvCacheScaleText(*r);
  textWrappedDisabled(scale);
  ctx.probes.recordLabel("kv_scale_text", scale);
}

}  // namespace mhascope::app

// The lesson's tab (core/lessons/kv_cache.hpp), for the window's UiContext.
template <class Ui>
void mhascope::lessons::KvCache::drawTab(Ui& ui, const LessonOutcome<Result>& shown, Choices& choices) {
  app::drawKvCacheTab(ui, shown, choices);
}
template void mhascope::lessons::KvCache::drawTab(app::UiContext&, const LessonOutcome<Result>&, Choices&);
