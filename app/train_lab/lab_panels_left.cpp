// The Train mode's left column: setup, run controls, roles (ablation, contact-sheet heads, the
// lesson), keep it (checkpoints, exports, Open in pipeline).
#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <tuple>
#include <vector>

#include "train_lab/lab_figures.hpp"
#include "train_lab/lab_panels.hpp"
#include "widgets/colors.hpp"
#include "widgets/wrapped_text.hpp"
#include "widgets/text_field.hpp"

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
  TrainForm& f = lab.setup.form;
  const TrainForm before = f;
  labelled("task");
  ImGui::Combo("##task", &f.task, kTaskNames, 4);
  ctx.probes.recordLastItem("train_task");
  ctx.probes.recordLabel("train_task", kTaskNames[std::clamp(f.task, 0, 3)]);
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetColorU32(ImGuiCol_TextDisabled));
  ImGui::TextWrapped("%s", kTaskHelp[std::clamp(f.task, 0, 3)]);
  ImGui::PopStyleColor();
  if (f.task == 3) {
    labelled("text file");
    textFieldWithHint("##text", "/path/to/file.txt", &f.textPath);
    ctx.probes.recordLastItem("train_text");
    if (ImGui::IsItemHovered()) {
      ImGui::SetTooltip("A UTF-8 text file of at most %llu MiB; its characters are the vocabulary. It is read when\n"
                        "you press Train or Reset (a large file takes a while; the window keeps drawing).",
                        static_cast<unsigned long long>(kMaxTextBytes >> 20));
    }
  }
  // Two settings per row, so the whole column fits beside the run's pictures.
  if (ImGui::BeginTable("form", 4, ImGuiTableFlags_SizingStretchProp)) {
    for (int c = 0; c < 4; ++c) {
      if (c % 2 == 0) ImGui::TableSetupColumn("label", ImGuiTableColumnFlags_WidthFixed);
      else ImGui::TableSetupColumn("value", ImGuiTableColumnFlags_WidthStretch, 1.0f);
    }
    // Each field keeps what was typed (nothing is cut to a limit silently): a value out of range
    // is explained under the form, and the tooltip gives the range.
    const std::string maxSeq = std::to_string(kMaxSeq), maxD = std::to_string(kMaxDModel), maxV = std::to_string(kMaxVocab);
    const std::string headsRange = "heads h: 1 to " + maxD + ", and h must divide d_model";
    const std::string dModelRange = "d_model: 1 to " + maxD + ", a multiple of h";
    const std::string vocabRange = "vocab V: 2 to " + maxV;
    const std::string seqRange = "sequence length T: 2 to " + maxSeq +
                                 " (memory grows as batch x h x T^2: the run's estimate is\nchecked against the memory "
                                 "budget before anything is allocated)";
    auto cell = [&](const char* label, const char* probe, const char* range, auto&& widget) {
      ImGui::TableNextColumn();
      ImGui::AlignTextToFramePadding();
      ImGui::TextUnformatted(label);
      ImGui::TableNextColumn();
      ImGui::SetNextItemWidth(-1);
      widget();
      ctx.probes.recordLastItem(probe);
      if (range && ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) ImGui::SetTooltip("%s", range);
    };
    cell("layers L", "train_layers", "layers: 1 to 4", [&] { ImGui::InputInt("##layers", &f.layers, 0); });
    cell("heads h", "train_heads", headsRange.c_str(),
         [&] { ImGui::InputInt("##heads", &f.heads, 0); });
    cell("d_model", "train_dmodel", dModelRange.c_str(), [&] { ImGui::InputInt("##dmodel", &f.dModel, 0); });
    cell("MLP", "train_mlp", "an MLP (d_mlp = 4 d_model) after each attention layer", [&] { ImGui::Checkbox("##mlp", &f.mlp); });
    cell("positions", "train_positions",
         "learned: a table added to the embeddings\nRoPE: q and k turned by their position in every layer (no table)\n"
         "ALiBi: a fixed bias -m_i (t - j) on the scores (no table, no parameters)",
         [&] {
           // Three buttons rather than a combo: every choice in sight, each one click (and one probe).
           const char* names[] = {"learned", "RoPE", "ALiBi"};
           const char* probes[] = {"train_positions_learned", "train_positions_rope", "train_positions_alibi"};
           // Each beside the previous one when it fits in the cell, else under it: a name is never cut.
           const float cellRight = ImGui::GetCursorScreenPos().x + ImGui::GetContentRegionAvail().x;
           for (int i = 0; i < 3; ++i) {
             const float w = ImGui::GetFrameHeight() + ImGui::GetStyle().ItemInnerSpacing.x + ImGui::CalcTextSize(names[i]).x;
             if (i && ImGui::GetItemRectMax().x + ImGui::GetStyle().ItemSpacing.x + w <= cellRight) ImGui::SameLine();
             ImGui::RadioButton(names[i], &f.positions, i);
             ctx.probes.recordLastItem(probes[i]);
           }
         });
    cell("K/V heads N", "train_kv_heads",
         "N K/V heads shared by the h query heads: N divides h (1: multi-query attention);\n0: N = h, multi-head attention",
         [&] { ImGui::InputInt("##kvheads", &f.kvHeads, 0); });
    cell("RoPE base", "train_rope_base", "RoPE only: the angle of pair i at position t is t * base^(-2i/d_k)", [&] {
      ImGui::BeginDisabled(f.positions != static_cast<int>(TrainPositions::Rope));
      ImGui::InputFloat("##ropebase", &f.ropeBase, 0, 0, "%g");
      ImGui::EndDisabled();
    });
    cell("vocab V", "train_vocab", f.task == 3 ? "the text file's characters decide the vocabulary" : vocabRange.c_str(),
         [&] {
           ImGui::BeginDisabled(f.task == 3);  // the text file decides
           ImGui::InputInt("##vocab", &f.vocab, 0);
           ImGui::EndDisabled();
         });
    cell("seq T", "train_seq", seqRange.c_str(),
         [&] { ImGui::InputInt("##seq", &f.seq, 0); });
    cell("batch", "train_batch", "batch: 1 to 4096 sequences per step", [&] { ImGui::InputInt("##batch", &f.batch, 0); });
    cell("lr", "train_lr", "AdamW's learning rate, > 0", [&] { ImGui::InputFloat("##lr", &f.lr, 0, 0, "%.0e"); });
    cell("steps", "train_steps",
         "steps: the step the run ends at, counted from 0 (a loaded checkpoint's run goes on up to it; raise it and "
         "press Train to go on), as `mhascope train --steps`",
         [&] { ImGui::InputInt("##steps", &f.steps, 0); });
    cell("seed", "train_seed", "seed: the same seed gives the same run", [&] { ImGui::InputScalar("##seed", ImGuiDataType_U64, &f.seed); });
    cell("eval every", "train_eval_every",
         "evaluate on the probe sequence at every multiple of N steps counted from step 0, and at the last step "
         "(N >= 1), as `mhascope train --eval-every`",
         [&] { ImGui::InputInt("##eval", &f.evalEvery, 0); });
    ImGui::EndTable();
  }
  if (!(before == f)) {
    lab.setup.formError = checkForm(f, lab.setup.memoryBudgetBytes);  // explained at once, as the pipeline's controls do
  }
  showMessage(lab.setup.formError, true);
  ctx.probes.recordLabel("train_form_error", lab.setup.formError);
  ImGui::PushTextWrapPos(0.0f);
  if (lab.run.runForm && !(f == *lab.run.runForm)) {
    TrainForm moreSteps = *lab.run.runForm;
    moreSteps.steps = f.steps;
    const char* what = f == moreSteps && lab.run.view && f.steps > lab.run.view->step
                           ? "Changed steps: Train continues this run up to them."
                           : "Changed settings: Train starts a new run with them (Reset: a new run paused at step 0).";
    ImGui::TextUnformatted(what);
    ctx.probes.recordLabel("train_form_hint", what);
  } else {
    const char* what = "Same settings and defaults as `mhascope train`; changes apply on Train / Reset.";
    ImGui::TextDisabled("%s", what);
    ctx.probes.recordLabel("train_form_hint", what);
  }
  ImGui::PopTextWrapPos();
}

