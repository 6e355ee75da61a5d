// The Practice mode (practice_panel.hpp): the exercise and the learner's file on the left, the
// check's report on the right — every stage ✔/✘ in pipeline order, the cases, the diagnosis, and at
// the stage shown the learner's tensor | the expected one | their difference, as the Compare view.
#include "practice/practice_panel.hpp"

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "color/colormap.hpp"
#include "practice/exercises.hpp"
#include "practice/practice_compute.hpp"
#include "render/texture_keys.hpp"
#include "widgets/heatmap_view.hpp"

namespace mhascope::app {

namespace {

const ImVec4 kGood(0.35f, 0.75f, 0.40f, 1.0f), kBad(0.90f, 0.35f, 0.30f, 1.0f), kDim(0.6f, 0.6f, 0.6f, 1.0f);

// A path field: edits a copy, applied by `apply` on Enter.
bool pathField(const char* id, std::string& text) {
  char buf[1024];
  std::snprintf(buf, sizeof buf, "%s", text.c_str());
  ImGui::SetNextItemWidth(-ImGui::GetFontSize() * 8.0f);
  const bool enter = ImGui::InputText(id, buf, sizeof buf, ImGuiInputTextFlags_EnterReturnsTrue);
  text = buf;
  return enter;
}

void drawExerciseList(PracticeState& p, UiContext& ctx) {
  ImGui::TextUnformatted("Exercises");
  for (const practice::Exercise& e : practice::allExercises()) {
    ImGui::PushID(e.id.c_str());
    const bool done = p.progress.completed.count(e.id) > 0;
    const std::string label = std::string(done ? "\xe2\x9c\x94 " : "   ") + e.title;
    if (ImGui::Selectable(label.c_str(), p.exercise == e.id)) {
      if (p.exercise != e.id) {
        p.exercise = e.id;
        auto f = p.progress.files.find(e.id);
        p.file = f != p.progress.files.end() ? f->second : "";
        p.fileEdit = p.file;
        p.starterEdit.clear();
        p.shownStage = -1;
        p.message.clear();
      }
    }
    ctx.probes.recordLastItem("practice_exercise_" + e.id);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", e.summary.c_str());
    ImGui::PopID();
  }
}

void drawExercise(PracticeState& p, const practice::Exercise& e, UiContext& ctx) {
  // The file and its state first, so they stay in view on a small window; the statement below.
  ImGui::Separator();
  ImGui::TextUnformatted(e.title.c_str());
  ctx.probes.recordLabel("practice_title", e.title);
  ImGui::TextUnformatted("Your file (write it in your own editor; every save is checked)");
  pathField("##starter", p.starterEdit);
  ctx.probes.recordLastItem("practice_starter_path");
  ImGui::SameLine();
  if (ImGui::Button("Create starter")) ctx.requests.file([&p] { createStarter(p); });
  ctx.probes.recordLastItem("practice_start");
  if (pathField("##file", p.fileEdit) && !p.fileEdit.empty()) {
    const std::string path = p.fileEdit;
    ctx.requests.file([&p, path] { watchFile(p, path); });
  }
  ctx.probes.recordLastItem("practice_file");
  ImGui::SameLine();
  ImGui::BeginDisabled(p.fileEdit.empty());
  if (ImGui::Button("Watch")) {
    const std::string path = p.fileEdit;
    ctx.requests.file([&p, path] { watchFile(p, path); });
  }
  ctx.probes.recordLastItem("practice_watch");
  ImGui::EndDisabled();
  std::string state;
  if (p.file.empty()) {
    state = "no file yet: create the starter, or give your file's path (or drop it on the window)";
  } else if (p.seen.size < 0 && p.seen.file == p.file) {
    state = "watching " + p.file + " \xe2\x80\x94 it does not exist (yet)";
  } else if (p.check.busy()) {
    state = "checking " + p.file + " \xe2\x80\xa6";
  } else if (p.check.result && p.check.resultKey.file == p.file) {
    char t[96];
    std::snprintf(t, sizeof t, " \xe2\x80\x94 checked %s, %.1f s", p.checkedAt.c_str(), p.check.result->seconds);
    state = "watching " + p.file + t;
  } else {
    state = "watching " + p.file;
  }
  ImGui::PushTextWrapPos(0.0f);
  ImGui::TextDisabled("%s", state.c_str());
  if (!p.message.empty()) ImGui::TextColored(p.messageIsError ? kBad : kDim, "%s", p.message.c_str());
  ImGui::PopTextWrapPos();
  ctx.probes.recordLabel("practice_watching", state);
  ctx.probes.recordLabel("practice_message", p.message);
  ImGui::BeginDisabled(p.file.empty());
  if (ImGui::Button("Check now")) {
    ++p.again;
    p.nextPoll = 0;
  }
  ctx.probes.recordLastItem("practice_check_now");
  ImGui::EndDisabled();
  ImGui::SameLine();
  bool done = p.progress.completed.count(e.id) > 0;
  if (ImGui::Checkbox("Mark as complete", &done)) {
    if (done) p.progress.completed.insert(e.id);
    else p.progress.completed.erase(e.id);
    ctx.requests.file([&p] { saveProgress(p); });
  }
  ctx.probes.recordLastItem("practice_complete");
  ctx.probes.recordLabel("practice_complete", done ? "complete" : "not complete");

  ImGui::Separator();
  ImGui::PushTextWrapPos(0.0f);
  ImGui::TextUnformatted(e.statement.c_str());
  ImGui::PopTextWrapPos();
  if (ctx.monoFont) ImGui::PushFont(ctx.monoFont);
  ImGui::TextUnformatted(e.signature.c_str());
  if (ctx.monoFont) ImGui::PopFont();

  ImGui::Separator();
  const auto revealed = p.progress.hintsShown.find(e.id);
  const int shown = std::min(revealed == p.progress.hintsShown.end() ? 0 : revealed->second, static_cast<int>(e.hints.size()));
  ImGui::PushTextWrapPos(0.0f);
  for (int i = 0; i < shown; ++i) ImGui::Text("Hint %d: %s", i + 1, e.hints[static_cast<std::size_t>(i)].c_str());
  ImGui::PopTextWrapPos();
  if (shown < static_cast<int>(e.hints.size())) {
    const std::string label = "Show a hint (" + std::to_string(shown + 1) + " of " + std::to_string(e.hints.size()) + ")";
    if (ImGui::Button(label.c_str())) {
      p.progress.hintsShown[e.id] = shown + 1;
      ctx.requests.file([&p] { saveProgress(p); });
    }
    ctx.probes.recordLastItem("practice_hint");
  }
  ctx.probes.recordLabel("practice_hints", std::to_string(shown) + " of " + std::to_string(e.hints.size()));
  const bool pointsOpen = ImGui::CollapsingHeader("Complexity and interview points");
  ctx.probes.recordLastItem("practice_interview");  // the header, not the last point under it
  if (pointsOpen) {
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextUnformatted(e.complexity.c_str());
    ctx.probes.recordLabel("practice_interview_points", e.interviewPoints.empty() ? "" : e.interviewPoints.front());
    for (const std::string& point : e.interviewPoints) {  // BulletText would not wrap: a point is a sentence or two
      ImGui::Bullet();
      ImGui::TextUnformatted(point.c_str());
    }
    ImGui::PopTextWrapPos();
  }
  if (ImGui::Checkbox("Show the reference solution", &p.showSolution)) {
    p.solutionFor.clear();
    p.scrollToSolution = p.showSolution;
  }
  ctx.probes.recordLastItem("practice_solution");
  if (p.showSolution && p.solutionFor == e.id) {
    if (ImGui::SmallButton("Copy")) ImGui::SetClipboardText(p.solutionText.c_str());
    if (ctx.monoFont) ImGui::PushFont(ctx.monoFont);
    ImGui::InputTextMultiline("##solution", p.solutionText.data(), p.solutionText.size() + 1,
                              ImVec2(-1, ImGui::GetFontSize() * 20), ImGuiInputTextFlags_ReadOnly);
    if (ctx.monoFont) ImGui::PopFont();
    if (p.scrollToSolution) {  // below the statement and the hints: bring it on screen once
      ImGui::SetScrollHereY(1.0f);
      p.scrollToSolution = false;
    }
    ctx.probes.recordLabel("practice_solution_text", p.solutionText.substr(0, 200));
  }
}

// One 2-D slice (batch b, head h) of a (…, rows, cols) tensor.
Slice2D sliceOf(const Tensor& t, StageId stage, int b, int h) {
  Slice2D s;
  s.stage = stage;
  if (t.rank() == 0 || t.data.empty()) return s;
  s.cols = static_cast<int>(t.dim(t.rank() - 1));
  s.rows = t.rank() >= 2 ? static_cast<int>(t.dim(t.rank() - 2)) : 1;
  std::int64_t offset = 0;
  if (t.rank() >= 3) {
    const std::int64_t per = static_cast<std::int64_t>(s.rows) * s.cols;
    const std::int64_t heads = t.rank() >= 4 ? t.dim(1) : 1;
    const std::int64_t bb = std::clamp<std::int64_t>(b, 0, t.dim(0) - 1), hh = std::clamp<std::int64_t>(h, 0, heads - 1);
    offset = (bb * heads + hh) * per;
    if (t.rank() >= 4) s.head = static_cast<int>(hh);
    s.batchIndex = static_cast<int>(bb);
  }
  s.data = t.ptr() + offset;
  if (t.axes.size() == static_cast<std::size_t>(t.rank())) {
    s.colAxis = t.axes.back();
    if (t.rank() >= 2) s.rowAxis = t.axes[static_cast<std::size_t>(t.rank() - 2)];
  }
  for (int r = 0; r < s.rows; ++r) s.rowLabels.push_back(std::to_string(r));
  for (int c = 0; c < s.cols; ++c) s.colLabels.push_back(std::to_string(c));
  return s;
}

void drawTensor(const char* id, const char* title, const Slice2D& slice, ColormapId cmap, ColorRange range, DataKind kind,
                int slot, std::uint64_t serial, float side, UiContext& ctx) {
  ImGui::BeginGroup();
  ImGui::TextUnformatted(title);
  if (slice.rows == 0 || slice.cols == 0) {
    ImGui::Dummy(ImVec2(side, side));
    ImGui::EndGroup();
    return;
  }
  HeatmapSpec spec;
  spec.slice = &slice;
  spec.textures = &ctx.textures;
  spec.textureKey = TextureKey{serial, slot, slice.batchIndex, slice.head, cmap, range.lo, range.hi};
  spec.colormap = cmap;
  spec.range = range;
  spec.kind = kind;
  spec.interactive = false;
  spec.colorbarTexture = nullptr;
  const float aspect = static_cast<float>(slice.rows) / static_cast<float>(std::max(1, slice.cols));
  drawHeatmap(id, spec, nullptr, ImVec2(side, std::clamp(side * aspect, side * 0.25f, side * 1.2f)));
  ctx.probes.recordLastItem(id);
  ImGui::EndGroup();
}

void drawStageTensors(PracticeState& p, const practice::CheckReport& r, const practice::StageCheck& st, UiContext& ctx) {
  const StageInfo& info = stageInfo(st.stage);
  const Tensor expected = r.expected.copyOf(st.stage);
  const int heads = expected.rank() >= 4 ? static_cast<int>(expected.dim(1)) : 1;
  const int batches = expected.rank() >= 3 ? static_cast<int>(expected.dim(0)) : 1;
  p.head = std::clamp(p.head, 0, heads - 1);
  p.batch = std::clamp(p.batch, 0, batches - 1);
  if (heads > 1) {
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 8);
    ImGui::SliderInt("head", &p.head, 0, heads - 1);
    ctx.probes.recordLastItem("practice_head");
  }
  if (batches > 1) {
    if (heads > 1) ImGui::SameLine();
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 8);
    ImGui::SliderInt("batch item", &p.batch, 0, batches - 1);
    ctx.probes.recordLastItem("practice_batch");
  }
  const DataKind kind = info.kind;
  const ColormapId cmap = defaultColormap(kind);
  const ColorRange range = rangeFor(kind, expected.ptr(), expected.data.size());
  const float side = std::max(8.0f * ImGui::GetFontSize(), (ImGui::GetContentRegionAvail().x - 2 * ImGui::GetFontSize()) / 3.0f);
  const std::uint64_t serial = p.check.resultSerial * 64 + static_cast<std::uint64_t>(p.shownStage + 1);
  const Slice2D mine = sliceOf(st.learner, st.stage, p.batch, p.head);
  const Slice2D want = sliceOf(expected, st.stage, p.batch, p.head);
  drawTensor("practice_yours", "yours", mine, cmap, st.learner.shape == expected.shape ? range : rangeFor(DataKind::Signed, st.learner.ptr(), st.learner.data.size()),
             kind, kPracticeSlot, serial, side, ctx);
  ImGui::SameLine();
  drawTensor("practice_expected", "expected", want, cmap, range, kind, kPracticeSlot + 1, serial, side, ctx);
  if (!st.difference.data.empty()) {
    ImGui::SameLine();
    const Slice2D diff = sliceOf(st.difference, st.stage, p.batch, p.head);
    // On the values' own scale (at least): a difference at float rounding stays white, not noise stretched.
    ColorRange dr = rangeFor(DataKind::Signed, st.difference.ptr(), st.difference.data.size());
    const ColorRange values = rangeFor(DataKind::Signed, expected.ptr(), expected.data.size());
    dr.hi = std::max(dr.hi, values.hi);
    dr.lo = -dr.hi;
    drawTensor("practice_difference", "yours \xe2\x88\x92 expected", diff, ColormapId::Diverging, dr, DataKind::Signed,
               kPracticeSlot + 2, serial, side, ctx);
  }
  char line[160];
  std::snprintf(line, sizeof line, "max |yours \xe2\x88\x92 expected| = %.4g", st.maxAbsDiff);
  if (!st.shapeNote.empty()) ImGui::TextColored(kBad, "%s", st.shapeNote.c_str());
  else if (!st.learner.data.empty()) ImGui::TextDisabled("%s", line);
}

