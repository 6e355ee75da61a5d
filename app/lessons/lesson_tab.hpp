// What the lesson tabs share: the entry the panel list registers for each lesson (drawLessonTab),
// "is the result there" checks and a one-texture heatmap for any matrix. A lesson's tab is
// app/lessons/<name>_tab.cpp: it defines the lesson's drawTab (core/lessons/lesson.hpp) for the
// window's UiContext. Its choices live in state/lesson_view.hpp; the numbers all come from
// core/lessons/ through the compute scheduler (state.shown.lessons); tabs only lay them out.
#pragma once

#include <imgui.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "lessons/lessons.hpp"
#include "state/lesson_view.hpp"
#include "state/ui_context.hpp"
#include "widgets/heatmap_view.hpp"

namespace mhascope::app {

// Lesson L's tab: its drawTab with its slot's outcome and its choices (the panel list's entry).
template <class L>
void drawLessonTab(UiContext& ctx) {
  L::drawTab(ctx, ctx.state.shown.lessons.of<L>().outcome, ctx.lessons.c.of<L>());
}

// For the lessons that rerun the pipeline (LessonCost::Rerun): the trace exists, is small
// enough, and the scheduler has this lesson's result for it — or false, with the reason (or
// "computing") drawn in place.
bool rerunLessonReady(UiContext& ctx, bool hasResult);
template <class L>
bool rerunLessonReady(UiContext& ctx) {
  return rerunLessonReady(ctx, ctx.state.shown.lessons.has<L>(ctx.state.shown.traceSerial));
}

// A lesson result, or false with its error drawn in place.
template <class T>
bool lessonOk(const LessonOutcome<T>& r);

// The last slider's frame alone, `width` wide (set with SetNextItemWidth before it), as probe `name`:
// what a script clicks or drags across (a slider's last item is not its frame).
void recordSliderFrame(UiContext& ctx, const char* name, float width);

// Title line and a short "why" paragraph.
void lessonHeader(UiContext& ctx, const char* title, const char* why);

// A matrix as one heatmap texture. `textureTag` must be unique per distinct picture within the
// trace (the cache keys on (trace serial, tag, head)); labels may be empty.
struct MatrixPicture {
  const float* data = nullptr;
  int rows = 0, cols = 0;
  std::string rowAxis = "T_q", colAxis = "T_k";
  std::vector<std::string> rowLabels, colLabels;
  DataKind kind = DataKind::Probability;
  std::optional<ColorRange> range;  // default: by kind
  const Trace* trace = nullptr;     // blocked cells of this trace's mask (weights / masked scores)
  int batchIndex = 0, head = -1;
  StageId stage = StageId::Weights;
  int textureTag = 0;
  int heads = 0, dk = 0;            // colour the d_model column blocks by head
  bool numbers = true;
  bool colorbar = true;
  std::string cellMeaning;          // HeatmapSpec::cellMeaning: what a cell of a derived table is
};
HeatmapHover drawMatrix(UiContext& ctx, const char* id, const MatrixPicture& m, ImVec2 size);
// A picture of a trace slice: its data, sizes and labels (the caller sets kind, stage, tag …).
MatrixPicture pictureOf(const Slice2D& s);

// A table of published models with its header row: `rows` rows, a column per name. Wider than a narrow
// window it scrolls sideways rather than cutting its last columns; its height fits every row, so it never
// scrolls up and down and the mouse wheel over it still scrolls the lesson. False: not drawn (no EndTable).
bool beginPublishedTable(const char* id, std::initializer_list<const char*> columns, std::size_t rows);

std::string formatCount(std::int64_t v);  // 1,234,567
std::string formatNumber(double v, int digits = 4);
void coloredSymbol(const char* symbol, const char* fmt, ...) IM_FMTARGS(2);

void drawLessonError(const std::string& message);  // in the error colour

template <class T>
bool lessonOk(const LessonOutcome<T>& r) {
  if (r.value) return true;
  drawLessonError(r.error);
  return false;
}

}  // namespace mhascope::app
