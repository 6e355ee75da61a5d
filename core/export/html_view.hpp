// One self-contained, interactive HTML file of what a picture export shows: a stage's heatmap (or
// every head of it in a grid, each a click away from the large view), hover values and token
// labels in the window's words, and on attention weights the head view (a line from each query to
// each key, its opacity the weight, a colour per head, heads toggled on and off). Every script,
// style and number is inline and the page's Content-Security-Policy forbids any request, so it
// renders offline from a file and can reach nothing. The colours are the picture's: each cell
// carries its colormap-table index, computed here as for the PNG (mapValue), and the table itself.
//
// The page also carries the workspace that made it (a JSON block, id "mhascope-workspace"), which
// readWorkspaceFile finds again (io/workspace.hpp): `mhascope --workspace view.html` re-opens the same view.
//
// Bounded: past kMaxHtmlCells cells in all, each head is downsampled by the window's rule
// (downsample.hpp: a block's largest weight, or its value farthest from 0) and the page says so
// under the picture. Pure core: no cairo, no files but the one write.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "attention/trace.hpp"
#include "export/export.hpp"
#include "util/result.hpp"

namespace mhascope {

inline constexpr std::size_t kMaxHtmlCells = std::size_t{1} << 20;  // ~8 MB of page

// True for a path ending in .html or .htm (case-insensitive).
bool isHtmlPath(const std::string& path);

// One step of a timeline: every head's attention then, and a line per head (its role then).
struct HtmlFrame {
  std::int64_t step = 0;
  std::vector<Slice2D> slices;  // the same count and shape in every frame
  std::vector<std::string> notes;
};
// A line over the steps, drawn in its panel ("loss", "induction score") of the timeline.
struct HtmlCurve {
  std::string panel, name;
  std::vector<std::int64_t> steps;
  std::vector<double> values;  // one per step; NaN: none at that step
};

struct HtmlExport {
  std::vector<Slice2D> slices;  // one heatmap, or every head of a stage (same shape)
  bool grid = false;            // several heads, shown as a grid and one large view
  ExportOptions options;        // colormap, range, title and subtitle as for a picture
  std::string workspaceJson;    // workspaceToJson of what made it; "" = none carried
  // Optional, one per slice: its name ("" or none: "head i") and a line said under its thumbnail
  // and over the large view (a head's role and scores).
  std::vector<std::string> names, notes;
  // > 0: the grid in rows of this many slices, each row headed by rowHeadings[row] (a model's
  // layers × heads); 0: the slices wrap freely.
  int gridColumns = 0;
  std::vector<std::string> rowHeadings;
  // A timeline (a training run): the frames replace `slices`, a slider scrubs them, the curves are
  // drawn over the steps with the chosen frame's step marked (a click on them picks the nearest).
  // Past the page's bound, frames are dropped evenly (the first and the last kept) and the page says so.
  std::vector<HtmlFrame> frames;
  std::vector<HtmlCurve> curves;
  // Set when the slices are already downsampled (a model view's thumbnails): said under the picture.
  std::string sourceNote;
};

// The page's bytes. Errors as the picture's (empty slice, label counts, heads of other shapes).
Result<std::string> renderHtml(const HtmlExport& view);
// renderHtml, then writeFileAtomic (nothing written on error; the message names the path).
Status exportHtml(const std::string& path, const HtmlExport& view);

}  // namespace mhascope
