// The pipeline stepper: every stage in order as a clickable strip, grouped by step
// (inputs → project → split heads → scores → scale → mask → softmax → weighted sum → merge →
// output), with Prev / Next / Play and the current stage's title and formula.
// Keys (handled by App so they work wherever the mouse is): ← → Space Home End.
#include <imgui.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "panels/panel.hpp"
#include "widgets/colors.hpp"
#include "widgets/drag_slider.hpp"
#include "widgets/flow.hpp"

namespace mhascope::app {
namespace {

// The strip's groups: runs of consecutive stages with the same step (StageInfo::group), in
// pipeline (StageId) order.
struct StageGroup {
  const char* label;
  int first, last;  // [first, last)
};
std::vector<StageGroup> stageGroups() {
  std::vector<StageGroup> groups;
  for (int i = 0; i < kStageCount; ++i) {
    const char* group = stageInfo(static_cast<StageId>(i)).group;
    if (groups.empty() || std::strcmp(groups.back().label, group) != 0) groups.push_back({group, i, i});
    groups.back().last = i + 1;
  }
  return groups;
}

float buttonWidth(const char* label) {
  return ImGui::CalcTextSize(label).x + 2.0f * ImGui::GetStyle().FramePadding.x;
}

void stageStrip(UiContext& ctx) {
  ViewState& view = ctx.view;
  const ImGuiStyle& style = ImGui::GetStyle();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const float right = origin.x + ImGui::GetContentRegionAvail().x;
  const float arrowW = ImGui::CalcTextSize(" → ").x;
  const float labelH = ImGui::GetTextLineHeightWithSpacing();
  const float rowH = labelH + ImGui::GetFrameHeightWithSpacing();
  const int current = static_cast<int>(view.stage);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  // Groups are laid out by hand: a label above its buttons, an arrow before each group but the
  // first, a new row when the next group and its arrow would not fit.
  ImVec2 pos = origin;
  // The variants' stages (RoPE, grouped K/V, ALiBi, the window) only when this trace recorded them.
  auto shown = [&ctx](int i) { return stageRecorded(ctx.state.shown.trace, static_cast<StageId>(i)); };
  bool firstGroup = true;
  static const std::vector<StageGroup> kGroups = stageGroups();  // a constant of the stage table
  for (const StageGroup& g : kGroups) {
    int firstShown = -1;
    for (int i = g.first; i < g.last && firstShown < 0; ++i) firstShown = shown(i) ? i : -1;
    if (firstShown < 0) continue;
    ImGui::PushID(g.first);
    float buttonsW = 0;
    for (int i = g.first; i < g.last; ++i) {
      if (shown(i)) buttonsW += buttonWidth(stageChip(ctx.state.shown.trace, static_cast<StageId>(i)).c_str()) + (i > firstShown ? style.ItemSpacing.x : 0);
    }
    const float groupW = std::max(buttonsW, ImGui::CalcTextSize(g.label).x);
    if (!firstGroup) {
      // The arrow goes with the group it leads to: a group that starts a new row starts it with its
      // arrow, so the flow reads on from the row above and no arrow is left at a row's end.
      if (pos.x + arrowW + groupW > right) pos = ImVec2(origin.x, pos.y + rowH);
      dl->AddText(ImVec2(pos.x, pos.y + labelH + style.FramePadding.y), ImGui::GetColorU32(ImGuiCol_TextDisabled), " → ");
      pos.x += arrowW;
    }
    const bool groupCurrent = current >= g.first && current < g.last;
    dl->AddText(pos, groupCurrent ? IM_COL32(255, 215, 115, 255) : ImGui::GetColorU32(ImGuiCol_TextDisabled), g.label);
    ImGui::SetCursorScreenPos(ImVec2(pos.x, pos.y + labelH));
    firstGroup = false;
    for (int i = g.first; i < g.last; ++i) {
      if (!shown(i)) continue;
      ImGui::PushID(i);
      if (i > firstShown) ImGui::SameLine();
      int pushed = 0;
      if (i == current) {
        ImGui::PushStyleColor(ImGuiCol_Button, IM_COL32(215, 140, 40, 255));
        ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(20, 20, 20, 255));
        pushed = 2;
      } else if (i < current) {
        ImGui::PushStyleColor(ImGuiCol_Button, IM_COL32(55, 75, 100, 255));
        pushed = 1;
      }
      if (ImGui::Button(stageChip(ctx.state.shown.trace, static_cast<StageId>(i)).c_str())) goToStage(view, static_cast<StageId>(i));
      ImGui::PopStyleColor(pushed);
      ctx.probes.recordLastItem(std::string("stage_") + stageInfo(static_cast<StageId>(i)).name);
      if (ImGui::IsItemHovered()) {
        ImGui::SetTooltip("%s\n%s", stageInfo(static_cast<StageId>(i)).title,
                          stageFormula(ctx.state.shown.trace, static_cast<StageId>(i)).c_str());
      }
      ImGui::PopID();
    }
    pos.x += groupW;
    ImGui::PopID();
  }
  ImGui::SetCursorScreenPos(origin);
  ImGui::Dummy(ImVec2(right - origin.x, pos.y - origin.y + rowH - style.ItemSpacing.y));
}

void transport(UiContext& ctx) {
  ViewState& view = ctx.view;
  const float em = ImGui::GetFontSize();
  const int current = static_cast<int>(view.stage);
  ImGui::BeginDisabled(current == 0);
  if (ImGui::Button("◀ Prev", ImVec2(5.5f * em, 0))) stepStage(view, -1, &ctx.state.shown.trace);
  ImGui::EndDisabled();
  ctx.probes.recordLastItem("prev");
  ImGui::SameLine();
  ImGui::BeginDisabled(current == kStageCount - 1);
  if (ImGui::Button("Next ▶", ImVec2(5.5f * em, 0))) stepStage(view, +1, &ctx.state.shown.trace);
  ImGui::EndDisabled();
  ctx.probes.recordLastItem("next");
  ImGui::SameLine();
  const char* playLabel = view.playing ? "❚❚ Pause" : "▶ Play";  // what this frame draws
  if (ImGui::Button(playLabel, ImVec2(6.0f * em, 0))) {
    view.playing = !view.playing;
    view.playAccumulator = 0;
    if (view.playing && current == kStageCount - 1) goToStage(view, StageId::Query);
  }
  ctx.probes.recordLastItem("play");
  ctx.probes.recordLabel("play", playLabel);
  ImGui::SameLine();
  ImGui::SetNextItemWidth(9.0f * em);
  dragSliderFloat("##speed", &view.playStagesPerSecond, 0.25f, 4.0f, "%.2g stages/s", ImGuiSliderFlags_Logarithmic);
  char where[96];
  int shownCount = 0, shownBefore = 0;  // the stages this trace records
  for (int i = 0; i < kStageCount; ++i) {
    const bool recorded = stageRecorded(ctx.state.shown.trace, static_cast<StageId>(i));
    shownCount += recorded;
    shownBefore += recorded && i <= current;
  }
  std::snprintf(where, sizeof where, "stage %d of %d   keys: ← → Space Home End", shownBefore, shownCount);
  sameLineOrWrap(ImGui::CalcTextSize(where).x);
  ImGui::TextDisabled("%s", where);
}

}  // namespace

