// The Params tab — where the parameters go: per-head full projections vs d_k-sized ones vs the real
// one-big-matrix layout, W_o and the biases, for the live d_model and h.
#include <imgui.h>

#include "lessons/lesson_tab.hpp"
#include "widgets/charts.hpp"
#include "widgets/colors.hpp"

namespace mhascope::app {

void drawParamsTab(UiContext& ctx, const LessonOutcome<ParameterTable>& outcome, lessons::Params::Choices& /*nothing to pick*/) {
  lessonHeader(ctx, "Where the parameters go",
               "If every head had its own full d_model-wide projections, Q/K/V would cost h times more. Each head "
               "projects to only d_k = d_model / h features instead, so h heads together need exactly one "
               "d_model x d_model matrix per Q, K and V: the number of heads does not change the parameter count.");
  if (!traceReady(ctx)) return;
  const Trace& t = ctx.state.shown.trace;
  if (!lessonOk(outcome)) return;
  const ParameterTable* p = outcome.get();
  coloredSymbol("d_model", "d_model = %d", t.dModel);
  ImGui::SameLine();
  coloredSymbol("h", "  h = %d", t.heads);
  ImGui::SameLine();
  coloredSymbol("d_k", "  d_k = %d", t.dk);
  const bool bias = ctx.state.shown.traceConfig.bias;
  struct Row {
    const char* what;
    const char* formula;
    std::int64_t value;
    bool real;
  };
  const Row rows[] = {
      {"one head's W_Q[i]", "d_model * d_k", p->oneHeadProjection, false},
      {"Q/K/V, every head full width", "3 * h * d_model^2", p->qkvFullPerHead, false},
      {"Q/K/V, d_k per head", "3 * h * d_model * d_k", p->qkvReducedPerHead, false},
      {"Q/K/V, one big matrix each", "3 * d_model^2", p->qkvReal, true},
      {"W_o", "d_model^2", p->wo, true},
      {"biases b_q, b_k, b_v, b_o", "4 * d_model", p->biases, bias},
      {"total without biases", "4 * d_model^2", p->totalWithoutBias, !bias},
      {"total with biases", "4 * d_model^2 + 4 * d_model", p->totalWithBias, bias},
  };
  if (ImGui::BeginTable("params", 3, ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit)) {
    ImGui::TableSetupColumn("what");
    ImGui::TableSetupColumn("formula");
    ImGui::TableSetupColumn("parameters", ImGuiTableColumnFlags_WidthFixed, 8.0f * ImGui::GetFontSize());
    ImGui::TableHeadersRow();
    for (const Row& r : rows) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      if (r.real) ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(kOkColor), "%s", r.what);
      else ImGui::TextUnformatted(r.what);
      ImGui::TableNextColumn();
      ImGui::TextDisabled("%s", r.formula);
      ImGui::TableNextColumn();
      const std::string v = formatCount(r.value);
      ImGui::SetCursorPosX(ImGui::GetCursorPosX() + ImGui::GetColumnWidth() - ImGui::CalcTextSize(v.c_str()).x);
      ImGui::TextUnformatted(v.c_str());
    }
    ImGui::EndTable();
  }
  ImGui::PushTextWrapPos(0.0f);
  ImGui::TextDisabled("Green rows are what this layer really holds (biases %s). 3*h*d_model*d_k = 3*d_model^2 because "
                      "h*d_k = d_model. %s",
                      bias ? "on" : "off", headSplitReasonText());
  ImGui::PopTextWrapPos();
  // Bars: full-width heads vs the real layout, relative to the real Q/K/V.
  const float em = ImGui::GetFontSize();
  const ImU32 real = kOkColor, what = ImGui::GetColorU32(ImGuiCol_TextDisabled);
  drawBarChart("bars", "Parameters: Q/K/V if every head were full width, against what the layer holds",
               {static_cast<double>(p->qkvFullPerHead), static_cast<double>(p->qkvReal), static_cast<double>(p->wo),
                static_cast<double>(bias ? p->biases : 0)},
               {"full-width heads", "real Q/K/V", "W_o", bias ? "biases" : "biases (off)"}, {what, real, real, real},
               ImVec2(std::min(ImGui::GetContentRegionAvail().x, 44.0f * em), 9.0f * em),
               [](double v) { return formatCount(static_cast<std::int64_t>(v)); });
}

}  // namespace mhascope::app

// The lesson's tab (core/lessons/params.hpp), for the window's UiContext.
template <class Ui>
void mhascope::lessons::Params::drawTab(Ui& ui, const LessonOutcome<Result>& shown, Choices& choices) {
  app::drawParamsTab(ui, shown, choices);
}
template void mhascope::lessons::Params::drawTab(app::UiContext&, const LessonOutcome<Result>&, Choices&);
