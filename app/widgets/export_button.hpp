// The window's one Export… form: a button, then a popup with a folder, a file name, PNG / SVG /
// PDF, Save and Close, and the outcome ("Saved <path>" or the error). Every picture the window
// exports goes through it — each heatmap, the head grid, the weights, the logit lens, the circuits
// maps — and through the same exporter as `mhascope export` (core/export). Save files the write
// (state/requests.hpp): the app's update step writes it, and no Export… replaces a file.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "state/ui_context.hpp"

namespace mhascope::app {

// A heatmap (one slice) or the head grid (every head), as the panels hand them over.
struct ExportTarget {
  std::vector<const Slice2D*> slices;  // one (a heatmap) or every head (the grid)
  bool grid = false;
  ColormapId colormap = ColormapId::Viridis;
  ColorRange range;
};

struct ExportForm {
  const char* probe = "export";  // names the button for scripted tests; its parts add _name, _png, _save, …
  const char* button = "Export\xe2\x80\xa6";
  std::string title;             // the popup's first line
  std::string stem;              // the proposed file name, without extension
  std::string tooltip;           // on the button ("" none)
  std::string note;              // under the formats ("" none)
  bool pageOnly = false;         // an HTML page only: a view no picture format holds (the Model tab's grid)
};

// Draws the form; `picture` is called on the frame Save is clicked, for what to write (copied
// then: the write runs after this frame).
void drawExportForm(UiContext& ctx, const ExportForm& form, const std::function<ExportPicture()>& picture);

// `probeName` names the button for scripted tests ("export_heatmap", "export_grid").
void drawExportButton(UiContext& ctx, const char* probeName, const ExportTarget& target);

}  // namespace mhascope::app
