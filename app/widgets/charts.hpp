// Small charts the lessons use, drawn with ImGui's draw list: a title ABOVE the plot (never over
// the data), axes with tick values, and a label under every bar (thinned when they would touch).
#pragma once

#include <imgui.h>

#include <functional>
#include <string>
#include <vector>

namespace mhascope::app {

using ValueFormat = std::function<std::string(double)>;

// Vertical bars from 0 (values may be negative): y axis with min / 0 / max ticks, each bar's
// label under it and its value above it when there is room.
void drawBarChart(const char* id, const char* title, const std::vector<double>& values,
                  const std::vector<std::string>& labels, const std::vector<ImU32>& colors, ImVec2 size,
                  const ValueFormat& format);

// y(x) as a line: x axis with first / middle / last x values and its name, y axis from 0 with
// 0 / half / top ticks.
void drawLinePlot(const char* id, const char* title, const std::vector<double>& xs, const std::vector<double>& ys,
                  const char* xName, ImVec2 size, const ValueFormat& format);

}  // namespace mhascope::app
