// A chart of several lines over the training steps, for the Train mode: y axis with tick values
// (linear, or log when asked — the same ticks as the exported curves, export/axis_ticks.hpp),
// x axis in steps, dotted reference levels (a role threshold), a legend, a vertical line at the
// chosen step, and a click anywhere on the plot picks the nearest step.
#pragma once

#include <imgui.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "export/training_figures.hpp"  // CurvePanel, CurveSeries

namespace mhascope::app {

// Draws `panel` into `size` at the cursor; the x range is [xLo, xHi] (shared by every chart, so
// they line up). Returns the step clicked, if any.
std::optional<double> drawStepChart(const char* id, const CurvePanel& panel, double xLo, double xHi,
                                    std::int64_t markStep, ImVec2 size);

}  // namespace mhascope::app
