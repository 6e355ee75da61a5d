// The Roles tab — specialist heads: scores set by hand (the "specialists" preset) and an editor for any
// head's score cell; everything downstream recomputes through the normal config → trace path.
#include <imgui.h>

#include <algorithm>
#include <string>

#include "widgets/drag_slider.hpp"
#include "lessons/lesson_tab.hpp"
#include "widgets/colors.hpp"
#include "widgets/wrapped_text.hpp"
#include "io/presets.hpp"

namespace mhascope::app {

namespace {

bool tokenCombo(const char* label, int& index, const std::vector<std::string>& tokens) {
  bool changed = false;
  const std::string shown = std::to_string(index) + " '" + tokens[static_cast<std::size_t>(index)] + "'";
  if (ImGui::BeginCombo(label, shown.c_str())) {
    for (int i = 0; i < static_cast<int>(tokens.size()); ++i) {
      ImGui::PushID(i);
      const std::string l = std::to_string(i) + " '" + tokens[static_cast<std::size_t>(i)] + "'";
      if (ImGui::Selectable(l.c_str(), i == index)) {
        index = i;
        changed = true;
      }
      ImGui::PopID();
    }
    ImGui::EndCombo();
  }
  return changed;
}

void markEdited(AppState& st) {
  st.doc.configDirty = true;
  markEditedIfChanged(st.doc);
}

}  // namespace

// Over 80 lines (112) on purpose: one tab drawn top to bottom in reading order — the preset button,
// every head's map and the score editor — every part using the trace, batch item, sizes and result
// fetched at the top.
void drawRolesTab(UiContext& ctx, const LessonOutcome<lessons::Roles::Result>& outcome, lessons::Roles::Choices& pick) {
  lessonHeader(ctx, "Specialist heads",
               "Here the scores are typed in by hand: in the specialists preset, head 0 links 'it' and 'soft' to "
               "'mat', head 1 links 'sat' and 'cat' both ways, and every other token mostly looks at itself. Real "
               "heads are never assigned such roles: they find them through training, because that lowers the loss; "
               "the roles differ from run to run, and many heads end up redundant enough to be pruned.");
  AppState& st = ctx.state;
  if (st.doc.config.scoreOverride.empty()) {
    ImGui::TextDisabled("This configuration has no hand-set scores.");
    ImGui::SameLine();
    if (ImGui::Button("Load the specialists preset")) {
      auto p = loadPreset("specialists");
      if (p) {
        st.doc.config = std::move(p).value();
        st.doc.presetName = "specialists";
        notePresetRead(st, "specialists");
        st.doc.configDirty = true;
      } else {
        st.actionError = p.error().message;
      }
    }
    ctx.probes.recordLastItem("load_specialists");
  }
  if (!traceReady(ctx)) return;
  const Trace& t = st.shown.trace;
  const float em = ImGui::GetFontSize();
  const int b = std::clamp(ctx.view.batch, 0, t.batch - 1);

  // Every head's weights, side by side.
  const int n = t.heads;
  const float avail = ImGui::GetContentRegionAvail().x;
  // Every map gets the same plot size: the one carrying the colour bar is wider by exactly the
  // bar's width (drawHeatmap takes that width off the cells).
  const int perRow = std::min(n, 3);
  const float side = std::clamp((avail - colorbarWidth() - static_cast<float>(perRow) * 1.0f * em) / static_cast<float>(perRow),
                                12.0f * em, 30.0f * em);
  for (int h = 0; h < n && h < 6; ++h) {
    ImGui::PushID(h);
    if (h % 3 != 0) ImGui::SameLine(0, em);
    ImGui::BeginGroup();
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(headColor(h)), "head %d weights", h);
    const Slice2D* s = st.shown.slice(StageId::Weights, b, h);
    if (s) {
      MatrixPicture m = pictureOf(*s);
      m.trace = &t;
      m.batchIndex = b;
      m.head = h;
      m.textureTag = 40;
      m.colorbar = h % 3 == perRow - 1;
      const HeatmapHover hov = drawMatrix(ctx, "w", m, ImVec2(side + (m.colorbar ? colorbarWidth() : 0.0f), side * 0.95f));
      if (hov.clicked) {
        pick.head = h;
        pick.query = hov.row;
        pick.key = hov.col;
        // The clicked cell's recorded raw score: scores[b, h, row, col].
        if (const Slice2D* raw = st.shown.slice(StageId::Scores, b, h)) {
          pick.score = raw->data[static_cast<std::size_t>(hov.row) * static_cast<std::size_t>(raw->cols) +
                                   static_cast<std::size_t>(hov.col)];
        }
      }
    }
    ImGui::EndGroup();
    ImGui::PopID();
  }