void drawTrainRun(TrainLab& lab, UiContext& ctx) {
  const bool running = lab.run.running();
  const bool canRun = lab.setup.formError.empty() && !lab.run.busy();
  ImGui::BeginDisabled(!canRun || running);
  if (ImGui::Button("\xe2\x96\xb6 Train")) ctx.requests.file([&lab] { trainPlay(lab); });
  ctx.probes.recordLastItem("train_play");
  ImGui::EndDisabled();
  ImGui::SameLine();
  ImGui::BeginDisabled(!running);
  if (ImGui::Button("\xe2\x9d\x9a\xe2\x9d\x9a Pause")) lab.run.session.pause();
  ctx.probes.recordLastItem("train_pause");
  ImGui::EndDisabled();
  ImGui::SameLine();
  ImGui::BeginDisabled(running || !canRun);
  if (ImGui::Button("Step")) ctx.requests.file([&lab] { trainStep(lab); });
  ctx.probes.recordLastItem("train_step");
  ImGui::EndDisabled();
  ImGui::SameLine();
  ImGui::BeginDisabled(!canRun);
  if (ImGui::Button("Reset")) ctx.requests.file([&lab] { trainReset(lab); });
  ctx.probes.recordLastItem("train_reset");
  ImGui::EndDisabled();
  ImGui::PushTextWrapPos(0.0f);
  if (lab.run.job) {
    const std::string doing = lab.run.job->kind == LabJob::Kind::Load ? "Loading " + lab.run.job->status + " ..." : lab.run.job->status;
    ImGui::TextUnformatted(doing.c_str());
    ctx.probes.recordLabel("train_job", doing);
  } else {
    ctx.probes.recordLabel("train_job", "");
  }
  if (lab.messageAt == TrainLab::Said::Run) showMessage(lab.message, lab.messageIsError);
  if (!lab.run.view) {
    ImGui::TextDisabled("No run yet: press Train (or Reset to start paused at step 0).");
    ctx.probes.recordLabel("train_state", "none");
    ImGui::PopTextWrapPos();
    return;
  }
  const SessionView& v = *lab.run.view;
  std::string line = std::string(runStateName(v.state)) + " · step " + std::to_string(v.step) + " of " +
                     std::to_string(v.lastStep);
  char num[64];
  if (v.state == RunState::Running) {
    std::snprintf(num, sizeof num, " · %.0f steps/s", v.stepsPerSecond);
    line += num;
  }
  // The training batch's loss exists once a step ran (or the checkpoint saved it): never a made-up 0.
  if (v.trainLossKnown) {
    std::snprintf(num, sizeof num, " · train loss %.3f", v.trainLoss);
    line += num;
  } else {
    line += " · no step trained yet";
  }
  ImGui::TextUnformatted(line.c_str());
  ctx.probes.recordLabel("train_state", runStateName(v.state));
  ctx.probes.recordLabel("train_line", line);
  if (lab.pacing.runningFrameAt.size() >= 2) {
    char perf[200];
    std::snprintf(perf, sizeof perf, "While training, the window redraws about %.0f times a second.", lab.pacing.redrawsPerSecond());
    std::string text = perf;
    if (lab.pacing.runStepsPerSecond > 0) {
      std::snprintf(perf, sizeof perf, " The last run trained %.0f steps/s (%.0f from Train to the end, evaluations and redraws included).",
                    lab.pacing.runStepsPerSecond, lab.pacing.runWallStepsPerSecond);
      text += perf;
    }
    ImGui::TextDisabled("%s", text.c_str());
    ctx.probes.recordLabel("train_perf", text);
  }
  if (v.state == RunState::Failed) showMessage(budgetInWindowWords(v.error), true);
  ctx.probes.recordLabel("train_error", v.state == RunState::Failed ? budgetInWindowWords(v.error) : std::string());
  ImGui::ProgressBar(v.lastStep > 0 ? static_cast<float>(v.step) / static_cast<float>(v.lastStep) : 0.0f,
                     ImVec2(-1, 0.35f * ImGui::GetFontSize()), "");
  if (lab.run.historyMissing) {
    const std::string note = "This checkpoint did not save its training history: the curves, roles and circuit start at "
                             "step " + std::to_string(lab.run.runStartStep) + ", where it was loaded.";
    ImGui::TextUnformatted(note.c_str());
    ctx.probes.recordLabel("train_history", note);
  } else {
    ctx.probes.recordLabel("train_history", "");
  }
  const std::int64_t formed = circuitFormedAt(v.history, v.history.size());
  std::string circuit = formed >= 0 ? "formed at step " + std::to_string(formed) : std::string("not yet");
  if (lab.run.historyMissing && formed >= 0 && formed <= lab.run.runStartStep) {
    circuit = "formed by step " + std::to_string(lab.run.runStartStep) + " (when was not saved with the checkpoint)";
  }
  ctx.probes.recordLabel("train_circuit", circuit);
  if (v.settings->task.kind == TaskKind::Induction) {
    ImGui::Text("induction circuit: %s", circuit.c_str());
  }
  ImGui::PopTextWrapPos();
}

