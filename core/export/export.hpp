// Picture export of heatmaps through cairo: one slice, or all heads of a stage in a grid with
// one shared colour scale — as PNG, SVG or PDF. The GUI's export button and the CLI's `export`
// command both call these, so a picture is identical wherever it is made.
//
// What a picture holds: a title (stage, head, batch) and a subtitle (the configuration line);
// the cells, each filled with the exact colormap-table colour (PNG cells are whole pixels with no
// antialiasing, so a cell's centre pixel maps back to its value within one table step);
// cells the mask blocks (−inf scores, or Slice2D::blockedCells) in the blocked colour with a
// cross, as in the window, and NaN cells in their own colour with a dark dot, each with a legend entry; token labels on both
// axes (thinned, with a note, when cells are too small to read them); the axis names; and a
// colour bar with min / mid / max ticks.
//
// Lives in library mhascope_export (links cairo); mhascope_core stays Eigen + std only.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "color/colormap.hpp"
#include "color/see_as.hpp"
#include "util/result.hpp"
#include "attention/trace.hpp"  // Slice2D

namespace mhascope {

enum class ImageFormat { Png, Svg, Pdf };

const char* imageFormatName(ImageFormat format);  // "png" | "svg" | "pdf"
// By extension, case-insensitive (.png .svg .pdf); the error names the extension and the three
// allowed ones.
Result<ImageFormat> formatFromPath(const std::string& path);

struct ExportOptions {
  std::optional<ColormapId> colormap;  // empty: picked by the stage's data kind
  std::optional<ColorRange> range;     // empty: rangeFor(kind, …) over every cell drawn
  std::string title;                   // empty: nameSlice(…).title — the window's words — and the formula
  std::string subtitle;                // the configuration line, e.g. "B=1 T=8 d_model=64 h=4"
  std::optional<bool> showValues;      // empty: numbers in cells when the cells are big enough
  int cellPixels = 0;                  // 0: auto (≥ 14 px while the image stays ≤ ~8000 px)
  std::string blockedLegend;           // the blocked cells' legend; empty: the mask's words
  SeeAs seeAs = SeeAs::Normal;         // every colour of the picture as this reader sees it
};

// Where one heatmap's cells are in the picture (pixels for PNG, points for SVG/PDF):
// cell (r, c) covers [x0 + c*cellW, x0 + (c+1)*cellW) × [y0 + r*cellH, y0 + (r+1)*cellH).
struct HeatmapLayout {
  double x0 = 0, y0 = 0;
  double cellW = 0, cellH = 0;
  int rows = 0, cols = 0;
};

struct FigureLayout {
  int width = 0, height = 0;          // the whole picture
  std::vector<HeatmapLayout> panels;  // one per slice, in the order given (row-major grid)
  ColormapId colormap = ColormapId::Viridis;
  ColorRange range;                   // the one scale every panel uses
  bool showValues = false;
  int rowLabelStride = 1;             // 1: every row label drawn; k: every k-th
  int colLabelStride = 1;
  double barX = 0, barY = 0, barW = 0, barH = 0;  // the colour bar; ticks run right of barX + barW
  double tickLabelX = 0;                          // where the tick labels start (a gap after the ticks)
  double legendY = 0;                             // top of the first legend swatch (14 x 14 at barX)
};

// The layout a render would use, without rendering.
Result<FigureLayout> layoutHeatmap(const Slice2D& slice, const ExportOptions& options = {});
Result<FigureLayout> layoutHeadGrid(const std::vector<Slice2D>& heads, const ExportOptions& options = {});

// The file's bytes. Errors: empty slice, label counts that do not match, heads of different
// shapes, a picture too large for any format (names the size). layoutOut, if given, receives
// the layout used.
Result<std::string> renderHeatmap(const Slice2D& slice, ImageFormat format, const ExportOptions& options = {},
                                  FigureLayout* layoutOut = nullptr);
// ceil(sqrt(h)) columns; one colour scale across all heads, one colour bar.
Result<std::string> renderHeadGrid(const std::vector<Slice2D>& heads, ImageFormat format,
                                   const ExportOptions& options = {}, FigureLayout* layoutOut = nullptr);

// Render (format from the extension), then writeFileAtomic: on any error nothing is written,
// an existing file stays byte-identical, and the message names the path.
Status exportHeatmap(const std::string& path, const Slice2D& slice, const ExportOptions& options = {});
Status exportHeadGrid(const std::string& path, const std::vector<Slice2D>& heads, const ExportOptions& options = {});

}  // namespace mhascope
