// The Lessons tab: the lessons' list, grouped (Basics, Today's attention, Check yourself) with each
// lesson's "what you will learn" on hover, beside the chosen lesson (above it on a narrow tab), which
// is drawn under a bar that says where it stands and what it teaches and steps to its neighbours. The list is AllLessons' entries (kLessonEntries);
// the lesson is drawn by its own panel (panel_list.cpp), found by its id.
//
// Keys: Up / Down go to the previous / next lesson (not while a text field takes the keys; Left and
// Right keep stepping the pipeline's stages). Choosing a lesson is a view choice (ViewState::lesson);
// the layout names the chosen lesson as the open tab, so the scheduler, the workspace and --view
// know it by its id as when every lesson was a tab of its own.
#include <imgui.h>

#include <algorithm>
#include <string>

#include "lessons/lessons.hpp"
#include "panels/panel.hpp"
#include "widgets/flow.hpp"
#include "widgets/wrapped_text.hpp"

namespace mhascope::app {
namespace {

// Wide enough for every title and group name, so no name is ever cut.
float listWidth() {
  const ImGuiStyle& style = ImGui::GetStyle();
  float widest = 0.0f;
  for (const LessonEntry& e : kLessonEntries) {
    widest = std::max({widest, ImGui::CalcTextSize(e.title).x + style.IndentSpacing,
                       ImGui::CalcTextSize(lessonGroupTitle(e.group)).x});
  }
  return widest + 2.0f * style.WindowPadding.x + style.ScrollbarSize;
}

void learnTooltip(const LessonEntry& e) {
  if (!ImGui::IsItemHovered()) return;
  ImGui::BeginTooltip();
  ImGui::TextUnformatted(wrapAtSpaces(std::string("You will learn: ") + e.learn, 28.0f * ImGui::GetFontSize()).c_str());
  ImGui::EndTooltip();
}

// One lesson's entry in the list: its title, selected when shown, its "what you will learn" on hover.
void lessonItem(UiContext& ctx, std::size_t i, std::size_t shown, float width) {
  const LessonEntry& e = kLessonEntries[i];
  ImGui::PushID(e.id);
  if (ImGui::Selectable(e.title, i == shown, 0, ImVec2(width, 0.0f))) ctx.view.lesson = e.id;
  ctx.probes.recordLastItem(std::string("lesson_") + e.id);  // "lesson_masks"
  learnTooltip(e);
  ImGui::PopID();
}

// Beside the lesson: a column, each group's title over its lessons.
void drawLessonColumn(UiContext& ctx, std::size_t shown, float width) {
  ImGui::BeginChild("lesson list", ImVec2(width, 0.0f), true);
  ctx.probes.recordRect("lesson_list", ImGui::GetWindowPos(),
                        ImVec2(ImGui::GetWindowPos().x + ImGui::GetWindowSize().x, ImGui::GetWindowPos().y + ImGui::GetWindowSize().y));
  for (std::size_t i = 0; i < kLessonEntries.size(); ++i) {
    const LessonEntry& e = kLessonEntries[i];
    if (i == 0 || e.group != kLessonEntries[i - 1].group) {
      if (i > 0) ImGui::Spacing();
      ImGui::TextDisabled("%s", lessonGroupTitle(e.group));
    }
    ImGui::Indent();
    lessonItem(ctx, i, shown, 0.0f);
    ImGui::Unindent();
  }
  ImGui::EndChild();
}

// Above the lesson, when the tab is too narrow for a column beside it: a line per group, its title
// then its lessons, wrapped between whole names.
void drawLessonStrip(UiContext& ctx, std::size_t shown) {
  const ImVec2 top = ImGui::GetCursorScreenPos();
  for (std::size_t i = 0; i < kLessonEntries.size(); ++i) {
    const LessonEntry& e = kLessonEntries[i];
    if (i == 0 || e.group != kLessonEntries[i - 1].group) {
      ImGui::AlignTextToFramePadding();
      ImGui::TextDisabled("%s:", lessonGroupTitle(e.group));
    }
    const float w = ImGui::CalcTextSize(e.title).x;
    sameLineOrWrap(w);
    lessonItem(ctx, i, shown, w);
  }
  ctx.probes.recordRect("lesson_list", top, ImVec2(top.x + ImGui::GetContentRegionAvail().x, ImGui::GetItemRectMax().y));
  ImGui::Separator();
}

// Where the lesson stands, what it teaches, and the steps to its neighbours.
void drawLessonBar(UiContext& ctx, std::size_t shown) {
  const LessonEntry& e = kLessonEntries[shown];
  const float em = ImGui::GetFontSize();
  // The buttons right-aligned, when there is room beside the place; else on a line of their own.
  const float buttonsW = ImGui::CalcTextSize("◀ Previous").x + ImGui::CalcTextSize("Next ▶").x +
                         4.0f * ImGui::GetStyle().FramePadding.x + ImGui::GetStyle().ItemSpacing.x;
  // (Screen positions: inside the group, SameLine's offset would count from the group's left edge.)
  const float right = ImGui::GetCursorScreenPos().x + ImGui::GetContentRegionAvail().x - buttonsW;
  ImGui::AlignTextToFramePadding();
  ImGui::TextDisabled("%s · lesson %zu of %zu", lessonGroupTitle(e.group), shown + 1, kLessonEntries.size());
  if (ImGui::GetItemRectMax().x + em < right) {
    ImGui::SameLine();
    ImGui::SetCursorScreenPos(ImVec2(right, ImGui::GetCursorScreenPos().y));
  }
  const bool first = shown == 0, last = shown + 1 == kLessonEntries.size();
  ImGui::BeginDisabled(first);
  if (ImGui::Button("◀ Previous")) ctx.view.lesson = kLessonEntries[shown - 1].id;
  ImGui::EndDisabled();
  ctx.probes.recordLastItem("lesson_previous");
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) ImGui::SetTooltip("The previous lesson (Up arrow key)");
  ImGui::SameLine();
  ImGui::BeginDisabled(last);
  if (ImGui::Button("Next ▶")) ctx.view.lesson = kLessonEntries[shown + 1].id;
  ImGui::EndDisabled();
  ctx.probes.recordLastItem("lesson_next");
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) ImGui::SetTooltip("The next lesson (Down arrow key)");
  textWrapped(std::string("You will learn: ") + e.learn);
  ctx.probes.recordLabel("lesson_learn", e.learn);
  ImGui::Separator();
}

}  // namespace