void drawTrainRoles(TrainLab& lab, UiContext& ctx) {
  ImGui::Separator();  // between the run's controls and its table
  if (!lab.run.shown.evaluation) return;
  const Evaluation& e = *lab.run.shown.evaluation;
  const SessionView& v = *lab.run.view;
  ImGui::Text("Roles at step %lld", static_cast<long long>(lab.run.shown.step));
  // One threshold for every role, and where it comes from (analysis/head_roles.hpp kRoleThreshold).
  ImGui::PushTextWrapPos(0.0f);
  ImGui::TextDisabled("A role needs a score >= %.2f: at least half of the head's attention goes to that pattern, as much "
                      "as to all other keys together (an even spread over a query's t+1 keys scores about 1/(t+1)).",
                      kRoleThreshold);
  ImGui::PopTextWrapPos();
  const Evaluation& orig = v.history[lab.run.shown.index];
  char loss[200];
  if (lab.ablation.mask.any()) {
    std::snprintf(loss, sizeof loss, "probe loss %.3f -> %.3f, accuracy %.2f -> %.2f with the ticked heads off or cut",
                  orig.loss, e.loss, orig.accuracy, e.accuracy);
  } else {
    std::snprintf(loss, sizeof loss, "probe loss %.3f, accuracy %.2f", e.loss, e.accuracy);
  }
  ImGui::TextUnformatted(loss);
  ctx.probes.recordLabel("train_probe_loss", loss);
  // Each head: a row of its numbers and toggles, then its role in words on a row of its own, written
  // from the first cell across the others and wrapped at spaces to the
  // table's visible width: a role ("previous-token at first occurrences 0.91") is longer than all the
  // scores together, and in a column of its own it was cut inside its words. The table scrolls
  // sideways when the column is narrower than its numbers; its height is that of its rows (each row's
  // height is set), so it never scrolls up and down and the wheel over it scrolls the column.
  const ImGuiStyle& style = ImGui::GetStyle();
  const ImGuiTableFlags flags = ImGuiTableFlags_BordersOuter | ImGuiTableFlags_BordersInnerH | ImGuiTableFlags_SizingFixedFit |
                                ImGuiTableFlags_ScrollX;
  const char* columns[] = {"head", "prev", "new", "seen", "prefix", "copy", "self", "first", "entropy",
                           "off", "cut K Q V", "sheet"};
  const float roleWidth = std::max(1.0f, ImGui::GetContentRegionAvail().x - 2.0f * style.CellPadding.x - style.IndentSpacing);
  std::vector<std::string> roles, wrappedRoles;
  const float numbersH = ImGui::GetFrameHeight() + 2.0f * style.CellPadding.y;
  float tableH = ImGui::GetTextLineHeight() + 2.0f * style.CellPadding.y + style.ScrollbarSize + 4.0f;
  for (int l = 0; l < e.layers; ++l) {
    for (int i = 0; i < e.heads; ++i) {
      roles.push_back(lab.ablation.headOff(l, i) ? std::string("switched off") : roleOf(e.at(l, i), l));
      wrappedRoles.push_back(wrapAtSpaces(roles.back(), roleWidth));
      const auto lines = static_cast<float>(std::count(wrappedRoles.back().begin(), wrappedRoles.back().end(), '\n') + 1);
      tableH += numbersH + lines * ImGui::GetTextLineHeight() + 2.0f * style.CellPadding.y + 2.0f;
    }
  }
  const ImVec2 tableMin = ImGui::GetCursorScreenPos();
  const ImVec2 tableMax(tableMin.x + ImGui::GetContentRegionAvail().x, tableMin.y + tableH);
  if (ImGui::BeginTable("roles", 12, flags, ImVec2(0.0f, tableH))) {
    // The head column as wide as its names: the role rows' words, written across, must not widen it.
    const float headW = std::max(ImGui::CalcTextSize("head").x,
                                 ImGui::CalcTextSize(formatText("L%d h%d", e.layers - 1, e.heads - 1).c_str()).x);
    for (const char* h : columns) {
      if (std::string(h) == "head") {
        ImGui::TableSetupColumn(h, ImGuiTableColumnFlags_WidthFixed, headW);
      } else {
        ImGui::TableSetupColumn(h);
      }
    }
    ImGui::TableHeadersRow();
    for (int l = 0; l < e.layers; ++l) {
      for (int i = 0; i < e.heads; ++i) {
        ImGui::PushID(l * 1000 + i);
        const train::HeadScores& s = e.at(l, i);
        const std::string at = "_L" + std::to_string(l) + "_h" + std::to_string(i);
        const std::size_t k = static_cast<std::size_t>(l * e.heads + i);
        // A head's two rows on one background, the next head's on the other.
        const ImU32 background = ImGui::GetColorU32(k % 2 ? ImGuiCol_TableRowBgAlt : ImGuiCol_TableRowBg);
        ImGui::TableNextRow(ImGuiTableRowFlags_None, numbersH);
        ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg0, background);
        ImGui::TableNextColumn();
        ImGui::AlignTextToFramePadding();
        ImGui::PushStyleColor(ImGuiCol_Text, headColor(l * e.heads + i));
        ImGui::Text("L%d h%d", l, i);
        ImGui::PopStyleColor();
        const std::string& role = roles[k];
        ctx.probes.recordLabel("train_role" + at, role);
        for (double x : {s.prevToken, s.prevTokenNew, s.prevTokenSeen, s.induction, s.copying, s.self, s.firstToken,
                         s.entropy}) {
          ImGui::TableNextColumn();
          ImGui::AlignTextToFramePadding();
          ImGui::Text("%.2f", x);
        }
        char scores[96];
        std::snprintf(scores, sizeof scores, "prefix %.2f copying %.2f new %.2f seen %.2f", s.induction, s.copying,
                      s.prevTokenNew, s.prevTokenSeen);
        ctx.probes.recordLabel("train_scores" + at, scores);
        ImGui::TableNextColumn();
        bool off = lab.ablation.headOff(l, i);
        if (ImGui::Checkbox("##off", &off)) lab.ablation.setHeadOff(l, i, off);
        ctx.probes.recordLastItem("train_off" + at);
        if (ImGui::IsItemHovered()) ImGui::SetTooltip("switch this head off: its output is zeroed before W_o");
        ImGui::TableNextColumn();
        // Cuts read by later layers only: in the last layer there is no later layer to cut from.
        const bool later = l + 1 < e.layers;
        ImGui::BeginDisabled(!later || lab.ablation.headOff(l, i));
        for (auto [bit, name, what] : {std::tuple{kReadKey, "K", "keys"}, std::tuple{kReadQuery, "Q", "queries"},
                                       std::tuple{kReadValue, "V", "values"}}) {
          if (bit != kReadKey) ImGui::SameLine(0.0f, 0.2f * ImGui::GetFontSize());
          bool cut = lab.ablation.readCut(l, i, bit);
          ImGui::PushID(name);
          if (ImGui::Checkbox("##cut", &cut)) lab.ablation.setReadCut(l, i, bit, cut);
          ImGui::PopID();
          ctx.probes.recordLastItem(std::string("train_cut") + name + at);
          if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) {
            ImGui::SetTooltip(later ? "cut this head's output from later layers' %s only: the residual stream, the MLPs\n"
                                      "and the other reads still carry it"
                                    : "the last layer: no later layer reads its output (%s)",
                              what);
          }
        }
        ImGui::EndDisabled();
        ImGui::TableNextColumn();
        if (k < lab.files.sheetHeads.size()) {
          bool on = lab.files.sheetHeads[k];
          if (ImGui::Checkbox("##sheet", &on)) lab.files.sheetHeads[k] = on;
          if (ImGui::IsItemHovered()) ImGui::SetTooltip("include this head in the exported contact sheet");
        }
        ImGui::TableNextRow();
        ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg0, background);
        ImGui::TableNextColumn();
        // Drawn across the row's cells, clipped by the table's visible rectangle, not the cell's.
        const ImVec2 textAt(ImGui::GetCursorScreenPos().x + style.IndentSpacing, ImGui::GetCursorScreenPos().y);
        ImDrawList* dl = ImGui::GetWindowDrawList();
        dl->PushClipRect(tableMin, tableMax, false);
        dl->AddText(textAt, ImGui::GetColorU32(ImGuiCol_Text), wrappedRoles[k].c_str());
        dl->PopClipRect();
        ImGui::Dummy(ImVec2(1.0f, ImGui::CalcTextSize(wrappedRoles[k].c_str()).y));
        ImGui::PopID();
      }
    }
    ImGui::EndTable();
  }
  ImGui::PushTextWrapPos(0.0f);
  ImGui::TextDisabled("prev: weight on key t-1; new / seen: the same where the query's token occurs for the first time "
                      "/ is a repeat · prefix (prefix matching, on repeated random tokens): total weight on the keys "
                      "that follow an earlier copy of the query's token · copy: share of those queries whose head "
                      "output ranks the attended token first in the logits — an induction head needs prefix and copy "
                      ">= %.2f, in layer 1 or later · self: on key t · first: on key 0 · entropy: nats per row · off: the head's output "
                      "zeroed · cut K Q V: the head's output taken out of what later layers' keys / queries / "
                      "values read, nothing else · either box is an ablation: the table then shows that run",
                      kCopyingThreshold);
  ImGui::PopTextWrapPos();
  ImGui::Spacing();
  if (lab.ablation.mask.any()) {
    // The table above shows the masked run: say what it does, not what the heads were.
    std::string joined;
    for (const std::string& p : lab.ablation.ablationText) {
      ImGui::TextWrapped("%s", p.c_str());
      joined += (joined.empty() ? "" : " ") + p;
    }
    ctx.probes.recordLabel("train_ablation_lesson", joined);
    ImGui::TextDisabled("Untick the heads to read how this run's circuit formed.");
    return;
  }
  ctx.probes.recordLabel("train_ablation_lesson", "none");
  for (std::string p : circuitLesson(v.history, lab.run.shown.index, v.settings->task.kind)) {
    if (lab.run.historyMissing) p = withoutUnsavedHistory(p, lab.run.runStartStep);
    ImGui::TextWrapped("%s", p.c_str());
  }
  const std::string note = alibiPreviousTokenNote(v.settings->model, v.settings->task);
  if (!note.empty()) ImGui::TextWrapped("%s", note.c_str());
  ctx.probes.recordLabel("train_alibi_note", note.empty() ? "none" : note);
}

