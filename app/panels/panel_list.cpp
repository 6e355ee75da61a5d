// The one list of panels, in the order they appear in their area; the lesson tabs are the
// lessons' own list (AllLessons), in its order.
#include "panels/panel.hpp"
#include "lessons/lesson_tab.hpp"

#include <imgui.h>

#include "panels/compare_panel.hpp"
#include "panels/predictions_panel.hpp"
#include "circuits/circuits_view.hpp"
#include "train_lab/lab_panels.hpp"

namespace mhascope::app {
namespace {

// A Train-mode panel: drawn from the window's TrainLab (none: nothing to draw).
template <void (*Draw)(TrainLab&, UiContext&)>
void trainPanel(UiContext& ctx) {
  if (ctx.train) Draw(*ctx.train, ctx);
}

std::vector<PanelInfo> makePanels() {
  std::vector<PanelInfo> panels = {
      {"Controls", PanelArea::Left, drawControlsPanel},
      {"Pipeline", PanelArea::Top, drawStepperPanel},
      {kHeatmapTab, PanelArea::Main, drawHeatmapPanel},
      {kAllHeadsTab, PanelArea::Main, drawHeadGridPanel},
      {kModelTab, PanelArea::Main, drawModelPanel, "model"},
      {"Learned", PanelArea::Main, drawWeightsPanel},
      {kCompareTab, PanelArea::Main, drawComparePanel},
      {kCircuitsTab, PanelArea::Main, drawCircuitsTab},
  };
  AllLessons::forEach([&](auto lesson) {
    using L = decltype(lesson);
    panels.push_back({L::kTitle, PanelArea::Main, drawLessonTab<L>, L::kId});
  });
  // Last of the main tabs, so the lessons keep their places in the strip (--view predictions opens it).
  panels.push_back({kPredictionsTab, PanelArea::Main, drawPredictionsPanel, "predictions"});
  panels.insert(panels.end(), {
                                  {"This stage", PanelArea::Right, drawStagePanel},
                                  {"Shapes", PanelArea::Right, drawShapeTracePanel},
                                  {"Status", PanelArea::Status, drawStatusLine},
                                  {"Setup", PanelArea::TrainLeft, trainPanel<drawTrainSetup>, "", true},
                                  {"Run", PanelArea::TrainLeft, trainPanel<drawTrainRun>},
                                  {"Roles", PanelArea::TrainLeft, trainPanel<drawTrainRoles>},
                                  {"Keep it · take it to the pipeline", PanelArea::TrainLeft,
                                   trainPanel<drawTrainKeep>, "", true},
                                  {"Curves", PanelArea::TrainRight, trainPanel<drawTrainCurves>},
                                  {"Timeline", PanelArea::TrainRight, trainPanel<drawTrainScrubber>},
                                  {"Attention", PanelArea::TrainRight, trainPanel<drawTrainGrid>},
                                  {kCircuitsTab, PanelArea::TrainRight, trainPanel<drawTrainCircuits>, "", true},
                              });
  return panels;
}

}  // namespace

const std::vector<PanelInfo>& allPanels() {
  // Built once; a constant table, not state.
  static const std::vector<PanelInfo> kPanels = makePanels();
  return kPanels;
}

void drawPanelArea(UiContext& ctx, PanelArea area) {
  for (const PanelInfo& p : allPanels()) {
    if (p.area != area) continue;
    ImGui::PushID(p.title);
    if (!p.header || ImGui::CollapsingHeader(p.title, ImGuiTreeNodeFlags_DefaultOpen)) p.draw(ctx);
    ImGui::PopID();
  }
}

const PanelInfo* findPanel(PanelArea area, std::string_view title) {
  for (const PanelInfo& p : allPanels()) {
    if (p.area == area && title == p.title) return &p;
  }
  return nullptr;
}

}  // namespace mhascope::app