void drawLessonsPanel(UiContext& ctx) {
  ViewState& view = ctx.view;
  if (!ImGui::GetIO().WantTextInput) {
    if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_UpArrow))) view.lesson = lessonAfter(view.lesson, -1);
    if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_DownArrow))) view.lesson = lessonAfter(view.lesson, +1);
  }
  const std::size_t shown = lessonIndexOf(view.lesson).value_or(0);
  view.lesson = kLessonEntries[shown].id;
  // The list beside the lesson while the lesson keeps about 40 em (its pictures side by side); on a
  // narrower tab the same list above it, so the lesson keeps the whole width.
  const float listW = listWidth();
  const bool column = ImGui::GetContentRegionAvail().x >= listW + 40.0f * ImGui::GetFontSize();
  if (column) {
    drawLessonColumn(ctx, shown, listW);
    ImGui::SameLine();
  } else {
    drawLessonStrip(ctx, shown);
  }
  ImGui::BeginGroup();
  drawLessonBar(ctx, shown);
  // The lesson's page: its own child window, so the mouse wheel scrolls the whole lesson wherever
  // the pointer is (the main tabs' content does not scroll by wheel: the heatmaps zoom by it).
  // One page per lesson (its own ID), so each keeps its scroll position and a new one opens at its top.
  ImGui::PushID(kLessonEntries[shown].id);
  ImGui::BeginChild("lesson page", ImVec2(0.0f, 0.0f), false);
  ctx.probes.recordRect("lesson_page", ImGui::GetWindowPos(),
                        ImVec2(ImGui::GetWindowPos().x + ImGui::GetWindowSize().x, ImGui::GetWindowPos().y + ImGui::GetWindowSize().y));
  ctx.probes.recordLabel("lesson_scrolled", ImGui::GetScrollY() > 0.0f ? "scrolled" : "top");
  if (const PanelInfo* p = findPanel(PanelArea::Main, kLessonEntries[shown].id)) p->draw(ctx);
  ImGui::EndChild();
  ImGui::PopID();
  ImGui::EndGroup();
}

}  // namespace mhascope::app
