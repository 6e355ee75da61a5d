// The one list of panels, in the order they appear in their area.
#include "panels/panel.hpp"

namespace mhascope::app {

const std::vector<PanelInfo>& allPanels() {
  // Built once; a constant table, not state.
  static const std::vector<PanelInfo> kPanels = {
      {"Controls", PanelArea::Left, drawControlsPanel},
      {"Pipeline", PanelArea::Top, drawStepperPanel},
      {kHeatmapTab, PanelArea::Main, drawHeatmapPanel},
      {kAllHeadsTab, PanelArea::Main, drawHeadGridPanel},
      {"Learned", PanelArea::Main, drawWeightsPanel},
      {"Split", PanelArea::Main, drawLessonSplitPanel},
      {"Params", PanelArea::Main, drawLessonParamsPanel},
      {"Mix", PanelArea::Main, drawLessonMixPanel},
      {"Roles", PanelArea::Main, drawLessonSpecialistsPanel},
      {"Masks", PanelArea::Main, drawLessonMasksPanel},
      {"Pitfalls", PanelArea::Main, drawLessonPitfallsPanel},
      {"Cost", PanelArea::Main, drawLessonCostPanel},
      {"Lines", PanelArea::Main, drawLessonLinesPanel},
      {"Cell", PanelArea::Main, drawLessonCellPanel},
      {"Quiz", PanelArea::Main, drawLessonQuizPanel},
      {"This stage", PanelArea::Right, drawStagePanel},
      {"Shapes", PanelArea::Right, drawShapeTracePanel},
      {"Status", PanelArea::Status, drawStatusLine},
  };
  return kPanels;
}

}  // namespace mhascope::app
