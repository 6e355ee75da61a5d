// What the ten lesson tabs share: "is the result there" checks and a one-texture
// heatmap for any matrix. Their choices are state/lesson_view.hpp; the numbers all come from
// core/lessons/ through the compute scheduler (AppState::lessons); panels only lay them out.
#pragma once

#include <imgui.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lessons/lesson_results.hpp"
#include "state/ui_context.hpp"
#include "widgets/heatmap_view.hpp"

namespace mhascope::app {

// For the lessons that rerun the pipeline (split, masks, pitfalls): the trace exists, is small
// enough, and the scheduler has this lesson's result for it — or false, with the reason (or
// "computing") drawn in place.
bool recomputedLessonReady(UiContext& ctx, RecomputingLesson lesson);

// A lesson result, or false with its error drawn in place.
template <class T>
bool lessonOk(const LessonOutcome<T>& r);

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
};
HeatmapHover drawMatrix(UiContext& ctx, const char* id, const MatrixPicture& m, ImVec2 size);
// A picture of a trace slice: its data, sizes and labels (the caller sets kind, stage, tag …).
MatrixPicture pictureOf(const Slice2D& s);

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
