// The Train mode's left column: setup, run controls, roles (ablation, contact-sheet heads, the
// lesson), keep it (checkpoints, exports, Open in pipeline).
#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <cstdio>

#include "train_lab/lab_figures.hpp"
#include "train_lab/lab_panels.hpp"
#include "widgets/colors.hpp"

namespace mhascope::app {

using namespace mhascope::train;

namespace {

constexpr const char* kTaskNames[] = {"induction", "reverse", "sort", "text"};
// Two lines per task: what it is, and what pattern to expect.
constexpr const char* kTaskHelp[] = {
    "Random tokens with a random period k (6-16) repeated to fill T.\n"
    "Expect a layer-0 previous-token head feeding a layer-1 induction head, then the loss drops.",
    "a_1 ... a_n SEP a_n ... a_1: copy the first half backwards.\n"
    "Expect an anti-diagonal right of SEP in some head.",
    "a_1 ... a_n SEP sorted(a): write the first half in order.\n"
    "Expect heads that attend by token value, not by position.",
    "Next-character prediction on a UTF-8 text file you give.\n"
    "Expect previous-token heads (spelling) and heads that look further back.",
};

void labelled(const char* label) {
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted(label);
  ImGui::SameLine(ImGui::GetFontSize() * 8.5f);
  ImGui::SetNextItemWidth(-1);
}

void showMessage(const std::string& m, bool error) {
  if (m.empty()) return;
  ImGui::PushStyleColor(ImGuiCol_Text, error ? kErrorColor : kOkColor);
  ImGui::TextWrapped("%s", m.c_str());
  ImGui::PopStyleColor();
}

}  // namespace

void drawTrainSetup(TrainLab& lab, UiContext& ctx) {
  TrainForm& f = lab.form;
  const TrainForm before = f;
  labelled("task");
  ImGui::Combo("##task", &f.task, kTaskNames, 4);
  ctx.probes.recordLastItem("train_task");
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetColorU32(ImGuiCol_TextDisabled));
  ImGui::TextWrapped("%s", kTaskHelp[std::clamp(f.task, 0, 3)]);
  ImGui::PopStyleColor();
  if (f.task == 3) {
    labelled("text file");
    ImGui::InputTextWithHint("##text", "/path/to/file.txt", &f.textPath);
  }
  // Two settings per row, so the whole column fits beside the run's pictures.
  if (ImGui::BeginTable("form", 4, ImGuiTableFlags_SizingStretchProp)) {
    for (int c = 0; c < 4; ++c) {
      if (c % 2 == 0) ImGui::TableSetupColumn("label", ImGuiTableColumnFlags_WidthFixed);
      else ImGui::TableSetupColumn("value", ImGuiTableColumnFlags_WidthStretch, 1.0f);
    }
    auto cell = [](const char* label, auto&& widget) {
      ImGui::TableNextColumn();
      ImGui::AlignTextToFramePadding();
      ImGui::TextUnformatted(label);
      ImGui::TableNextColumn();
      ImGui::SetNextItemWidth(-1);
      widget();
    };
    cell("layers L", [&] { ImGui::InputInt("##layers", &f.layers, 0); });
    cell("heads h", [&] { ImGui::InputInt("##heads", &f.heads, 0); });
    cell("d_model", [&] { ImGui::InputInt("##dmodel", &f.dModel, 0); });
    cell("MLP", [&] { ImGui::Checkbox("##mlp", &f.mlp); });
    cell("vocab V", [&] {
      ImGui::BeginDisabled(f.task == 3);  // the text file decides
      ImGui::InputInt("##vocab", &f.vocab, 0);
      ImGui::EndDisabled();
    });
    cell("seq T", [&] { ImGui::InputInt("##seq", &f.seq, 0); });
    cell("batch", [&] { ImGui::InputInt("##batch", &f.batch, 0); });
    cell("lr", [&] { ImGui::InputFloat("##lr", &f.lr, 0, 0, "%.0e"); });
    cell("steps", [&] { ImGui::InputInt("##steps", &f.steps, 0); });
    ctx.probes.recordLastItem("train_steps");
    cell("seed", [&] { ImGui::InputInt("##seed", &f.seed, 0); });
    cell("eval every", [&] { ImGui::InputInt("##eval", &f.evalEvery, 0); });
    ctx.probes.recordLastItem("train_eval_every");
    ImGui::EndTable();
  }
  if (!(before == f)) {
    lab.formError = checkForm(f);  // explained at once, as the pipeline's controls do
  }
  showMessage(lab.formError, true);
  ImGui::TextDisabled("Same settings and defaults as `mhascope train`; they apply on Train / Reset.");
}

