// The window's layout: three columns (controls | pipeline + main tabs | explanations) and the
// status line; under ~72 em of width two columns, the explanation panels becoming main tabs.
// Which panel goes where is panels/panel_list.cpp.
#include "panels/layout.hpp"

#include <imgui.h>

#include <algorithm>
#include <string>
#include <string_view>

#include "lessons/lessons.hpp"

#include "panels/panel.hpp"

namespace mhascope::app {

namespace {

// The current child window's rectangle, for the exploration test's points ("column_left" ...).
void recordColumn(UiProbes& probes, const char* name) {
  probes.recordRect(name, ImGui::GetWindowPos(),
                    ImVec2(ImGui::GetWindowPos().x + ImGui::GetWindowSize().x, ImGui::GetWindowPos().y + ImGui::GetWindowSize().y));
}

// The main tab strip's tabs: the Main panels, and when narrow the Right ones too (the lessons are
// drawn inside the Lessons tab).
bool inTabStrip(const PanelInfo& p, bool wide) {
  if (p.area != PanelArea::Main && (wide || p.area != PanelArea::Right)) return false;
  return !lessonIndexOf(p.id);
}

// The tabs' side padding that fits every tab in `width`: the style's when they fit as they are,
// less when they would not (down to a fifth of an em). Past that ImGui's ResizeDown policy
// shrinks the widest tabs, a cut label ending in "…" with the whole title in its tooltip. So
// every tab stays on screen: a tab scrolled past the strip's end was found by nobody.
float tabPaddingToFit(bool wide, float width) {
  const ImGuiStyle& style = ImGui::GetStyle();
  float labels = 0.0f;
  int n = 0;
  for (const PanelInfo& p : allPanels()) {
    if (!inTabStrip(p, wide)) continue;
    labels += ImGui::CalcTextSize(p.title).x;
    ++n;
  }
  if (n == 0) return style.FramePadding.x;
  const float spare = width - labels - static_cast<float>(n - 1) * style.ItemInnerSpacing.x;
  return std::clamp(spare / (2.0f * static_cast<float>(n)), 0.2f * ImGui::GetFontSize(), style.FramePadding.x);
}

// The main area's tab bar: every tab visible at any width (tabPaddingToFit).
void drawMainTabs(UiContext& ctx, bool wide) {
  ViewState& view = ctx.view;
  // The padding sizes the tabs wherever ImGui lays them out (the bar, each tab) and draws their
  // labels; the tabs' content keeps the style's own.
  const ImVec2 padding(tabPaddingToFit(wide, ImGui::GetContentRegionAvail().x), ImGui::GetStyle().FramePadding.y);
  ImGui::PushStyleVar(ImGuiStyleVar_FramePadding, padding);
  const bool bar = ImGui::BeginTabBar("main tabs", ImGuiTabBarFlags_FittingPolicyResizeDown);
  ImGui::PopStyleVar();
  if (!bar) return;
  // Taken before the tabs draw: a tab that asks for another during its draw (a click in All heads
  // or Model opening the Heatmap, a tab already passed) gets it on the next frame.
  const std::string select = std::move(view.selectTab);
  view.selectTab.clear();
  // A lesson's id (from --view, a workspace, a script) opens the Lessons tab at that lesson.
  const bool selectLesson = lessonIndexOf(select).has_value();
  if (selectLesson) view.lesson = select;
  for (const PanelInfo& p : allPanels()) {
    if (!inTabStrip(p, wide)) continue;
    ImGui::PushID(p.id);
    const bool lessonsTab = std::string_view(p.id) == kLessonsTab;
    const ImGuiTabItemFlags flags = select == p.id || (selectLesson && lessonsTab) ? ImGuiTabItemFlags_SetSelected : 0;
    ImGui::PushStyleVar(ImGuiStyleVar_FramePadding, padding);
    const bool open = ImGui::BeginTabItem(p.title, nullptr, flags);
    ImGui::PopStyleVar();
    ctx.probes.recordLastItem(std::string("tab_") + p.id);  // "tab_grid"
    if (open) {
      view.tab = p.id;
      ImGui::BeginChild("content", ImVec2(0, 0), false, ImGuiWindowFlags_NoScrollWithMouse);
      p.draw(ctx);
      ImGui::EndChild();
      ImGui::EndTabItem();
      // The open tab is the lesson on screen (chosen during the draw), known by its own id.
      if (lessonsTab) view.tab = view.lesson;
      ctx.probes.recordLabel("main_tab", view.tab);
    }
    ImGui::PopID();
  }
  ImGui::PushStyleVar(ImGuiStyleVar_FramePadding, padding);
  ImGui::EndTabBar();
  ImGui::PopStyleVar();
}

// The columns' table: controls | pipeline + main tabs | (wide only) explanations.
void drawColumns(UiContext& ctx, bool wide, float tableH) {
  const float em = ImGui::GetFontSize();
  const ImGuiTableFlags layoutFlags = ImGuiTableFlags_Resizable | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingStretchProp;
  if (!ImGui::BeginTable(wide ? "layout" : "layout narrow", wide ? 3 : 2, layoutFlags, ImVec2(0.0f, tableH))) return;
  ImGui::TableSetupColumn("controls", ImGuiTableColumnFlags_WidthStretch, wide ? 0.22f : 0.31f);
  ImGui::TableSetupColumn("main", ImGuiTableColumnFlags_WidthStretch, wide ? 0.50f : 0.69f);
  if (wide) ImGui::TableSetupColumn("explain", ImGuiTableColumnFlags_WidthStretch, 0.28f);
  ImGui::TableNextRow(ImGuiTableRowFlags_None, tableH);
  const float cellH = tableH - 2.0f * ImGui::GetStyle().CellPadding.y;

  ImGui::TableNextColumn();
  // Always the scrollbar: a message that makes the column overflow (an error under the controls)
  // would otherwise narrow every control by its width, so the whole column would jump.
  ImGui::BeginChild("left", ImVec2(0.0f, cellH), false, ImGuiWindowFlags_AlwaysVerticalScrollbar);
  recordColumn(ctx.probes, "column_left");
  drawPanelArea(ctx, PanelArea::Left);
  ImGui::EndChild();

  ImGui::TableNextColumn();
  const float top = ImGui::GetCursorPosY();
  const ImVec2 topLeft = ImGui::GetCursorScreenPos();
  drawPanelArea(ctx, PanelArea::Top);
  ctx.probes.recordRect("column_top", topLeft,
                        ImVec2(topLeft.x + ImGui::GetContentRegionAvail().x, ImGui::GetCursorScreenPos().y));
  const float mainH = std::max(cellH - (ImGui::GetCursorPosY() - top), 4.0f * em);
  ImGui::BeginChild("main", ImVec2(0.0f, mainH));
  recordColumn(ctx.probes, "column_main");
  drawMainTabs(ctx, wide);
  ImGui::EndChild();

  if (wide) {
    ImGui::TableNextColumn();
    ImGui::BeginChild("right", ImVec2(0.0f, cellH));
    recordColumn(ctx.probes, "column_right");
    for (const PanelInfo& p : allPanels()) {
      if (p.area != PanelArea::Right) continue;
      ImGui::PushID(p.id);
      if (ImGui::CollapsingHeader(p.title, ImGuiTreeNodeFlags_DefaultOpen)) p.draw(ctx);
      ImGui::PopID();
    }
    ImGui::EndChild();
  }
  ImGui::EndTable();
}

}  // namespace

bool drawLayout(UiContext& ctx, const std::function<bool(UiContext&)>& modeSwitch) {
  const ImGuiViewport* vp = ImGui::GetMainViewport();
  ImGui::SetNextWindowPos(vp->WorkPos);
  ImGui::SetNextWindowSize(vp->WorkSize);
  ImGui::PushStyleVar(ImGuiStyleVar_WindowBorderSize, 0.0f);
  const ImGuiWindowFlags hostFlags = ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove |
                                     ImGuiWindowFlags_NoBringToFrontOnFocus | ImGuiWindowFlags_NoNavFocus |
                                     ImGuiWindowFlags_NoScrollWithMouse |
                                     // glClear already paints this colour; a full-window quad on top
                                     // costs a software renderer (llvmpipe) several ms per frame
                                     ImGuiWindowFlags_NoBackground;
  ImGui::Begin("mhascope##host", nullptr, hostFlags);
  ImGui::PopStyleVar();
  if (modeSwitch && modeSwitch(ctx)) {
    const bool wideNow = ImGui::GetContentRegionAvail().x >= 72.0f * ImGui::GetFontSize();
    ImGui::End();
    return wideNow;
  }

  const float em = ImGui::GetFontSize();
  const float statusH = ImGui::GetFrameHeightWithSpacing() + ImGui::GetStyle().ItemSpacing.y;
  const float tableH = std::max(ImGui::GetContentRegionAvail().y - statusH, 4.0f * em);
  // Narrow windows (under ~72 em, e.g. 1000 px at 15 px text) have no room for a third column:
  // the explanation panels become tabs of the main area instead.
  const bool wide = ImGui::GetContentRegionAvail().x >= 72.0f * em;
  drawColumns(ctx, wide, tableH);
  ctx.probes.recordLabel("popup", ImGui::IsPopupOpen("", ImGuiPopupFlags_AnyPopupId | ImGuiPopupFlags_AnyPopupLevel)
                                      ? "open" : "none");
  ImGui::Separator();
  const ImVec2 statusMin = ImGui::GetCursorScreenPos();
  drawPanelArea(ctx, PanelArea::Status);
  ctx.probes.recordRect("column_status", statusMin,
                        ImVec2(statusMin.x + ImGui::GetWindowContentRegionMax().x, ImGui::GetItemRectMax().y));
  ImGui::End();
  return wide;
}

}  // namespace mhascope::app
