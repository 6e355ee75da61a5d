// The Export button that sits on every heatmap and on the head grid: a popup with a folder,
// a file name and PNG / SVG / PDF, writing through the same exporter as `mhascope export`
// (core/export.hpp), then a confirmation naming the path or the error.
#pragma once

#include <vector>

#include "state/ui_context.hpp"

namespace mhascope::app {

struct ExportTarget {
  std::vector<const Slice2D*> slices;  // one (a heatmap) or every head (the grid)
  bool grid = false;
  ColormapId colormap = ColormapId::Viridis;
  ColorRange range;
};

// `probeName` names the button for scripted tests ("export_heatmap", "export_grid").
void drawExportButton(UiContext& ctx, const char* probeName, const ExportTarget& target);

}  // namespace mhascope::app
