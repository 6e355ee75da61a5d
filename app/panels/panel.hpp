// The panels of the window, listed in ONE place (panel_list.cpp). A panel is one file with one
// draw entry point; adding a view is that file plus one line in the list.
//
// Where a panel goes:
//   Left   — the controls column
//   Top    — above the main area (the pipeline stepper)
//   Main   — a tab of the main area (heatmap, all heads, and the teaching views to come)
//   Right  — the explanation column, each panel under a collapsible header
//   Status — the line at the bottom
#pragma once

#include <vector>

#include "ui_context.hpp"

namespace mhascope::app {

enum class PanelArea { Left, Top, Main, Right, Status };

struct PanelInfo {
  const char* title;  // tab / header text; also the name ViewState::selectTab uses
  PanelArea area;
  void (*draw)(UiContext&);
};

const std::vector<PanelInfo>& allPanels();

// Draw entry points, one per panel file.
void drawControlsPanel(UiContext& ctx);     // panels/controls_panel.cpp
void drawStepperPanel(UiContext& ctx);      // panels/stepper_panel.cpp
void drawHeatmapPanel(UiContext& ctx);      // panels/heatmap_panel.cpp
void drawHeadGridPanel(UiContext& ctx);     // panels/head_grid_panel.cpp
void drawStagePanel(UiContext& ctx);        // panels/stage_panel.cpp
void drawShapeTracePanel(UiContext& ctx);   // panels/shape_trace_panel.cpp
void drawStatusLine(UiContext& ctx);        // panels/status_line.cpp

// Tab titles the rest of the app refers to.
inline constexpr const char* kHeatmapTab = "Heatmap";
inline constexpr const char* kAllHeadsTab = "All heads";

}  // namespace mhascope::app