const char* statusMark(practice::StageCheck::Status s) {
  switch (s) {
    case practice::StageCheck::Status::Match: return "\xe2\x9c\x94";
    case practice::StageCheck::Status::Differs: return "\xe2\x9c\x98";
    case practice::StageCheck::Status::After: return "\xc2\xb7";
    case practice::StageCheck::Status::NotSeen: return "\xe2\x80\x93";
  }
  return "";
}

void drawReport(PracticeState& p, UiContext& ctx) {
  const auto& slot = p.check;
  if (!slot.error.empty()) {
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextColored(kBad, "the check could not run: %s", slot.error.c_str());
    ImGui::PopTextWrapPos();
  }
  if (!slot.result || slot.resultKey.file != p.file || slot.resultKey.exercise != p.exercise) {
    ImGui::TextDisabled(slot.busy() ? "checking your file \xe2\x80\xa6" : "No check yet: save your file (or press Check now).");
    ctx.probes.recordLabel("practice_summary", slot.busy() ? "checking" : "none");
    return;
  }
  const practice::CheckReport& r = *slot.result;
  ImGui::PushTextWrapPos(0.0f);
  ImGui::TextColored(r.allPassed ? kGood : kBad, "%s%s", r.allPassed ? "\xe2\x9c\x94 " : "", r.summary.c_str());
  ImGui::PopTextWrapPos();
  ctx.probes.recordLabel("practice_summary", r.summary + (r.allPassed ? " (all pass)" : ""));
  if (r.error) {
    ImGui::PushTextWrapPos(0.0f);
    // file:line, unless the message already says the line (the harness's messages often do).
    std::string where;
    const bool said = r.error->line > 0 && r.error->message.find("line " + std::to_string(r.error->line)) != std::string::npos;
    if (!r.error->file.empty() && !said)
      where = " (" + r.error->file + (r.error->line > 0 ? ":" + std::to_string(r.error->line) : "") + ")";
    ImGui::TextColored(kBad, "%s: %s%s", practice::errorKindName(r.error->kind), r.error->message.c_str(), where.c_str());
    if (!r.error->traceback.empty()) ImGui::TextDisabled("%s", r.error->traceback.c_str());
    ImGui::PopTextWrapPos();
    ctx.probes.recordLabel("practice_error", std::string(practice::errorKindName(r.error->kind)) + ": " + r.error->message + where);
  }
  // The stages, as the pipeline's stepper orders them: click one to see your tensor there.
  if (!r.stages.empty()) {
    ImGui::Text("Stages (case %s):", r.cases[static_cast<std::size_t>(r.shownCase)].id.c_str());
    int differs = -1;
    for (std::size_t i = 0; i < r.stages.size(); ++i)
      if (r.stages[i].status == practice::StageCheck::Status::Differs) differs = static_cast<int>(i);
    if (p.shownStage < 0 || p.shownStage >= static_cast<int>(r.stages.size())) p.shownStage = differs >= 0 ? differs : -1;
    for (std::size_t i = 0; i < r.stages.size(); ++i) {
      const practice::StageCheck& st = r.stages[i];
      const std::string label = std::string(statusMark(st.status)) + " " + stageInfo(st.stage).shortName;
      if (i > 0) {  // on one line while they fit, then the next
        ImGui::SameLine();
        if (ImGui::GetContentRegionAvail().x < ImGui::CalcTextSize(label.c_str()).x) ImGui::NewLine();
      }
      ImGui::PushID(static_cast<int>(i));
      const bool bad = st.status == practice::StageCheck::Status::Differs;
      const bool good = st.status == practice::StageCheck::Status::Match;
      ImGui::PushStyleColor(ImGuiCol_Text, bad ? kBad : good ? kGood : kDim);
      if (ImGui::Selectable(label.c_str(), p.shownStage == static_cast<int>(i), 0, ImGui::CalcTextSize(label.c_str()))) {
        p.shownStage = static_cast<int>(i);
      }
      ImGui::PopStyleColor();
      const std::string name = std::string("practice_stage_") + stageInfo(st.stage).name;
      ctx.probes.recordLastItem(name);
      ctx.probes.recordLabel(name, practice::stageStatusName(st.status));
      if (ImGui::IsItemHovered()) {
        ImGui::SetTooltip("%s: %s%s%s", stageInfo(st.stage).title, practice::stageStatusName(st.status),
                          st.capture ? (" \xe2\x80\x94 " + st.capture->name + " (line " + std::to_string(st.capture->line) + ")").c_str() : "",
                          st.layout.empty() ? "" : (" as " + st.layout).c_str());
      }
      ImGui::PopID();
    }
  }
  if (r.diagnosis) {
    ImGui::Separator();
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextColored(kBad, "%s%s", r.diagnosis->title.c_str(),
                       r.diagnosis->line > 0 ? (" \xe2\x80\x94 line " + std::to_string(r.diagnosis->line)).c_str() : "");
    ImGui::TextUnformatted(r.diagnosis->text.c_str());
    ImGui::PopTextWrapPos();
    ctx.probes.recordLabel("practice_diagnosis", r.diagnosis->mistake + " line " + std::to_string(r.diagnosis->line) + ": " +
                                                     r.diagnosis->text);
  } else {
    ctx.probes.recordLabel("practice_diagnosis", "none");
  }
  if (p.shownStage >= 0 && p.shownStage < static_cast<int>(r.stages.size())) {
    const practice::StageCheck& st = r.stages[static_cast<std::size_t>(p.shownStage)];
    ImGui::Separator();
    std::string what = std::string(stageInfo(st.stage).title) + " (" + stageInfo(st.stage).formula + ")";
    if (st.capture) what += ": your " + st.capture->name + ", line " + std::to_string(st.capture->line);
    if (!st.layout.empty()) what += ", as " + st.layout;
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextUnformatted(what.c_str());
    ImGui::PopTextWrapPos();
    ctx.probes.recordLabel("practice_shown_stage", std::string(stageInfo(st.stage).name) + " " + practice::stageStatusName(st.status));
    if (!st.learner.data.empty()) drawStageTensors(p, r, st, ctx);
    else ImGui::TextDisabled("No tensor of yours holds this stage (%s).", practice::stageStatusName(st.status));
  }
  ImGui::Separator();
  ImGui::TextUnformatted("Cases");
  for (const practice::CaseResult& c : r.cases) {
    ImGui::TextColored(c.passed ? kGood : kBad, "%s", c.passed ? "\xe2\x9c\x94" : "\xe2\x9c\x98");
    ImGui::SameLine();
    ImGui::PushTextWrapPos(0.0f);
    ImGui::Text("%s%s%s", c.title.c_str(), c.passed ? "" : ": ", c.passed ? "" : c.why.c_str());
    ImGui::PopTextWrapPos();
    ctx.probes.recordLabel("practice_case_" + c.id, c.passed ? "pass" : "fail: " + c.why);
  }
  if (!r.printed.empty() && ImGui::CollapsingHeader("What your code printed")) {
    ImGui::InputTextMultiline("##printed", const_cast<char*>(r.printed.c_str()), r.printed.size() + 1,
                              ImVec2(-1, ImGui::GetFontSize() * 8), ImGuiInputTextFlags_ReadOnly);
  }
}

}  // namespace

