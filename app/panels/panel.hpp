// The panels of the window, listed in ONE place (panel_list.cpp). A panel is one file with one
// draw entry point; adding a view is that file plus one line in the list. The lesson tabs come
// from the lessons' own list (AllLessons, core/lessons/lessons.hpp), each drawn by its
// app/lessons/<name>_tab.cpp.
//
// Where a panel goes:
//   Left   — the controls column
//   Top    — above the main area (the pipeline stepper)
//   Main   — a tab of the main area (heatmap, all heads, lessons, model, learned weights …); each
//            lesson is a Main panel too, drawn inside the Lessons tab (lessons_panel.cpp), not as a tab
//   Right  — the explanation column, each panel under a collapsible header
//   Status — the line at the bottom
//   TrainLeft, TrainRight — the Train mode's two columns (train_lab/), drawn instead of the above
//                           when that mode is on
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "state/ui_context.hpp"

namespace mhascope::app {

enum class PanelArea { Left, Top, Main, Right, Status, TrainLeft, TrainRight };

// A panel is known by its id everywhere — the tab to select, the workspace's saved tab, the
// scheduler's open tab, a script's probe ("tab_grid") — and its title is only drawn.
struct PanelInfo {
  const char* id;     // "grid", a lesson's kId ("masks"); a main tab's id is its --view name
  const char* title;  // tab / header text ("All heads")
  PanelArea area;
  void (*draw)(UiContext&);
  bool header = false;  // under a collapsing header titled `title`, open at first (Right panels always are)
};

const std::vector<PanelInfo>& allPanels();
// The panel of `area` whose id is `id`, or null.
const PanelInfo* findPanel(PanelArea area, std::string_view id);
// The id of the main tab a saved workspace or an earlier version's last session names: its id,
// or (files written before tabs had ids) its title; "" when no main tab is called that.
std::string mainTabIdOf(std::string_view saved);
// Every panel of `area` in list order, each under its ID (and its header when it has one).
void drawPanelArea(UiContext& ctx, PanelArea area);

// Draw entry points, one per panel file.
void drawControlsPanel(UiContext& ctx);     // panels/controls_panel.cpp
void drawStepperPanel(UiContext& ctx);      // panels/stepper_panel.cpp
void drawHeatmapPanel(UiContext& ctx);      // panels/heatmap_panel.cpp
void drawHeadGridPanel(UiContext& ctx);     // panels/head_grid_panel.cpp
void drawWeightsPanel(UiContext& ctx);      // panels/weights_panel.cpp
void drawStagePanel(UiContext& ctx);        // panels/stage_panel.cpp
void drawShapeTracePanel(UiContext& ctx);   // panels/shape_trace_panel.cpp
void drawStatusLine(UiContext& ctx);        // panels/status_line.cpp
void drawModelPanel(UiContext& ctx);        // panels/model_panel.cpp
void drawLessonsPanel(UiContext& ctx);      // panels/lessons_panel.cpp: the lesson list and the chosen lesson
// Parts of the controls: the Open file… button and its popup, the "Files in use" list.
void drawOpenFileButton(UiContext& ctx);    // panels/open_file_popup.cpp
void drawFilesInUse(UiContext& ctx);        // panels/open_file_popup.cpp
// The head of `stage` that query head `head` reads: K/V head head / (h/N) on the stages with N K/V
// heads (split and rotated K and V under grouped-query attention), the head itself elsewhere.
inline int kvHeadRead(const Trace& t, StageId stage, int head) {
  const std::vector<std::string>& axes = t.axesOf(stage);
  if (axes.size() < 2 || axes[1] != "N" || t.kvHeads <= 0 || t.kvHeads >= t.heads) return head;
  return head / (t.heads / t.kvHeads);
}

// Ids of the tabs the rest of the app refers to.
inline constexpr const char* kHeatmapTab = "heatmap";
inline constexpr const char* kAllHeadsTab = "grid";
inline constexpr const char* kModelTab = "model";
inline constexpr const char* kLessonsTab = "lessons";  // opens at ViewState::lesson
inline constexpr const char* kCircuitsTab = "circuits";  // the pipeline's Circuits tab

}  // namespace mhascope::app