void drawTrainKeep(TrainLab& lab, UiContext& ctx) {
  const std::string& folder = ctx.view.exportUi.folder;
  const std::string task = lab.run.view ? taskName(lab.run.view->settings->task.kind) : kTaskNames[std::clamp(lab.setup.form.task, 0, 3)];
  // A path still equal to the default proposed last follows the task and the folder; a typed one
  // stays (until the export folder changes, which proposes them all afresh).
  const bool newFolder = lab.files.lastFolder != folder;
  auto propose = [&](std::string& path, std::string& proposed, const std::string& fresh) {
    if (newFolder || path.empty() || path == proposed) path = fresh;
    proposed = fresh;
  };
  propose(lab.files.checkpointPath, lab.files.defaultCheckpoint, folder + "/" + task + ".safetensors");
  propose(lab.files.sheetPath, lab.files.defaultSheet, folder + "/" + task + "_contact_sheet.png");
  propose(lab.files.curvesPath, lab.files.defaultCurves, folder + "/" + task + "_curves.png");
  propose(lab.files.animationPath, lab.files.defaultAnimation, folder + "/" + task + "_training.gif");
  propose(lab.files.timelinePath, lab.files.defaultTimeline, folder + "/" + task + "_timeline.html");
  lab.files.lastFolder = folder;
  const bool have = lab.run.view && !lab.run.view->history.empty();
  const int layers = lab.run.view ? lab.run.view->settings->model.layers : 1;
  lab.openLayer = std::clamp(lab.openLayer, 0, std::max(0, layers - 1));
  ImGui::BeginDisabled(!have || lab.run.busy());
  if (ImGui::Button("Open in pipeline")) {
    ctx.requests.file([&lab, &state = ctx.state, &view = ctx.view] { trainOpenInPipeline(lab, state, view); });
  }
  ctx.probes.recordLastItem("train_open_pipeline");
  ImGui::EndDisabled();
  ImGui::SameLine();
  ImGui::SetNextItemWidth(-1);
  ImGui::BeginDisabled(layers < 2);
  ImGui::SliderInt("##openlayer", &lab.openLayer, 0, std::max(0, layers - 1), "layer %d", ImGuiSliderFlags_AlwaysClamp);
  ImGui::EndDisabled();
  ctx.probes.recordLastItem("train_open_layer");  // "##openlayer": the item is the slider's frame
  ctx.probes.recordLabel("train_open_layer", "layer " + std::to_string(lab.openLayer));
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) {
    ImGui::SetTooltip("this layer's MHA at the chosen step, on its real input (LN1 of the residual stream for the\n"
                      "probe sequence), in the stepper, heatmaps, lessons and export — as --checkpoint --layer");
  }
  if (lab.messageAt == TrainLab::Said::Pipeline) showMessage(lab.message, lab.messageIsError);
  labelled("checkpoint");
  textField("##ckpt", &lab.files.checkpointPath);
  ctx.probes.recordLastItem("train_checkpoint_path");
  ctx.probes.recordLabel("train_checkpoint_path", lab.files.checkpointPath);
  ImGui::BeginDisabled(!have || lab.run.busy());
  if (ImGui::Button("Save checkpoint")) ctx.requests.file([&lab] { trainSaveCheckpoint(lab); });
  ctx.probes.recordLastItem("train_save");
  ImGui::EndDisabled();
  ImGui::SameLine();
  ImGui::BeginDisabled(lab.run.busy());
  if (ImGui::Button("Load checkpoint")) ctx.requests.file([&lab] { trainLoadCheckpoint(lab); });
  ctx.probes.recordLastItem("train_load");
  ImGui::EndDisabled();
  if (lab.run.job && lab.run.job->kind == LabJob::Kind::Load) {
    ImGui::SameLine();
    ImGui::TextDisabled("loading ...");
  }
  if (lab.messageAt == TrainLab::Said::Checkpoint) showMessage(lab.message, lab.messageIsError);
  labelled("sheet steps");
  textFieldWithHint("##sheetsteps", "empty: six evenly spaced, or e.g. 0 200 400 800", &lab.files.sheetSteps);
  labelled("contact sheet");
  textField("##sheetpath", &lab.files.sheetPath);
  ctx.probes.recordLabel("train_sheet_path", lab.files.sheetPath);
  labelled("curves");
  textField("##curvespath", &lab.files.curvesPath);
  ctx.probes.recordLabel("train_curves_path", lab.files.curvesPath);
  labelled("animation");
  textField("##animationpath", &lab.files.animationPath);
  ctx.probes.recordLabel("train_animation_path", lab.files.animationPath);
  ImGui::BeginDisabled(!have);
  // Written as the window shows them (the view's "see as" preview).
  if (ImGui::Button("Export contact sheet")) ctx.requests.file([&lab, seeAs = ctx.view.seeAs] { trainExportSheet(lab, seeAs); });
  ctx.probes.recordLastItem("train_export_sheet");
  ImGui::SameLine();
  if (ImGui::Button("Export curves")) ctx.requests.file([&lab, seeAs = ctx.view.seeAs] { trainExportCurves(lab, seeAs); });
  ctx.probes.recordLastItem("train_export_curves");
  ImGui::SameLine();
  if (ImGui::Button("Export animation")) ctx.requests.file([&lab, seeAs = ctx.view.seeAs] { trainExportAnimation(lab, seeAs); });
  ctx.probes.recordLastItem("train_export_animation");
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) {
    ImGui::SetTooltip("The run as an animated GIF: up to %d kept attention pictures beside the curves, the step marked",
                      kDefaultAnimationFrames);
  }
  ImGui::EndDisabled();
  ImGui::TextDisabled(".png, .svg or .pdf by the file name");
  labelled("timeline");
  textField("##timelinepath", &lab.files.timelinePath);
  ctx.probes.recordLabel("train_timeline_path", lab.files.timelinePath);
  ImGui::BeginDisabled(!have);
  if (ImGui::Button("Export timeline (HTML)")) ctx.requests.file([&lab] { trainExportTimeline(lab); });
  ctx.probes.recordLastItem("train_export_timeline");
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) {
    ImGui::SetTooltip("one offline page of this run: a slider over the steps, every head's attention and role\n"
                      "then, the curves with the step marked (as mhascope train --timeline F.html); never\n"
                      "replaces a file");
  }
  ImGui::EndDisabled();
  if (lab.messageAt == TrainLab::Said::Export) showMessage(lab.message, lab.messageIsError);
  ctx.probes.recordLabel("train_message", lab.message);
}

}  // namespace mhascope::app