void drawStepperPanel(UiContext& ctx) {
  // A variant's stage that the shown pass did not record (RoPE turned off while on "Rotate (Q)", a
  // workspace's stage): on to the next stage it did record, once the new pass is on screen.
  const AppState& st = ctx.state;
  if (st.shown.hasTrace() && !st.compute.computing && !st.doc.configDirty &&
      !stageRecorded(st.shown.trace, ctx.view.stage) && !stepStage(ctx.view, +1, &st.shown.trace)) {
    stepStage(ctx.view, -1, &st.shown.trace);
  }
  stageStrip(ctx);
  ImGui::Spacing();
  transport(ctx);
  const StageInfo& info = stageInfo(ctx.view.stage);
  ctx.probes.recordLabel("stage", info.name);  // the stage whose title this frame draws
  if (ctx.titleFont) ImGui::PushFont(ctx.titleFont);
  ImGui::TextUnformatted(info.title);
  if (ctx.titleFont) ImGui::PopFont();
  ImGui::SameLine(0, ImGui::GetFontSize() * 1.5f);
  if (ctx.monoFont) ImGui::PushFont(ctx.monoFont);
  ImGui::SetCursorPosY(ImGui::GetCursorPosY() + ImGui::GetFontSize() * 0.25f);
  ImGui::TextColored(ImVec4(1.0f, 0.85f, 0.45f, 1.0f), "%s", stageFormula(st.shown.trace, ctx.view.stage).c_str());
  if (ctx.monoFont) ImGui::PopFont();
}

}  // namespace mhascope::app
