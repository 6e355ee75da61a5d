// The one list of panels, in the order they appear in their area; the lesson tabs are the
// lessons' own list (AllLessons), in its order.
#include "panels/panel.hpp"
#include "lessons/lesson_tab.hpp"

namespace mhascope::app {
namespace {

std::vector<PanelInfo> makePanels() {
  std::vector<PanelInfo> panels = {
      {"Controls", PanelArea::Left, drawControlsPanel},
      {"Pipeline", PanelArea::Top, drawStepperPanel},
      {kHeatmapTab, PanelArea::Main, drawHeatmapPanel},
      {kAllHeadsTab, PanelArea::Main, drawHeadGridPanel},
      {"Learned", PanelArea::Main, drawWeightsPanel},
  };
  AllLessons::forEach([&](auto lesson) {
    using L = decltype(lesson);
    panels.push_back({L::kTitle, PanelArea::Main, drawLessonTab<L>, L::kId});
  });
  panels.insert(panels.end(), {
                                  {"This stage", PanelArea::Right, drawStagePanel},
                                  {"Shapes", PanelArea::Right, drawShapeTracePanel},
                                  {"Status", PanelArea::Status, drawStatusLine},
                              });
  return panels;
}

}  // namespace

const std::vector<PanelInfo>& allPanels() {
  // Built once; a constant table, not state.
  static const std::vector<PanelInfo> kPanels = makePanels();
  return kPanels;
}

const PanelInfo* findPanel(PanelArea area, std::string_view title) {
  for (const PanelInfo& p : allPanels()) {
    if (p.area == area && title == p.title) return &p;
  }
  return nullptr;
}

}  // namespace mhascope::app
