// The Masks tab — mask on / off: the same input with no mask and with a causal (or key padding) mask,
// their weights side by side, the difference map and how much the outputs moved.
#include <imgui.h>

#include <algorithm>
#include <cmath>

#include "widgets/drag_slider.hpp"
#include "lessons/lesson_tab.hpp"
#include "widgets/colors.hpp"
#include "widgets/wrapped_text.hpp"

namespace mhascope::app {

// Over 80 lines (86) on purpose: one tab drawn top to bottom in reading order — the mask choice, the
// three maps (no mask, mask, difference) and their numbers — every part using the trace, batch item,
// sizes and result fetched at the top.
void drawMasksTab(UiContext& ctx, const LessonOutcome<MaskComparison>& outcome, lessons::Masks::Choices& pick) {
  lessonHeader(ctx, "Mask on / off", maskLessonIntro());
  if (!rerunLessonReady<lessons::Masks>(ctx)) return;
  const Trace& t = ctx.state.shown.trace;
  const float em = ImGui::GetFontSize();
  ImGui::RadioButton("causal", &pick.kind, 0);
  ImGui::SameLine();
  ImGui::RadioButton("key padding", &pick.kind, 1);
  if (pick.kind == 1) {
    ImGui::SameLine(0, em);
    ImGui::SetNextItemWidth(8 * em);
    pick.padKeys = std::clamp(pick.padKeys, 0, t.tk);
    dragSliderInt("padded keys (0 = T_k / 3)", &pick.padKeys, 0, t.tk);
  }
  // The result of the choices above, or of the previous ones for the frame until the
  // scheduler has recomputed it.
  if (!lessonOk(outcome)) return;
  const MaskComparison* r = outcome.get();
  const int variant = ctx.state.shown.lessons.of<lessons::Masks>().variant;
  const int b = std::clamp(ctx.view.batch, 0, t.batch - 1);
  const int h = std::clamp(ctx.view.head, 0, t.heads - 1);
  ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(headColor(h)), "head %d (pick it in the Heatmap tab)", h);
  ImGui::SameLine(0, em);
  ImGui::Text("mean |difference| of the outputs: %.4g   (max %.4g)   blocked cells per head: %d", r->meanAbsOutputDiff,
              r->maxAbsOutputDiff, r->blockedCells);
  const std::size_t off = (static_cast<std::size_t>(b) * static_cast<std::size_t>(t.heads) + static_cast<std::size_t>(h)) *
                          static_cast<std::size_t>(t.tq) * static_cast<std::size_t>(t.tk);
  // The two weight maps share the 0..1 scale: one colour bar for both (on the second), one for
  // the difference. Each map also needs room for its row labels (~4 em) beside the cells.
  const float labelsW = 4.5f * em;
  const float side = std::clamp((ImGui::GetContentRegionAvail().x - 2.0f * colorbarWidth() - 3.0f * (labelsW + em)) / 3.0f,
                                8.0f * em, 26.0f * em);
  struct Pic {
    const char* title;
    const Trace* trace;
    const float* data;
    DataKind kind;
  };
  const Pic pics[] = {{"no mask", &r->unmasked, r->unmasked.tensor(StageId::Weights).ptr() + off, DataKind::Probability},
                      {r->kind == MaskLesson::Causal ? "causal mask" : "key padding", &r->masked,
                       r->masked.tensor(StageId::Weights).ptr() + off, DataKind::Probability},
                      {"difference (masked - none), this head", nullptr, r->weightDiff.ptr() + off, DataKind::Signed}};
  // What each number covers: the text's maximum is over every head and batch item; the
  // difference picture's colour bar spans this head's own largest |difference|.
  float headMax = 0.0f;
  for (std::size_t i = 0; i < static_cast<std::size_t>(t.tq) * static_cast<std::size_t>(t.tk); ++i) {
    headMax = std::max(headMax, std::abs(pics[2].data[i]));
  }
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
    m.kind = pics[i].kind;
    m.trace = pics[i].trace;
    m.batchIndex = b;
    m.head = h;
    m.textureTag = 50 + i + 3 * variant;
    m.colorbar = i > 0;
    m.numbers = t.tk <= 10;
    drawMatrix(ctx, "m", m, ImVec2(side + labelsW + (m.colorbar ? colorbarWidth() : 0.0f), side + 4.5f * em));
    ImGui::EndGroup();
    ImGui::PopID();
  }
  textWrapped(formatText("max |weight difference|: %.3g over all %d heads and %d batch item(s); %.3g in head %d, batch "
                         "item %d (the difference colour bar spans ±this head's value)",
                         r->maxAbsWeightDiff, t.heads, t.batch, static_cast<double>(headMax), h, b));
  const std::string note = maskComparisonText(*r);
  textWrappedDisabled("Blue cells lost weight: only blocked cells can. Red cells gained it: each row's weight is now "
                      "shared among fewer keys, so an allowed key can only gain. " + note);
  ctx.probes.recordLabel("mask_note", note);
}

}  // namespace mhascope::app

// The lesson's tab (core/lessons/masks.hpp), for the window's UiContext.
template <class Ui>
void mhascope::lessons::Masks::drawTab(Ui& ui, const LessonOutcome<Result>& shown, Choices& choices) {
  app::drawMasksTab(ui, shown, choices);
}
template void mhascope::lessons::Masks::drawTab(app::UiContext&, const LessonOutcome<Result>&, Choices&);
