// The Train mode's right column (curves, role-score timelines, scrubber, attention grid) and
// the mode switch with the Train mode's layout.
#include <imgui.h>

#include <algorithm>
#include <cstdio>

#include "render/texture_keys.hpp"
#include "panels/panel.hpp"
#include "practice/practice_panel.hpp"
#include "train_lab/lab_chart.hpp"
#include "train_lab/lab_figures.hpp"
#include "train_lab/lab_panels.hpp"
#include "widgets/colors.hpp"
#include "widgets/heatmap_view.hpp"

namespace mhascope::app {

using namespace mhascope::train;

namespace {

// Picks the evaluation nearest to a clicked step.
void chooseStep(TrainLab& lab, double step) {
  const auto& h = lab.run.view->history;
  std::size_t best = 0;
  for (std::size_t i = 0; i < h.size(); ++i) {
    if (std::abs(static_cast<double>(h[i].step) - step) < std::abs(static_cast<double>(h[best].step) - step)) best = i;
  }
  lab.run.chosenIndex = static_cast<int>(best);
  lab.run.followLatest = best + 1 == h.size() && lab.run.running();
}

}  // namespace

void drawTrainCurves(TrainLab& lab, UiContext& ctx) {
  if (lab.run.view && lab.run.view->evaluating) {
    ImGui::TextDisabled("Evaluating the starting parameters on the probe sequence (step %lld) ...",
                        static_cast<long long>(lab.run.view->step));
    return;
  }
  if (!lab.run.view || lab.run.view->history.empty()) {
    ImGui::TextDisabled("Press Train: the loss and accuracy curves, every head's role scores over the steps and the\n"
                        "probe sequence's attention of every layer x head appear here, live.");
    return;
  }
  if (lab.run.historyMissing) {
    ImGui::TextDisabled("Curves from step %lld, where the checkpoint was loaded: it did not save the run's history.",
                        static_cast<long long>(lab.run.runStartStep));
  }
  if (!lab.run.curves) return;
  const CurvesFigure& fig = *lab.run.curves;
  const double xHi = static_cast<double>(std::max<std::int64_t>(lab.run.view->lastStep, 1));
  const float em = ImGui::GetFontSize();
  const float w = ImGui::GetContentRegionAvail().x;
  const ImVec2 small(0.5f * w - 0.5f * em, 9.0f * em);
  std::optional<double> clicked;
  for (std::size_t i = 0; i < fig.panels.size(); ++i) {
    if (i % 2 == 1) ImGui::SameLine();
    const std::string id = "chart" + std::to_string(i);
    if (auto c = drawStepChart(id.c_str(), fig.panels[i], 0, xHi, fig.markStep, small)) clicked = c;
    ctx.probes.recordLastItem("train_" + id);
  }
  ImGui::Checkbox("log-y loss", &lab.logY);
  ctx.probes.recordLastItem("train_logy");
  ImGui::SameLine();
  ImGui::TextDisabled("thin lines: layer 1 and up; dotted: the role threshold %.2f", kRoleThreshold);
  if (clicked) chooseStep(lab, *clicked);
}

void drawTrainScrubber(TrainLab& lab, UiContext& ctx) {
  if (!lab.run.view || lab.run.view->history.empty()) return;
  const auto& h = lab.run.view->history;
  const int last = static_cast<int>(h.size()) - 1;
  char label[64];
  std::snprintf(label, sizeof label, "step %lld", static_cast<long long>(lab.run.shown.step));
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("timeline");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(-12.0f * ImGui::GetFontSize());
  int idx = lab.run.chosenIndex;
  if (ImGui::SliderInt("##scrub", &idx, 0, last, label, ImGuiSliderFlags_AlwaysClamp)) {
    lab.run.chosenIndex = idx;
    lab.run.followLatest = false;
  }
  ctx.probes.recordLastItem("train_scrubber");  // "##scrub": the item is the slider's frame
  ctx.probes.recordLabel("train_step_label", label);
  ImGui::SameLine();
  if (ImGui::Checkbox("follow latest", &lab.run.followLatest) && lab.run.followLatest) lab.run.chosenIndex = last;
  ctx.probes.recordLastItem("train_follow");
}

void drawTrainGrid(TrainLab& lab, UiContext& ctx) {
  if (!lab.run.shown.snapshot) {
    if (lab.run.shown.evaluation && !lab.run.view->evaluating && lab.run.view->state != RunState::Failed) {
      ImGui::TextDisabled("No attention picture was kept for step %lld: a loaded checkpoint keeps its earlier steps'\n"
                          "curves and roles, not their attention, and a long run keeps an even spread of its\n"
                          "pictures within 256 MiB. Choose a step that has one.", static_cast<long long>(lab.run.shown.step));
    }
    return;
  }
  const Snapshot& s = *lab.run.shown.snapshot;
  const SessionView& v = *lab.run.view;
  const int T = s.seq;
  Slice2D slice;
  slice.stage = StageId::Weights;
  slice.rows = slice.cols = T;
  slice.rowAxis = "T_q";
  slice.colAxis = "T_k";
  for (int t = 0; t < T; ++t) slice.rowLabels.push_back(v.task->symbol(v.probe->tokens[static_cast<std::size_t>(t)]));
  slice.colLabels = slice.rowLabels;
  std::vector<std::uint8_t> causal(static_cast<std::size_t>(T * T), 0);
  for (int r = 0; r < T; ++r) {
    for (int c = r + 1; c < T; ++c) causal[static_cast<std::size_t>(r * T + c)] = 1;
  }
  slice.setBlockedCells(std::move(causal));
  const float em = ImGui::GetFontSize();
  const float avail = ImGui::GetContentRegionAvail().x;
  const float availY = ImGui::GetContentRegionAvail().y - 1.5f * em;
  const float side = std::max(6.0f * em, std::min(avail / static_cast<float>(s.heads) - em,
                                                  availY / static_cast<float>(s.layers) - 2.0f * em));
  ImGui::PushTextWrapPos(0.0f);
  ImGui::Text("Probe attention at step %lld%s: layer × head, queries down, keys across (causal: blocked cells crossed)",
              static_cast<long long>(lab.run.shown.step), lab.ablation.mask.any() ? " with the ticked heads off or cut" : "");
  ImGui::PopTextWrapPos();
  HeatmapHover drawn;
  for (int l = 0; l < s.layers; ++l) {
    for (int i = 0; i < s.heads; ++i) {
      if (i > 0) ImGui::SameLine();
      ImGui::PushID(l * 1000 + i);
      ImGui::BeginGroup();
      ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(headColor(l * s.heads + i)), "layer %d head %d%s", l, i,
                         lab.ablation.headOff(l, i) ? " (off)" : "");
      slice.head = i;
      slice.data = s.weights.data() + static_cast<std::size_t>(l * s.heads + i) * static_cast<std::size_t>(T * T);
      TextureKey key{lab.run.shown.pictureSerial, kTrainGridSlot + l, 0, i, probabilityColormap(ctx.view), 0.0f, 1.0f};
      HeatmapSpec spec;
      spec.slice = &slice;
      spec.textures = &ctx.textures;
      spec.textureKey = key;
      spec.kind = DataKind::Probability;
      spec.colormap = key.colormap;
      spec.range = {0.0f, 1.0f};
      spec.interactive = false;
      spec.showNumbers = false;
      spec.axisLabels = true;
      const HeatmapHover h = drawHeatmap("map", spec, nullptr, ImVec2(side, side));
      if (l == 0 && i == 0) drawn = h;
      ctx.probes.recordLastItem("train_map_L" + std::to_string(l) + "_h" + std::to_string(i));
      ImGui::EndGroup();
      ImGui::PopID();
    }
  }
  // The heatmap labels every k-th token when a cell is smaller than a line of text: say which.
  const std::string labelled = tokenLabelNote(T, drawn.plotMax.y - drawn.plotMin.y, drawn.plotMax.x - drawn.plotMin.x,
                                              ImGui::GetFontSize());
  ImGui::TextDisabled("%s", labelled.c_str());
  ctx.probes.recordLabel("train_grid_labels", labelled);
}

