// Colour scales for attention weights: where on the colormap a value goes. With T keys a
// uniform row holds weights of 1/T, so at T = 2048 every cell of a causal weights map sits in
// the bottom 1 % of a linear [0, 1] scale and the picture is uniformly dark. Two scales show
// such patterns: log10 over kLogDecades decades below the range's top, and per row (each
// query row divided by its own largest weight). Both apply to weights (probability data) only;
// signed stages stay linear and symmetric about 0. The exporter draws linear pictures.
#pragma once

#include <string>

#include "attention/data_kind.hpp"
#include "color/colormap.hpp"

namespace mhascope {

enum class ColorScale { Linear, Log, PerRow };
inline constexpr int kColorScaleCount = 3;
inline constexpr float kLogDecades = 4.0f;  // log scale: hi · 10^-4 … hi

const char* colorScaleName(ColorScale s);  // "linear" | "log" | "per row"
// Log and PerRow change only probability data (weights); everything else is linear.
ColorScale effectiveColorScale(ColorScale chosen, DataKind kind);

// Where v goes on the colormap, 0 (entry 0) … 1 (entry 255), for the given scale and range:
//   Linear  (v − lo) / (hi − lo)
//   Log     (log10 v − log10 hi) / kLogDecades + 1, values at or below hi · 10^-4 (and 0) at 0
//   PerRow  v / rowMax (rowMax: the largest value of v's row; a row of zeros stays at 0)
// Clamped to [0, 1]; NaN stays NaN and −inf (a blocked cell) stays −inf, so their own colours
// apply. rowMax is ignored except by PerRow.
float colorPosition(ColorScale s, ColorRange range, float v, float rowMax);

// The colour bar's three tick labels, top to middle to bottom ("1", "0.01", "≤ 0.0001").
struct ColorbarTicks {
  std::string top, middle, bottom;
};
ColorbarTicks colorbarTicks(ColorScale s, ColorRange range);
// One line for the legend: "colour scale: log10, 10^-4 … 1 (4 decades)".
std::string colorScaleLegend(ColorScale s, ColorRange range);

}  // namespace mhascope
