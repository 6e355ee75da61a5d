// The Export button that sits on every heatmap and on the head grid: a popup with a folder,
// a file name and PNG / SVG / PDF, writing through the same exporter as `mhascope export`
// (core/export.hpp), then a confirmation naming the path or the error. No Export… of the window
// replaces a file: an existing name is refused (exportRefusal), and the user picks another.
#pragma once

#include <string>
#include <vector>

#include "state/ui_context.hpp"

namespace mhascope::app {

struct ExportTarget {
  std::vector<const Slice2D*> slices;  // one (a heatmap) or every head (the grid)
  bool grid = false;
  ColormapId colormap = ColormapId::Viridis;
  ColorRange range;
};

// The error every Export… of the window gives for a path that exists (a file, a folder, a link):
// nothing is written. Ok when the path is free.
Status exportRefusal(const std::string& path);

// `probeName` names the button for scripted tests ("export_heatmap", "export_grid").
void drawExportButton(UiContext& ctx, const char* probeName, const ExportTarget& target);

}  // namespace mhascope::app