bool drawModeSwitch(TrainLab& lab, PracticeState& practice, UiContext& ctx) {
  if (ImGui::RadioButton("Pipeline", !lab.active && !practice.active)) lab.active = practice.active = false;
  ctx.probes.recordLastItem("mode_pipeline");
  ImGui::SameLine();
  if (ImGui::RadioButton("Train", lab.active)) {
    lab.active = true;
    practice.active = false;
  }
  ctx.probes.recordLastItem("mode_train");
  ctx.probes.recordLastItem(std::string("tab_") + kTrainModeId);  // the exploration test's name for it
  ImGui::SameLine();
  if (ImGui::RadioButton("Practice", practice.active)) {
    practice.active = true;
    lab.active = false;
  }
  ctx.probes.recordLastItem("mode_practice");
  ctx.probes.recordLabel("mode", lab.active ? "train" : practice.active ? "practice" : "pipeline");
  if (practice.active) {
    ImGui::SameLine();
    ImGui::TextDisabled("— implement attention in your own editor: each save is checked stage by stage");
    drawPractice(practice, ctx);
    return true;
  }
  if (!lab.active) return false;
  ImGui::SameLine();
  ImGui::TextDisabled("— train a tiny transformer and watch its heads take roles");
  const float h = ImGui::GetContentRegionAvail().y;
  const ImGuiTableFlags flags = ImGuiTableFlags_Resizable | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingStretchProp;
  if (ImGui::BeginTable("train layout", 2, flags, ImVec2(0, h))) {
    // The left column holds the roles table (scores, off and read-cut toggles per head): 40 %.
    ImGui::TableSetupColumn("left", ImGuiTableColumnFlags_WidthStretch, 0.40f);
    ImGui::TableSetupColumn("right", ImGuiTableColumnFlags_WidthStretch, 0.60f);
    ImGui::TableNextRow(ImGuiTableRowFlags_None, h);
    ImGui::TableNextColumn();
    // The panels are the one panel list's Train areas (panels/panel_list.cpp), drawn from `lab`.
    TrainLab* const before = ctx.train;
    ctx.train = &lab;
    ImGui::BeginChild("train left", ImVec2(0, h - 2 * ImGui::GetStyle().CellPadding.y));
    drawPanelArea(ctx, PanelArea::TrainLeft);
    ImGui::EndChild();
    ImGui::TableNextColumn();
    ImGui::BeginChild("train right", ImVec2(0, h - 2 * ImGui::GetStyle().CellPadding.y));
    drawPanelArea(ctx, PanelArea::TrainRight);
    ImGui::EndChild();
    ctx.train = before;
    ImGui::EndTable();
  }
  return true;
}

}  // namespace mhascope::app
