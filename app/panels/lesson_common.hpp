// What the ten lesson tabs (issue 4) share: their view state, the model rebuilt from the shown
// trace's config (the lessons need the weights, which the trace does not keep), small caches of
// lesson results keyed by the trace serial, and a one-texture heatmap for any matrix.
// The numbers all come from core/lessons/lessons.hpp; panels only lay them out.
#pragma once

#include <imgui.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lessons/lessons.hpp"
#include "ui_context.hpp"
#include "widgets/heatmap_view.hpp"

namespace mhascope::app {

// A lesson result computed once per (trace, variant) — e.g. per chosen pitfall.
template <class T>
struct LessonCache {
  std::uint64_t serial = ~0ull;
  int variant = -1;
  std::optional<T> value;
  std::string error;

  template <class F>
  const T* get(std::uint64_t traceSerial, int which, F&& compute) {
    if (serial != traceSerial || variant != which) {
      serial = traceSerial;
      variant = which;
      value.reset();
      error.clear();
      auto r = compute();
      if (r.ok()) value = std::move(r).value();
      else error = r.error().message;
    }
    return value ? &*value : nullptr;
  }
};

struct LessonState {
  LessonCache<Model> model;                // buildModel(traceConfig), for the weights
  LessonCache<LoopVsVectorized> split;     // 1
  int splitHead = 0;
  int mixToken = 0, mixDim = 0;            // 3
  int editHead = 0, editQuery = 0, editKey = 0;  // 4
  float editScore = 16.0f;
  LessonCache<MaskComparison> masks;       // 5
  int maskKind = 0, padKeys = 0;
  LessonCache<PitfallResult> pitfall;      // 6
  int pitfallIndex = 0;
  int sweepVariable = 0;                   // 7
  int sweepTo[3] = {256, 1024, 64};
  std::vector<std::uint8_t> headHidden;    // 8: 1 = head switched off
  int cellHead = 0, cellQuery = 0, cellKey = 0;  // 9
  std::uint64_t quizSerial = ~0ull;        // 10
  std::vector<QuizQuestion> quiz;
  std::vector<int> quizPicked;             // -1 = not tried yet
};

// The lesson tabs' state lives in the App (one per window) and reaches the panels as
// UiContext::lessons.

// The model the shown trace was computed from (same config → same weights), or null with the
// reason drawn in place.
const Model* lessonModel(UiContext& ctx);

// Bigger configurations make the lessons that recompute (loop vs vectorized, masks, pitfalls)
// slow: they refuse above this many recorded bytes and say so.
bool lessonSizeOk(const Trace& t);

// For the lessons that recompute the pipeline (split, masks, pitfalls): the trace exists, is
// small enough, and its model rebuilt — or null, with the reason drawn in place.
const Model* lessonModelToRecompute(UiContext& ctx);

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

}  // namespace mhascope::app
