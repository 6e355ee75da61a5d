// The Params tab — where the parameters go: per-head full projections vs d_k-sized ones vs the real
// one-big-matrix layout, W_o and the biases, for the live d_model and h.
#include <imgui.h>

#include "lessons/lesson_tab.hpp"
#include "widgets/charts.hpp"
#include "widgets/colors.hpp"
#include "widgets/wrapped_text.hpp"

namespace mhascope::app {

void drawParamsTab(UiContext& ctx, const LessonOutcome<ParamsLesson>& outcome, lessons::Params::Choices& /*nothing to pick*/) {
  lessonHeader(ctx, "Where the parameters go", lessons::Params::intro());
  if (!traceReady(ctx)) return;
  const Trace& t = ctx.state.shown.trace;
  if (!lessonOk(outcome)) return;
  const ParameterTable* p = &outcome.get()->table;
  const LayerCounts& c = p->counts;
  coloredSymbol("d_model", "d_model = %d", t.dModel);
  ImGui::SameLine();
  coloredSymbol("h", "  h = %d", t.heads);
  ImGui::SameLine();
  coloredSymbol("h", "  N = %lld", static_cast<long long>(c.kvHeads));
  ImGui::SameLine();
  coloredSymbol("d_k", "  d_k = %d", t.dk);
  const bool bias = c.bias, mha = c.kvHeads == c.heads;
  LayerCounts weightsOnly = c, withBiases = c;
  weightsOnly.bias = false;
  withBiases.bias = true;
  const std::string noBiasFormula = parameterFormula(weightsOnly), biasFormula = parameterFormula(withBiases);
  struct Row {
    const char* what;
    const char* formula;
    std::int64_t value;
    bool real;
  };
  const Row rows[] = {
      {"one head's block of W_q", "d_model * d_k", p->oneHeadProjection, false},
      {"Q/K/V, every head full width", mha ? "3 * h * d_model^2" : "(h + 2*N) * d_model^2", p->qkvFullPerHead, false},
      {"Q/K/V, d_k per head", mha ? "3 * h * d_model * d_k" : "(h + 2*N) * d_model * d_k", p->qkvReducedPerHead, false},
      {"W_q", "d_model * h*d_k = d_model^2", c.wq, true},
      {"W_k", mha ? "d_model * N*d_k = d_model^2" : "d_model * N*d_k", c.wk, true},
      {"W_v", mha ? "d_model * N*d_k = d_model^2" : "d_model * N*d_k", c.wv, true},
      {"W_o", "h*d_k * d_model = d_model^2", c.wo, true},
      {"biases b_q, b_k, b_v, b_o", mha ? "4 * d_model" : "2 * d_model + 2 * N*d_k", c.biases(), bias},
      {"total without biases", noBiasFormula.c_str(), c.weights(), !bias},
      {"total with biases", biasFormula.c_str(), c.withBias(), bias},
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
  ImGui::TextDisabled("Green rows are what this layer really holds (biases %s). %s because h*d_k = d_model. %s",
                      bias ? "on" : "off",
                      mha ? "3*h*d_model*d_k = 3*d_model^2" : "(h + 2*N)*d_model*d_k = W_q + W_k + W_v",
                      headSplitReasonText());
  ImGui::PopTextWrapPos();
  textWrapped(outcome.get()->heads);
  ctx.probes.recordLabel("params_heads", outcome.get()->heads);
  ctx.probes.recordLabel("params_total", formatCount(c.params()));
  // Bars: full-width heads vs the real layout, relative to the real Q/K/V.
  const float em = ImGui::GetFontSize();
  const ImU32 real = kOkColor, what = ImGui::GetColorU32(ImGuiCol_TextDisabled);
  drawBarChart("bars", "Parameters: Q/K/V if every head were full width, against what the layer holds",
               {static_cast<double>(p->qkvFullPerHead), static_cast<double>(p->qkvReal), static_cast<double>(c.wo),
                static_cast<double>(bias ? c.biases() : 0)},
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