void drawPractice(PracticeState& p, UiContext& ctx) {
  const practice::Exercise* e = practice::findExercise(p.exercise);
  if (!e) p.exercise = practice::allExercises().front().id;
  e = practice::findExercise(p.exercise);
  const float h = ImGui::GetContentRegionAvail().y;
  const ImGuiTableFlags flags = ImGuiTableFlags_Resizable | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingStretchProp;
  if (ImGui::BeginTable("practice layout", 2, flags, ImVec2(0, h))) {
    ImGui::TableSetupColumn("left", ImGuiTableColumnFlags_WidthStretch, 0.38f);
    ImGui::TableSetupColumn("right", ImGuiTableColumnFlags_WidthStretch, 0.62f);
    ImGui::TableNextRow(ImGuiTableRowFlags_None, h);
    ImGui::TableNextColumn();
    ImGui::BeginChild("practice left", ImVec2(0, h - 2 * ImGui::GetStyle().CellPadding.y));
    drawExerciseList(p, ctx);
    drawExercise(p, *e, ctx);
    ImGui::EndChild();
    ImGui::TableNextColumn();
    ImGui::BeginChild("practice right", ImVec2(0, h - 2 * ImGui::GetStyle().CellPadding.y));
    drawReport(p, ctx);
    ImGui::EndChild();
    ImGui::EndTable();
  }
}

}  // namespace mhascope::app
