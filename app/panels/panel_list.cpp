// The one list of panels, in the order they appear in their area. The lessons are the lessons'
// own list (AllLessons), each a Main panel that the Lessons tab draws (lessons_panel.cpp).
#include "panels/panel.hpp"
#include "lessons/lesson_tab.hpp"

#include <imgui.h>

#include "panels/compare_panel.hpp"
#include "panels/experiments_panel.hpp"
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
      {"controls", "Controls", PanelArea::Left, drawControlsPanel},
      {"pipeline", "Pipeline", PanelArea::Top, drawStepperPanel},
      {kHeatmapTab, "Heatmap", PanelArea::Main, drawHeatmapPanel},
      {kAllHeadsTab, "All heads", PanelArea::Main, drawHeadGridPanel},
      {kLessonsTab, "Lessons", PanelArea::Main, drawLessonsPanel},
      {kModelTab, "Model", PanelArea::Main, drawModelPanel},
      {"learned", "Learned", PanelArea::Main, drawWeightsPanel},
      {kCompareTab, "Compare", PanelArea::Main, drawComparePanel},
      {kCircuitsTab, "Circuits", PanelArea::Main, drawCircuitsTab},
  };
  AllLessons::forEach([&](auto lesson) {
    using L = decltype(lesson);
    panels.push_back({L::kId, L::kTitle, PanelArea::Main, drawLessonTab<L>});
  });
  panels.push_back({kPredictionsTab, "Predictions", PanelArea::Main, drawPredictionsPanel});
  panels.push_back({kExperimentsTab, "Experiments", PanelArea::Main, drawExperimentsPanel});
  panels.insert(panels.end(), {
                                  {"stage", "This stage", PanelArea::Right, drawStagePanel},
                                  {"shapes", "Shapes", PanelArea::Right, drawShapeTracePanel},
                                  {"status", "Status", PanelArea::Status, drawStatusLine},
                                  {"train_setup", "Setup", PanelArea::TrainLeft, trainPanel<drawTrainSetup>, true},
                                  {"train_run", "Run", PanelArea::TrainLeft, trainPanel<drawTrainRun>},
                                  {"train_roles", "Roles", PanelArea::TrainLeft, trainPanel<drawTrainRoles>},
                                  {"train_keep", "Keep it · take it to the pipeline", PanelArea::TrainLeft,
                                   trainPanel<drawTrainKeep>, true},
                                  {"train_curves", "Curves", PanelArea::TrainRight, trainPanel<drawTrainCurves>},
                                  {"train_timeline", "Timeline", PanelArea::TrainRight, trainPanel<drawTrainScrubber>},
                                  {"train_attention", "Attention", PanelArea::TrainRight, trainPanel<drawTrainGrid>},
                                  {"train_circuits", "Circuits", PanelArea::TrainRight, trainPanel<drawTrainCircuits>, true},
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
    ImGui::PushID(p.id);
    if (!p.header || ImGui::CollapsingHeader(p.title, ImGuiTreeNodeFlags_DefaultOpen)) p.draw(ctx);
    ImGui::PopID();
  }
}

const PanelInfo* findPanel(PanelArea area, std::string_view id) {
  for (const PanelInfo& p : allPanels()) {
    if (p.area == area && id == p.id) return &p;
  }
  return nullptr;
}

std::string mainTabIdOf(std::string_view saved) {
  if (findPanel(PanelArea::Main, saved) || findPanel(PanelArea::Right, saved)) return std::string(saved);
  for (const PanelInfo& p : allPanels()) {
    if ((p.area == PanelArea::Main || p.area == PanelArea::Right) && saved == p.title) return p.id;
  }
  return "";
}

}  // namespace mhascope::app
