// The Split tab — one big matrix = h small ones: W_Q[i] is the column block i*d_k .. (i+1)*d_k - 1 of W_q;
// the per-head loop and the vectorized pass agree stage by stage, and skipping the transpose
// builds heads from the wrong numbers.
#include <imgui.h>

#include <algorithm>
#include <string>

#include "widgets/drag_slider.hpp"
#include "lessons/lesson_tab.hpp"
#include "widgets/colors.hpp"

namespace mhascope::app {

// Over 80 lines (108) on purpose: one tab drawn top to bottom in reading order — W_q with its head
// blocks, then the loop-vs-vectorized table, then the skipped-transpose sources — every part using the
// trace, batch item, sizes and result fetched at the top.
void drawSplitTab(UiContext& ctx, const LessonOutcome<LoopVsVectorized>& outcome, lessons::Split::Choices& pick) {
  lessonHeader(ctx, "One big matrix = h small ones",
               "Head i's projection W_Q[i] (d_model x d_k) is just the column block i*d_k .. (i+1)*d_k - 1 of W_q "
               "(heads i = 0 .. h-1). So one matmul X W_q, a view and a transpose compute every head at once, and "
               "give exactly what a loop over heads (slice, attend, collect, concatenate) gives.");
  if (!rerunLessonReady<lessons::Split>(ctx)) return;
  const Trace& t = ctx.state.shown.trace;
  if (!lessonOk(outcome)) return;
  const LoopVsVectorized* r = outcome.get();
  const float em = ImGui::GetFontSize();
  pick.head = std::clamp(pick.head, 0, t.heads - 1);

  // Left: W_q with its head blocks; right: the comparison table (below it when the window is
  // too narrow for both, so the table is never cut).
  const ImGuiStyle& style = ImGui::GetStyle();
  const float tableW = ImGui::CalcTextSize("Output projection").x + ImGui::CalcTextSize("loop vs vectorized").x +
                       ImGui::CalcTextSize("transpose skipped").x + 6.0f * style.CellPadding.x + 2.0f * em;
  const float avail = ImGui::GetContentRegionAvail().x;
  const bool sideBySide = avail >= tableW + 16.0f * em;
  const float side = std::min(sideBySide ? avail - tableW - em : avail, 26.0f * em);
  ImGui::BeginGroup();
  ImGui::SetNextItemWidth(8 * em);
  dragSliderInt("head i", &pick.head, 0, t.heads - 1);  // 0-based, as everywhere
  // The title names the whole matrix; head i's block is framed in its colour inside it.
  ImGui::Text("W_q (%d x %d), the learned matrix;", t.dModel, t.dModel);
  ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(headColor(pick.head)),
                     "framed: W_Q[%d] = W_q[:, %d:%d]  (%d x %d)", pick.head, pick.head * t.dk,
                     (pick.head + 1) * t.dk, t.dModel, t.dk);
  MatrixPicture w;
  w.data = t.weight(WeightId::Wq).data;  // the numbers the shown pass used
  w.rows = w.cols = t.dModel;
  w.rowAxis = "d_model";
  w.colAxis = "d_model";
  w.kind = DataKind::Signed;
  w.heads = t.heads;
  w.dk = t.dk;
  w.textureTag = 1;
  w.numbers = t.dModel <= 12;
  const HeatmapHover hov = drawMatrix(ctx, "wq", w, ImVec2(side, side * 0.9f));
  {
    const float cellW = (hov.plotMax.x - hov.plotMin.x) / static_cast<float>(t.dModel);
    const float x0 = hov.plotMin.x + cellW * static_cast<float>(pick.head * t.dk);
    ImGui::GetWindowDrawList()->AddRect(ImVec2(x0 - 1, hov.plotMin.y - 1),
                                        ImVec2(x0 + cellW * static_cast<float>(t.dk) + 1, hov.plotMax.y + 1),
                                        headColor(pick.head), 0, 0, 3.0f);
  }
  ImGui::TextDisabled("W_q, input feature (rows) -> output feature j (columns);\nthe coloured strip: column j goes to head floor(j / d_k).");
  ImGui::EndGroup();
  if (sideBySide) ImGui::SameLine(0, em);
  ImGui::BeginGroup();
  ImGui::TextUnformatted("max |difference| per stage");
  if (ImGui::BeginTable("diffs", 3, ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit)) {
    ImGui::TableSetupColumn("stage");
    ImGui::TableSetupColumn("loop vs vectorized");
    ImGui::TableSetupColumn("transpose skipped");
    ImGui::TableHeadersRow();
    for (std::size_t i = 0; i < r->loopVsVectorized.size(); ++i) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(stageInfo(r->loopVsVectorized[i].stage).title);
      ImGui::TableNextColumn();
      const double a = r->loopVsVectorized[i].maxAbsDiff, b = r->skippedVsCorrect[i].maxAbsDiff;
      ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(a < 1e-4 ? kOkColor : kErrorColor), "%.2g", a);
      ImGui::TableNextColumn();
      ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(b < 1e-4 ? kOkColor : kErrorColor), "%.3g", b);
    }
    ImGui::EndTable();
  }
  ImGui::PushTextWrapPos(ImGui::GetCursorPosX() + tableW);
  ImGui::TextDisabled("~1e-7 is float rounding: the two formulations do the same arithmetic in a different order.");
  // The variants in the loop's own words: what it does besides slicing W_q, W_k, W_v.
  std::string variants;
  if (r->kvHeads != r->heads) {
    const int group = r->heads / std::max(1, r->kvHeads);
    variants += "K and V are cut into N = " + std::to_string(r->kvHeads) + " heads (W_k, W_v are d_model × N·d_k); "
                "query head i reads K/V head i / " + std::to_string(group) + ". ";
  }
  if (r->positions == AttnPositions::Rope) variants += "RoPE turns each head's rows after the split (Rotate rows). ";
  if (r->positions == AttnPositions::Alibi) variants += "Each head adds its ALiBi bias to the scaled scores. ";
  ctx.probes.recordLabel("split_variants", variants);
  if (!variants.empty()) ImGui::TextWrapped("The loop here: %s", variants.c_str());
  ImGui::PopTextWrapPos();
  ImGui::EndGroup();

  ImGui::Separator();
  ImGui::TextUnformatted("Transpose skipped: view(B, h, T, d_k) instead of view(B, T, h, d_k).transpose(1, 2)");
  ImGui::PushTextWrapPos(0.0f);
  if (t.heads == 1 || t.tq == 1) {
    ImGui::TextDisabled("With h = 1 or T = 1 the transpose moves nothing, so the mistake is invisible here. Pick h > 1.");
  } else {
    ImGui::Text("Where head %d's Q numbers came from (token, feature of q_proj) — %d of %d entries in the whole Q come "
                "from another token than the row they sit in (red):",
                pick.head, r->skippedWrongToken, t.heads * t.tq * t.dk);
  }
  ImGui::PopTextWrapPos();
  const int shownRows = std::min(t.tq, 12), shownCols = std::min(t.dk, 8);
  if (ImGui::BeginTable("sources", shownCols + 1, ImGuiTableFlags_Borders | ImGuiTableFlags_SizingFixedFit)) {
    ImGui::TableSetupColumn("row (query)");
    for (int c = 0; c < shownCols; ++c) ImGui::TableSetupColumn(("col " + std::to_string(c)).c_str());
    ImGui::TableHeadersRow();
    for (int row = 0; row < shownRows; ++row) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::Text("%d '%s'", row, t.queryTokens[0][static_cast<std::size_t>(row)].c_str());
      for (int c = 0; c < shownCols; ++c) {
        ImGui::TableNextColumn();
        const FeatureSource src = r->skippedSource(pick.head, row, c);
        const bool wrong = src.token != row;
        ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(wrong ? kErrorColor : kOkColor), "t%d f%d", src.token,
                           src.feature);
      }
    }
    ImGui::EndTable();
  }
  ImGui::TextDisabled("Correct: row t, col c of head %d is (t, f%d+c). Output max |difference| with the mistake: %.3g",
                      pick.head, pick.head * t.dk, r->skippedOutputMaxAbsDiff);
}

}  // namespace mhascope::app

// The lesson's tab (core/lessons/split.hpp), for the window's UiContext.
template <class Ui>
void mhascope::lessons::Split::drawTab(Ui& ui, const LessonOutcome<Result>& shown, Choices& choices) {
  app::drawSplitTab(ui, shown, choices);
}
template void mhascope::lessons::Split::drawTab(app::UiContext&, const LessonOutcome<Result>&, Choices&);
