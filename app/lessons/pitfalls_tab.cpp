// The Pitfalls tab — pitfall lab: pick a classic mistake, see its weights next to the right ones, the
// difference map and the automatic checks (row sums, entropy, max |difference|, NaN / Inf).
#include <imgui.h>

#include <algorithm>
#include <cmath>

#include "lessons/lesson_tab.hpp"
#include "widgets/colors.hpp"
#include "widgets/wrapped_text.hpp"

namespace mhascope::app {

// Over 80 lines (106) on purpose: one tab drawn top to bottom in reading order — the pitfall choice,
// its explanation, the checks table and the maps — every part using the trace, batch item, sizes and
// result fetched at the top.
void drawPitfallsTab(UiContext& ctx, const LessonOutcome<PitfallResult>& outcome, lessons::Pitfalls::Choices& pick) {
  lessonHeader(ctx, "Pitfall lab",
               "Each toggle runs a pipeline with one classic mistake next to the correct one. The checks say what "
               "broke: rows that no longer sum to 1, attention that got flatter (higher entropy) or sharper (lower), "
               "outputs that moved, or NaN/Inf.");
  if (!rerunLessonReady<lessons::Pitfalls>(ctx)) return;
  const Trace& t = ctx.state.shown.trace;
  const float em = ImGui::GetFontSize();
  for (int i = 0; i < kPitfallCount; ++i) {
    if (i % 4) ImGui::SameLine();
    ImGui::RadioButton(pitfallTitle(static_cast<Pitfall>(i)), &pick.pitfall, i);
    ctx.probes.recordLastItem("pitfall_" + std::to_string(i));
  }
  // The result of the chosen pitfall, or of the previous one for the frame until the scheduler
  // has recomputed it: everything below follows the result's own pitfall.
  if (!lessonOk(outcome)) return;
  const PitfallResult* r = outcome.get();
  const Pitfall p = r->pitfall;
  textWrapped(pitfallExplanation(p));
  if (p == Pitfall::NoScaling || p == Pitfall::ScaleBySqrtDModel) {
    textWrappedDisabled(unscaledLogitsText(ScaleKind::SqrtDk, t.dModel, t.dk));
  }
  if (r->maskAdded) textWrappedDisabled("(This configuration has no mask, so both pipelines here use a causal one.)");
  if (p == Pitfall::NoMaxSubtraction)
    textWrappedDisabled(formatText("(Scores multiplied by %.3g here so the largest logit is 120: large logits are when it breaks.)",
                                   static_cast<double>(r->logitGain)));

  const int b = std::clamp(ctx.view.batch, 0, t.batch - 1);
  const int h = std::clamp(ctx.view.head, 0, t.heads - 1);
  const Trace& c = r->correct;
  const std::size_t off = (static_cast<std::size_t>(b) * static_cast<std::size_t>(c.heads) + static_cast<std::size_t>(h)) *
                          static_cast<std::size_t>(c.tq) * static_cast<std::size_t>(c.tk);
  // The two weight maps share the 0..1 scale: one colour bar for both (on the second), one for
  // the difference. Each map also needs room for its row labels (~4 em) beside the cells.
  const float labelsW = 4.5f * em;
  const float side = std::clamp((ImGui::GetContentRegionAvail().x - 2.0f * colorbarWidth() - 3.0f * (labelsW + em)) / 3.0f,
                                8.0f * em, 22.0f * em);
  struct Pic {
    const char* title;
    const float* data;
    DataKind kind;
  };
  const Pic pics[] = {{"correct weights", c.tensor(StageId::Weights).ptr() + off, DataKind::Probability},
                      {"with the mistake", r->weights.ptr() + off, DataKind::Probability},
                      {"difference", r->weightDiff.ptr() + off, DataKind::Signed}};
  for (int i = 0; i < 3; ++i) {
    ImGui::PushID(i);
    if (i) ImGui::SameLine(0, em);
    ImGui::BeginGroup();
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(i == 2 ? ImGui::GetColorU32(ImGuiCol_Text) : headColor(h)),
                       "%s, head %d", pics[i].title, h);
    MatrixPicture m;
    m.data = pics[i].data;
    m.rows = c.tq;
    m.cols = c.tk;
    m.rowLabels = c.queryTokens[static_cast<std::size_t>(b)];
    m.colLabels = c.keyTokens[static_cast<std::size_t>(b)];
    m.kind = pics[i].kind;
    m.trace = i < 2 ? &c : nullptr;  // the same mask: blocked cells drawn alike (where it took effect)
    m.batchIndex = b;
    m.head = h;
    m.textureTag = 100 + 3 * static_cast<int>(p) + i;
    m.colorbar = i > 0;
    m.numbers = c.tk <= 10;
    drawMatrix(ctx, "m", m, ImVec2(side + labelsW + (m.colorbar ? colorbarWidth() : 0.0f), side + 4.5f * em));
    ImGui::EndGroup();
    ImGui::PopID();
  }

