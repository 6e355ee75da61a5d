// The Quiz tab — quiz: about a dozen questions whose numbers come from the live trace; each answer
// is explained right after the try.
#include <imgui.h>

#include <algorithm>

#include "lessons/lesson_tab.hpp"
#include "widgets/colors.hpp"
#include "widgets/wrapped_text.hpp"

namespace mhascope::app {

void drawQuizTab(UiContext& ctx, const LessonOutcome<std::vector<QuizQuestion>>& outcome, lessons::Quiz::Choices& pick) {
  lessonHeader(ctx, "Quiz",
               "The numbers in these questions come from the configuration on the left: change d_model, h or the "
               "sentence and the questions change with it.");
  if (!traceReady(ctx)) return;
  if (!outcome.get()) return;
  const std::vector<QuizQuestion>& quiz = *outcome.get();  // computed with the trace
  if (pick.serial != ctx.state.shown.traceSerial) {  // a new trace asks new questions: no answers yet
    pick.serial = ctx.state.shown.traceSerial;
    pick.picked.assign(quiz.size(), -1);
  }
  int right = 0, tried = 0;
  for (std::size_t i = 0; i < quiz.size(); ++i) {
    if (pick.picked[i] < 0) continue;
    ++tried;
    right += pick.picked[i] == quiz[i].correct ? 1 : 0;
  }
  ImGui::Text("%d of %d right, %zu questions", right, tried, quiz.size());
  ImGui::SameLine();
  if (ImGui::SmallButton("start over")) std::fill(pick.picked.begin(), pick.picked.end(), -1);
  ImGui::BeginChild("questions");
  for (std::size_t i = 0; i < quiz.size(); ++i) {
    const QuizQuestion& q = quiz[i];
    ImGui::PushID(static_cast<int>(i));
    textWrapped(std::to_string(i + 1) + ". " + q.question);
    int& picked = pick.picked[i];
    for (std::size_t c = 0; c < q.choices.size(); ++c) {
      ImGui::PushID(static_cast<int>(c));
      const bool isPicked = picked == static_cast<int>(c);
      const bool isRight = static_cast<int>(c) == q.correct;
      // Decided once: the click below changes `picked`, and the Pop must match the Push.
      const bool coloured = picked >= 0 && (isPicked || isRight);
      if (coloured) ImGui::PushStyleColor(ImGuiCol_Text, isRight ? kOkColor : kErrorColor);
      // The button and its words, wrapped at spaces beside it (a radio button's own label never
      // wraps: a long choice ran off the page); a click on either picks the choice.
      ImGui::BeginGroup();
      bool clicked = ImGui::RadioButton("##choice", isPicked);
      ImGui::SameLine(0.0f, ImGui::GetStyle().ItemInnerSpacing.x);
      ImGui::AlignTextToFramePadding();
      textWrapped(q.choices[c]);
      clicked |= ImGui::IsItemClicked();
      ImGui::EndGroup();
      if (clicked) picked = static_cast<int>(c);
      if (coloured) ImGui::PopStyleColor();
      ctx.probes.recordLastItem("quiz_" + std::to_string(i + 1) + "_" + std::to_string(c + 1));
      if (isRight) ctx.probes.recordLastItem("quiz_" + std::to_string(i + 1) + "_correct");
      ImGui::PopID();
    }
    if (picked >= 0) {
      ImGui::Indent();
      ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(picked == q.correct ? kOkColor : kErrorColor), "%s",
                         picked == q.correct ? "Right." : "Not quite.");
      ImGui::SameLine();
      textWrappedDisabled(q.explanation);
      ImGui::Unindent();
    }
    ImGui::Spacing();
    ImGui::PopID();
  }
  ImGui::EndChild();
}

}  // namespace mhascope::app

// The lesson's tab (core/lessons/quiz.hpp), for the window's UiContext.
template <class Ui>
void mhascope::lessons::Quiz::drawTab(Ui& ui, const LessonOutcome<Result>& shown, Choices& choices) {
  app::drawQuizTab(ui, shown, choices);
}
template void mhascope::lessons::Quiz::drawTab(app::UiContext&, const LessonOutcome<Result>&, Choices&);