void drawTrainRun(TrainLab& lab, UiContext& ctx) {
  const bool running = lab.running();
  const bool canRun = lab.formError.empty();
  ImGui::BeginDisabled(!canRun || running);
  if (ImGui::Button("\xe2\x96\xb6 Train")) trainPlay(lab);
  ctx.probes.recordLastItem("train_play");
  ImGui::EndDisabled();
  ImGui::SameLine();
  ImGui::BeginDisabled(!running);
  if (ImGui::Button("\xe2\x9d\x9a\xe2\x9d\x9a Pause")) lab.session.pause();
  ctx.probes.recordLastItem("train_pause");
  ImGui::EndDisabled();
  ImGui::SameLine();
  ImGui::BeginDisabled(running || !canRun);
  if (ImGui::Button("Step")) {
    if (!lab.session.started()) trainReset(lab);
    lab.followLatest = true;
    lab.session.step(1);
  }
  ctx.probes.recordLastItem("train_step");
  ImGui::EndDisabled();
  ImGui::SameLine();
  ImGui::BeginDisabled(!canRun);
  if (ImGui::Button("Reset")) trainReset(lab);
  ctx.probes.recordLastItem("train_reset");
  ImGui::EndDisabled();
  if (!lab.view) {
    ImGui::TextDisabled("No run yet: press Train (or Reset to start paused at step 0).");
    ctx.probes.recordLabel("train_state", "none");
    return;
  }
  const SessionView& v = *lab.view;
  char line[160];
  std::snprintf(line, sizeof line, "%s · step %lld of %lld · %.0f steps/s · train loss %.3f", runStateName(v.state),
                static_cast<long long>(v.step), static_cast<long long>(v.lastStep), v.stepsPerSecond, v.trainLoss);
  ImGui::TextUnformatted(line);
  ctx.probes.recordLabel("train_state", runStateName(v.state));
  if (!lab.runningFrameMs.empty()) {
    char perf[128];
    std::snprintf(perf, sizeof perf, "window: frame work p95 %.1f ms over the last %zu frames while training",
                  static_cast<double>(lab.frameP95()), lab.runningFrameMs.size());
    std::string text = perf;
    if (lab.runStepsPerSecond > 0) {
      std::snprintf(perf, sizeof perf, "; last run %.0f steps/s (%.0f wall from Train to the end)", lab.runStepsPerSecond,
                    lab.runWallStepsPerSecond);
      text += perf;
    }
    ImGui::TextDisabled("%s", text.c_str());
    ctx.probes.recordLabel("train_perf", text);
  }
  if (v.state == RunState::Failed) showMessage(v.error, true);
  ImGui::ProgressBar(v.lastStep > 0 ? static_cast<float>(v.step) / static_cast<float>(v.lastStep) : 0.0f,
                     ImVec2(-1, 0.35f * ImGui::GetFontSize()), "");
  const std::int64_t formed = circuitFormedAt(v.history, v.history.size());
  const std::string circuit = formed >= 0 ? "formed at step " + std::to_string(formed) : std::string("not yet");
  ctx.probes.recordLabel("train_circuit", circuit);
  if (v.settings->task.kind == TaskKind::Induction) {
    ImGui::Text("induction circuit: %s", circuit.c_str());
  }
}

void drawTrainRoles(TrainLab& lab, UiContext& ctx) {
  if (!lab.shown.evaluation) return;
  const Evaluation& e = *lab.shown.evaluation;
  const SessionView& v = *lab.view;
  ImGui::Text("Roles at step %lld (a role needs a score >= %.2f)", static_cast<long long>(lab.shown.step), kRoleThreshold);
  const Evaluation& orig = v.history[lab.shown.index];
  char loss[160];
  if (lab.ablation.any()) {
    std::snprintf(loss, sizeof loss, "probe loss %.3f -> %.3f, accuracy %.2f -> %.2f with the ticked heads off",
                  orig.loss, e.loss, orig.accuracy, e.accuracy);
  } else {
    std::snprintf(loss, sizeof loss, "probe loss %.3f, accuracy %.2f", e.loss, e.accuracy);
  }
  ImGui::TextUnformatted(loss);
  ctx.probes.recordLabel("train_probe_loss", loss);
  const ImGuiTableFlags flags = ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit;
  if (ImGui::BeginTable("roles", 9, flags)) {
    for (const char* h : {"head", "role", "prev", "induct", "self", "first", "entropy", "off", "sheet"}) {
      ImGui::TableSetupColumn(h);
    }
    ImGui::TableHeadersRow();
    for (int l = 0; l < e.layers; ++l) {
      for (int i = 0; i < e.heads; ++i) {
        ImGui::PushID(l * 1000 + i);
        const HeadScores& s = e.at(l, i);
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::PushStyleColor(ImGuiCol_Text, headColor(l * e.heads + i));
        ImGui::Text("L%d h%d", l, i);
        ImGui::PopStyleColor();
        ImGui::TableNextColumn();
        const std::string role = lab.headOff(l, i) ? std::string("switched off") : roleOf(s);
        ImGui::TextUnformatted(role.c_str());
        ctx.probes.recordLabel("train_role_L" + std::to_string(l) + "_h" + std::to_string(i), role);
        for (double x : {s.prevToken, s.induction, s.self, s.firstToken, s.entropy}) {
          ImGui::TableNextColumn();
          ImGui::Text("%.2f", x);
        }
        ImGui::TableNextColumn();
        bool off = lab.headOff(l, i);
        if (ImGui::Checkbox("##off", &off)) lab.setHeadOff(l, i, off);
        ctx.probes.recordLastItem("train_off_L" + std::to_string(l) + "_h" + std::to_string(i));
        if (ImGui::IsItemHovered()) ImGui::SetTooltip("switch this head off: its output is zeroed before W_o");
        ImGui::TableNextColumn();
        const std::size_t k = static_cast<std::size_t>(l * e.heads + i);
        if (k < lab.sheetHeads.size()) {
          bool on = lab.sheetHeads[k];
          if (ImGui::Checkbox("##sheet", &on)) lab.sheetHeads[k] = on;
          if (ImGui::IsItemHovered()) ImGui::SetTooltip("include this head in the exported contact sheet");
        }
        ImGui::PopID();
      }
    }
    ImGui::EndTable();
  }
  ImGui::TextDisabled("prev: weight on key t-1 · induct: on the key after the earlier copy of the query's token ·\n"
                      "self: on key t · first: on key 0 · entropy: nats per row");
  ImGui::Spacing();
  for (const std::string& p : circuitLesson(v.history, lab.shown.index, v.settings->task.kind)) {
    ImGui::TextWrapped("%s", p.c_str());
  }
}

