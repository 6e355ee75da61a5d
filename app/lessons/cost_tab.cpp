// The Cost tab — cost counters: the live parameters, FLOPs (projections and attention apart) and
// score memory, and how each grows while one of T, d_model, h sweeps (PlotLines, no implot).
#include <imgui.h>

#include <algorithm>
#include <vector>

#include "widgets/drag_slider.hpp"
#include "lessons/lesson_tab.hpp"
#include "widgets/charts.hpp"
#include "widgets/colors.hpp"
#include "widgets/wrapped_text.hpp"

namespace mhascope::app {

void drawCostTab(UiContext& ctx, const LessonOutcome<CostCounters>& outcome, lessons::Cost::Choices& pick) {
  lessonHeader(ctx, "Cost counters", costLessonIntro());
  if (!traceReady(ctx)) return;
  const Trace& t = ctx.state.shown.trace;
  const float em = ImGui::GetFontSize();
  const CostCounters* q = outcome.get();
  if (!q) return;  // not before the first trace: the counters themselves cannot fail
  const CostSizes& now = q->sizes;
  const CostPoint& c = q->now;
  if (ImGui::BeginTable("now", 2, ImGuiTableFlags_Borders | ImGuiTableFlags_SizingFixedFit)) {
    auto row = [](const char* name, const std::string& v) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(name);
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(v.c_str());
    };
    row(now.bias ? "parameters (with biases)" : "parameters (no biases)", formatCount(c.params));
    row("FLOPs, projections (Q, K, V, W_o)", formatNumber(c.projectionFlops, 4));
    row("FLOPs, attention matmuls (Q K^T, A V)", formatNumber(c.attentionFlops, 4));
    row("scores B * h * T_q * T_k (each scaled, masked, exp'd, normalised)", formatCount(c.scoreCount));
    row("score memory, one (B, h, T_q, T_k) copy", formatBytes(c.scoreBytes));
    row("whole recorded trace", formatBytes(c.traceBytes));
    ImGui::EndTable();
  }
  textWrapped(q->heads);
  ctx.probes.recordLabel("cost_heads", q->heads);
  textWrapped(costCrossoverText(now));
  ImGui::TextUnformatted("sweep:");
  const char* names[] = {"T", "d_model", "h"};
  for (int i = 0; i < 3; ++i) {
    ImGui::SameLine();
    ImGui::PushStyleColor(ImGuiCol_Text, symbolColor(names[i]));
    ImGui::RadioButton(names[i], &pick.variable, i);
    ImGui::PopStyleColor();
  }
  const auto var = static_cast<SweepVariable>(pick.variable);
  int& to = pick.ends[static_cast<std::size_t>(pick.variable)];
  ImGui::SameLine(0, em);
  ImGui::SetNextItemWidth(14 * em);
  const int maxTo = var == SweepVariable::Heads ? std::max(1, t.dModel) : 4096;
  to = std::clamp(to, 2, std::max(2, maxTo));
  dragSliderInt("sweep up to", &to, 2, std::max(2, maxTo), "%d", ImGuiSliderFlags_Logarithmic);
  // The sweep the scheduler computed (after a change above, the previous one for a frame).
  if (!lessonOk(q->sweep)) return;
  const std::vector<CostPoint>* pts = q->sweep.get();
  std::vector<double> xs, params, proj, attn, scores;
  for (const CostPoint& p : *pts) {
    xs.push_back(static_cast<double>(p.value));
    params.push_back(static_cast<double>(p.params));
    proj.push_back(p.projectionFlops);
    attn.push_back(p.attentionFlops);
    scores.push_back(p.scoreBytes);
  }
  const std::string range = std::string(names[pick.variable]) + " = " + std::to_string(pts->front().value) + " .. " +
                            std::to_string(pts->back().value) + " (others as now)";
  ImGui::TextDisabled("%s, %zu points; each plot from 0 to its largest value", range.c_str(), pts->size());
  // Two plots a row, each with its axes and tick values (x: the swept variable).
  const float w = std::min(0.5f * ImGui::GetContentRegionAvail().x - em, 30.0f * em);
  const float ph = std::max(6.0f * em, 0.5f * (ImGui::GetContentRegionAvail().y - 2.0f * em) - 2.0f * ImGui::GetTextLineHeightWithSpacing());
  const char* x = names[pick.variable];
  const auto number = [](double v) { return formatNumber(v, 3); };
  drawLinePlot("p", "parameters", xs, params, x, ImVec2(w, ph), [](double v) { return formatCount(static_cast<std::int64_t>(v)); });
  ImGui::SameLine(0, 2.0f * em);
  ImGui::BeginGroup();
  drawLinePlot("f", "projection FLOPs", xs, proj, x, ImVec2(w, ph), number);
  ImGui::EndGroup();
  drawLinePlot("a", "attention FLOPs", xs, attn, x, ImVec2(w, ph), number);
  ImGui::SameLine(0, 2.0f * em);
  ImGui::BeginGroup();
  drawLinePlot("s", "score memory", xs, scores, x, ImVec2(w, ph), [](double v) { return formatBytes(v); });
  ImGui::EndGroup();
}

}  // namespace mhascope::app

// The lesson's tab (core/lessons/cost.hpp), for the window's UiContext.
template <class Ui>
void mhascope::lessons::Cost::drawTab(Ui& ui, const LessonOutcome<Result>& shown, Choices& choices) {
  app::drawCostTab(ui, shown, choices);
}
template void mhascope::lessons::Cost::drawTab(app::UiContext&, const LessonOutcome<Result>&, Choices&);