  // The editor.
  ImGui::Separator();
  ImGui::TextUnformatted("Score editor (click a cell above to pick it)");
  pick.head = std::clamp(pick.head, 0, t.heads - 1);
  pick.query = std::clamp(pick.query, 0, t.tq - 1);
  pick.key = std::clamp(pick.key, 0, t.tk - 1);
  ImGui::SetNextItemWidth(6 * em);
  dragSliderInt("head i", &pick.head, 0, t.heads - 1);  // 0-based, as everywhere
  ImGui::SameLine(0, em);
  ImGui::SetNextItemWidth(9 * em);
  tokenCombo("query", pick.query, t.queryTokens[static_cast<std::size_t>(b)]);
  ImGui::SameLine(0, em);
  ImGui::SetNextItemWidth(9 * em);
  tokenCombo("key", pick.key, t.keyTokens[static_cast<std::size_t>(b)]);
  ImGui::SetNextItemWidth(8 * em);
  ImGui::InputFloat("raw score", &pick.score, 1.0f, 4.0f, "%.2f");
  ctx.probes.recordLastItem("score_input");
  pick.score = std::clamp(pick.score, -1000.0f, 1000.0f);
  ImGui::SameLine(0, em);
  if (ImGui::Button("Set cell")) {
    setScoreCell(st.doc.config, pick.head, pick.query, pick.key, pick.score);
    markEdited(st);
  }
  ctx.probes.recordLastItem("set_cell");
  ImGui::SameLine();
  if (ImGui::Button("Clear cell")) {
    clearScoreCell(st.doc.config, pick.head, pick.query, pick.key);
    markEdited(st);
  }
  const lessons::Roles::Result* result = outcome.get();
  if (const CellBreakdown* cell = result ? &result->cell : nullptr) {
    ImGui::Text("now: score %.3f%s -> scaled %.3f -> weight %.3f", static_cast<double>(cell->recordedScore),
                cell->handSet ? " (hand-set)" : " (q . k)", cell->scaled,
                cell->rowRecorded[static_cast<std::size_t>(cell->key)]);
  }
  const ScoreOverride& so = st.doc.config.scoreOverride;
  if (!so.empty()) {
    if (const Model* m = st.shown.model.get()) {
      ImGui::TextDisabled("%d of %zu listed cells apply to this sentence and h%s%s", countAppliedScoreCells(st.shown.traceConfig, *m),
                          st.shown.traceConfig.scoreOverride.cells.size(),
                          so.self ? (", diagonal = " + formatNumber(*so.self)).c_str() : "",
                          so.other ? (", every other cell = " + formatNumber(*so.other)).c_str() : ", others = q . k");
    }
  }
  textWrappedDisabled(scoreGapText(t, 8.0));
  if (result) textWrappedDisabled(result->rankNote);
  textWrappedDisabled(trainedHeadRolesText());
}

}  // namespace mhascope::app

// The lesson's tab (core/lessons/roles.hpp), for the window's UiContext.
template <class Ui>
void mhascope::lessons::Roles::drawTab(Ui& ui, const LessonOutcome<Result>& shown, Choices& choices) {
  app::drawRolesTab(ui, shown, choices);
}
template void mhascope::lessons::Roles::drawTab(app::UiContext&, const LessonOutcome<Result>&, Choices&);
