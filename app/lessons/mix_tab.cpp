// The Mix tab — mix, then split: one feature j of q = x W_q + b_q is a sum over ALL d_model input
// features; only afterwards does the split hand column j to head floor(j / d_k).
#include <imgui.h>

#include <algorithm>
#include <vector>

#include "widgets/drag_slider.hpp"
#include "lessons/lesson_tab.hpp"
#include "widgets/charts.hpp"
#include "widgets/colors.hpp"

namespace mhascope::app {

// Over 80 lines (87) on purpose: one tab drawn top to bottom in reading order — the token/dimension
// pickers, the column strip, the bar chart and the terms table — every part using the trace, batch
// item, sizes and result fetched at the top.
void drawMixTab(UiContext& ctx, const LessonOutcome<MixThenSplit>& outcome, lessons::Mix::Choices& pick) {
  lessonHeader(ctx, "Mix, then split",
               "q[t, j] = sum over f of x[t, f] * W_q[f, j], plus b_q[j]: every projected feature already mixes all "
               "d_model input features. The split into heads comes after and only decides which head owns column j "
               "of Q (head floor(j / d_k), counting from 0). Heads do not see disjoint pieces of the input token.");
  if (!traceReady(ctx)) return;
  const Trace& t = ctx.state.shown.trace;
  const float em = ImGui::GetFontSize();
  const int b = std::clamp(ctx.view.batch, 0, t.batch - 1);
  pick.token = std::clamp(pick.token, 0, t.tq - 1);
  pick.dim = std::clamp(pick.dim, 0, t.dModel - 1);
  ImGui::SetNextItemWidth(12 * em);
  const std::string tokenLabel = std::to_string(pick.token) + " '" + t.queryTokens[static_cast<std::size_t>(b)][static_cast<std::size_t>(pick.token)] + "'";
  if (ImGui::BeginCombo("token t", tokenLabel.c_str())) {
    for (int i = 0; i < t.tq; ++i) {
      ImGui::PushID(i);
      const std::string l = std::to_string(i) + " '" + t.queryTokens[static_cast<std::size_t>(b)][static_cast<std::size_t>(i)] + "'";
      if (ImGui::Selectable(l.c_str(), i == pick.token)) pick.token = i;
      ImGui::PopID();
    }
    ImGui::EndCombo();
  }
  ImGui::SameLine(0, em);
  ImGui::SetNextItemWidth(12 * em);
  dragSliderInt("output dimension j", &pick.dim, 0, t.dModel - 1);
  if (!lessonOk(outcome)) return;
  const MixThenSplit* r = outcome.get();
  // The d_model columns as a strip coloured by owning head, j marked.
  {
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const ImVec2 p = ImGui::GetCursorScreenPos();
    const float w = std::min(ImGui::GetContentRegionAvail().x, 40.0f * em) / static_cast<float>(t.dModel);
    for (int j = 0; j < t.dModel; ++j) {
      const ImVec2 a(p.x + static_cast<float>(j) * w, p.y), c(a.x + w - 1, p.y + em);
      dl->AddRectFilled(a, c, headColor(j / t.dk, j == r->outputDim ? 1.0f : 0.35f));
      if (j == r->outputDim) dl->AddRect(ImVec2(a.x - 1, a.y - 1), ImVec2(c.x + 1, c.y + 1), IM_COL32(255, 255, 255, 255));
    }
    ImGui::Dummy(ImVec2(w * static_cast<float>(t.dModel), em * 1.2f));
  }
  ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(headColor(r->ownerHead)),
                     "column j = %d belongs to head floor(%d / %d) = %d (head i owns columns i·d_k … (i+1)·d_k − 1), "
                     "where it is feature %d of d_k", r->outputDim, r->outputDim, t.dk, r->ownerHead, r->columnInHead);

  std::vector<double> products;
  std::vector<std::string> featureLabels;
  for (const auto& term : r->terms) {
    products.push_back(term.product);
    featureLabels.push_back(std::to_string(term.feature));
  }
  drawBarChart("terms", "x[t, f] * W_q[f, j] for every input feature f (bars labelled by f)", products, featureLabels,
               {}, ImVec2(std::min(ImGui::GetContentRegionAvail().x, 44.0f * em), 8.0f * em),
               [](double v) { return formatNumber(v, 2); });
  const float tableH = std::min(ImGui::GetContentRegionAvail().y - 5.0f * em, (static_cast<float>(r->terms.size()) + 1.5f) * ImGui::GetFrameHeight());
  if (ImGui::BeginTable("terms", 4, ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY | ImGuiTableFlags_SizingFixedFit,
                        ImVec2(0, std::max(tableH, 6.0f * em)))) {
    ImGui::TableSetupScrollFreeze(0, 1);
    ImGui::TableSetupColumn("f");
    ImGui::TableSetupColumn("x[t, f]");
    ImGui::TableSetupColumn("W_q[f, j]");
    ImGui::TableSetupColumn("product");
    ImGui::TableHeadersRow();
    ImGuiListClipper clip;
    clip.Begin(static_cast<int>(r->terms.size()));
    while (clip.Step()) {
      for (int i = clip.DisplayStart; i < clip.DisplayEnd; ++i) {
        const MixTerm& m = r->terms[static_cast<std::size_t>(i)];
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::Text("%d", m.feature);
        ImGui::TableNextColumn();
        ImGui::Text("%+.4f", static_cast<double>(m.x));
        ImGui::TableNextColumn();
        ImGui::Text("%+.4f", static_cast<double>(m.w));
        ImGui::TableNextColumn();
        ImGui::Text("%+.5f", m.product);
      }
    }
    ImGui::EndTable();
  }
  ImGui::Text("sum of %d terms = %+.6f", static_cast<int>(r->terms.size()), r->sumOfTerms);
  ImGui::Text("+ b_q[j] = %+.6f   ->   %+.6f", static_cast<double>(r->bias), r->total);
  ImGui::Text("recorded q_proj[%d, %d] = %+.6f, the same number as q_heads[head %d][%d, %d] = %+.6f", r->token,
              r->outputDim, static_cast<double>(r->recorded), r->ownerHead, r->token, r->columnInHead,
              static_cast<double>(r->recordedInHead));
}

}  // namespace mhascope::app

// The lesson's tab (core/lessons/mix.hpp), for the window's UiContext.
template <class Ui>
void mhascope::lessons::Mix::drawTab(Ui& ui, const LessonOutcome<Result>& shown, Choices& choices) {
  app::drawMixTab(ui, shown, choices);
}
template void mhascope::lessons::Mix::drawTab(app::UiContext&, const LessonOutcome<Result>&, Choices&);