  if (ImGui::BeginTable("checks", 3, ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit)) {
    ImGui::TableSetupColumn("check (all heads, all items)");
    ImGui::TableSetupColumn("correct");
    ImGui::TableSetupColumn("with the mistake");
    ImGui::TableHeadersRow();
    const WeightChecks& a = r->correctChecks;
    const WeightChecks& w = r->pitfallChecks;
    auto row = [](const char* name, const std::string& x, const std::string& y, bool bad) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(name);
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(x.c_str());
      ImGui::TableNextColumn();
      ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(bad ? kErrorColor : kOkColor), "%s", y.c_str());
    };
    row("rows not summing to 1", std::to_string(a.rowsNotSummingToOne), std::to_string(w.rowsNotSummingToOne),
        w.rowsNotSummingToOne > 0);
    row("max |row sum - 1|", formatNumber(a.maxRowSumError, 3), formatNumber(w.maxRowSumError, 3), w.maxRowSumError > 1e-3);
    row("mean row entropy (nats)", formatNumber(a.meanRowEntropy), formatNumber(w.meanRowEntropy),
        std::abs(w.meanRowEntropy - a.meanRowEntropy) > 1e-3);
    row("NaN / Inf in weights", std::to_string(a.nanCount) + " / " + std::to_string(a.infCount),
        std::to_string(w.nanCount) + " / " + std::to_string(w.infCount), w.nanCount + w.infCount > 0);
    row("max |weights difference|", "", formatNumber(r->maxAbsWeightDiff, 3), r->maxAbsWeightDiff > 1e-4);
    row("max |output difference|", "", formatNumber(r->maxAbsOutputDiff, 3), r->maxAbsOutputDiff > 1e-4);
    row("NaN / Inf in outputs", "0 / 0", std::to_string(r->outputNanCount) + " / " + std::to_string(r->outputInfCount),
        r->outputNanCount + r->outputInfCount > 0);
    ImGui::EndTable();
  }
  if (p == Pitfall::SumHeads) {
    ImGui::TextDisabled("Summing each head through its OWN rows of W_o instead reproduces the output: max |difference| %.2g.",
                        r->blockSumMaxAbsDiff);
  }
  ImGui::TextDisabled("Entropy of a uniform row over T_k = %d keys: ln %d = %.3f; of a one-hot row: 0.", c.tk, c.tk,
                      std::log(static_cast<double>(c.tk)));
}

}  // namespace mhascope::app

// The lesson's tab (core/lessons/pitfalls.hpp), for the window's UiContext.
template <class Ui>
void mhascope::lessons::Pitfalls::drawTab(Ui& ui, const LessonOutcome<Result>& shown, Choices& choices) {
  app::drawPitfallsTab(ui, shown, choices);
}
template void mhascope::lessons::Pitfalls::drawTab(app::UiContext&, const LessonOutcome<Result>&, Choices&);
