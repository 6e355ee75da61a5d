// A polyline with more points than its chart has pixel columns, reduced to what can be seen:
// the M4 rule (Jugel et al., "M4: A Visualization-Oriented Time Series Data Aggregation", VLDB
// 2014) — in every pixel column (floor of the screen x) the first, the last, the lowest and the
// highest point, kept in their order along the curve. A line through those four points covers
// the same pixels of that column as the line through all of them, and the segments into the next
// column start where the full line's do, so spikes and jumps stay visible exactly; only points
// that would be drawn over one another go. A curve of 1500 evaluations (eval every 1) on a chart
// 400 pixels wide draws at most 1600 points instead of 1500 per head — the chart's geometry, and
// a software renderer's work per frame, stays bounded by its width.
#pragma once

#include <imgui.h>

#include <vector>

namespace mhascope::app {

// `pts`: screen positions with x never decreasing (the steps in order). Columns with at most four
// points keep them all.
std::vector<ImVec2> m4Columns(const std::vector<ImVec2>& pts);

}  // namespace mhascope::app