void drawTrainKeep(TrainLab& lab, UiContext& ctx) {
  const std::string& folder = ctx.view.exportUi.folder;
  const std::string task = lab.view ? taskName(lab.view->settings->task.kind) : kTaskNames[std::clamp(lab.form.task, 0, 3)];
  if (lab.checkpointPath.empty()) lab.checkpointPath = folder + "/" + task + ".safetensors";
  if (lab.sheetPath.empty() || lab.lastFolder != folder) lab.sheetPath = folder + "/" + task + "_contact_sheet.png";
  if (lab.curvesPath.empty() || lab.lastFolder != folder) lab.curvesPath = folder + "/" + task + "_curves.png";
  if (lab.lastFolder != folder) lab.checkpointPath = folder + "/" + task + ".safetensors";
  lab.lastFolder = folder;
  const bool have = lab.view && !lab.view->history.empty();
  const int layers = lab.view ? lab.view->settings->model.layers : 1;
  ImGui::BeginDisabled(!have);
  if (ImGui::Button("Open in pipeline")) trainOpenInPipeline(lab, ctx.state, ctx.view);
  ctx.probes.recordLastItem("train_open_pipeline");
  ImGui::EndDisabled();
  ImGui::SameLine();
  ImGui::SetNextItemWidth(-1);
  ImGui::SliderInt("##openlayer", &lab.openLayer, 0, std::max(0, layers - 1), "layer %d", ImGuiSliderFlags_AlwaysClamp);
  ctx.probes.recordLastFrame("train_open_layer");
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) {
    ImGui::SetTooltip("this layer's MHA at the chosen step, on its real input (LN1 of the residual stream for the\n"
                      "probe sequence), in the stepper, heatmaps, lessons and export — as --checkpoint --layer");
  }
  labelled("checkpoint");
  ImGui::InputText("##ckpt", &lab.checkpointPath);
  ImGui::BeginDisabled(!have);
  if (ImGui::Button("Save checkpoint")) trainSaveCheckpoint(lab);
  ctx.probes.recordLastItem("train_save");
  ImGui::EndDisabled();
  ImGui::SameLine();
  if (ImGui::Button("Load checkpoint")) trainLoadCheckpoint(lab);
  ctx.probes.recordLastItem("train_load");
  labelled("sheet steps");
  ImGui::InputTextWithHint("##sheetsteps", "empty: six evenly spaced, or e.g. 0 200 400 800", &lab.sheetSteps);
  labelled("contact sheet");
  ImGui::InputText("##sheetpath", &lab.sheetPath);
  labelled("curves");
  ImGui::InputText("##curvespath", &lab.curvesPath);
  ImGui::BeginDisabled(!have);
  if (ImGui::Button("Export contact sheet")) trainExportSheet(lab);
  ctx.probes.recordLastItem("train_export_sheet");
  ImGui::SameLine();
  if (ImGui::Button("Export curves")) trainExportCurves(lab);
  ctx.probes.recordLastItem("train_export_curves");
  ImGui::EndDisabled();
  ImGui::TextDisabled(".png, .svg or .pdf by the file name");
  showMessage(lab.message, lab.messageIsError);
  ctx.probes.recordLabel("train_message", lab.message);
}

}  // namespace mhascope::app
