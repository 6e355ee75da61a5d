// buildFigure: the cell size, label thinning and where everything goes, in small steps over a
// FigureSizes struct (measure panel → caption → right column and total; shrink the cells until
// the picture fits; place).
#include <algorithm>
#include <cmath>
#include <limits>

#include "util/utf8.hpp"  // replaceInvalidUtf8
#include "export/figure.hpp"
#include "util/format.hpp"

namespace mhascope::export_detail {
namespace {

Status checkSlice(const Slice2D& s, std::size_t index, std::size_t count) {
  const std::string which = count > 1 ? "head " + std::to_string(index) + ": " : std::string();
  if (s.rows <= 0 || s.cols <= 0) {
    return makeError(which + "nothing to draw: the slice is " + std::to_string(s.rows) + " x " + std::to_string(s.cols));
  }
  if (s.data == nullptr) return makeError(which + "nothing to draw: the slice has no data");
  if (!s.rowLabels.empty() && s.rowLabels.size() != static_cast<std::size_t>(s.rows)) {
    return makeError(which + "the slice has " + std::to_string(s.rowLabels.size()) + " row labels but " +
                     std::to_string(s.rows) + " rows");
  }
  if (!s.colLabels.empty() && s.colLabels.size() != static_cast<std::size_t>(s.cols)) {
    return makeError(which + "the slice has " + std::to_string(s.colLabels.size()) + " column labels but " +
                     std::to_string(s.cols) + " columns");
  }
  return Ok{};
}

Runs labelRuns(Fonts& fonts, const std::vector<std::string>& labels, int i) {
  if (labels.empty()) return fonts.shape(std::to_string(i));
  return fonts.shape(truncateLabel(replaceInvalidUtf8(labels[static_cast<std::size_t>(i)]), kMaxLabelCodePoints));
}

// The same words as the window's label and the file name (nameSelection).
std::string defaultTitle(const std::vector<const Slice2D*>& slices, bool grid) {
  return nameSlice(*slices.front(), grid ? static_cast<int>(slices.size()) : 0).title;
}

DataKind kindOf(const Slice2D& s) { return s.weight ? DataKind::Signed : stageInfo(s.stage).kind; }

std::string ordinal(int k) {
  const char* suffix = (k % 100 >= 11 && k % 100 <= 13) ? "th" : k % 10 == 1 ? "st" : k % 10 == 2 ? "nd" : k % 10 == 3 ? "rd" : "th";
  return std::to_string(k) + suffix;
}

double autoCell(int count) {
  return std::clamp(std::floor(kTargetGridSide / count), kMinLabelCell, kMaxAutoCell);
}

// The sizes measureFigure() finds for one cell size: panels, caption, the column on the right
// and the whole picture (px).
struct FigureSizes {
  double panelLeft = 0, panelW = 0, panelH = 0, headingH = 0, colLabelH = 0, axisH = 0;
  double captionH = 0, captionW = 0, rightW = 0;
  double width = 0, height = 0;
};

// What buildFigure's steps share: the slices, their common shape and the head grid's shape.
struct FigureInput {
  const std::vector<const Slice2D*>& slices;
  bool grid;
  const ExportOptions& options;
  Fonts& fonts;
  cairo_t* measure;
  int rows, cols;          // every slice's shape
  int gridCols, gridRows;  // panels across and down (1 x 1 for a single heatmap)
  double gridGap;          // between panels of a grid
};

Status checkSlices(const std::vector<const Slice2D*>& slices) {
  if (slices.empty()) return makeError("nothing to draw: no heads given");
  for (std::size_t i = 0; i < slices.size(); ++i) {
    if (auto st = checkSlice(*slices[i], i, slices.size()); !st) return st.error();
  }
  const int rows = slices[0]->rows, cols = slices[0]->cols;
  for (std::size_t i = 1; i < slices.size(); ++i) {
    if (slices[i]->rows != rows || slices[i]->cols != cols) {
      return makeError("head " + std::to_string(i) + " is " + std::to_string(slices[i]->rows) + " x " +
                       std::to_string(slices[i]->cols) + " but head 0 is " + std::to_string(rows) + " x " +
                       std::to_string(cols) + "; a grid needs heads of one shape");
    }
  }
  return Ok{};
}

// One colour scale for every panel, so equal colours mean equal values across heads; and which
// legend entries (blocked, NaN) the values need.
void chooseColors(Figure& fig, const FigureInput& in) {
  FigureLayout& L = fig.layout;
  const DataKind kind = kindOf(*in.slices[0]);
  L.colormap = in.options.colormap.value_or(defaultColormap(kind));
  const std::size_t cells = static_cast<std::size_t>(in.rows) * static_cast<std::size_t>(in.cols);
  if (in.options.range) {
    L.range = *in.options.range;
  } else {
    L.range = rangeFor(kind, in.slices[0]->data, cells);
    for (std::size_t i = 1; i < in.slices.size(); ++i) L.range = unionRange(L.range, rangeFor(kind, in.slices[i]->data, cells));
  }
  for (const Slice2D* s : in.slices) {
    for (std::size_t k = 0; k < cells; ++k) {
      const float v = s->data[k];
      if (std::isnan(v)) fig.hasNan = true;
      if (v == -std::numeric_limits<float>::infinity()) fig.hasBlocked = true;
    }
    for (std::size_t k = 0; s->blockedCells && k < cells && !fig.hasBlocked; ++k) fig.hasBlocked = s->blockedCells[k] != 0;
  }
}

// The text that does not depend on the cell size: headings, labels, axis titles, ticks, legend.
void shapeFixedText(Figure& fig, const FigureInput& in) {
  Fonts& fonts = in.fonts;
  for (std::size_t i = 0; i < in.slices.size(); ++i) {
    const Slice2D& s = *in.slices[i];
    PanelText t;
    if (in.grid) t.heading = fonts.shape("head " + std::to_string(s.head >= 0 ? s.head : static_cast<int>(i)));
    t.rows.reserve(static_cast<std::size_t>(in.rows));
    for (int r = 0; r < in.rows; ++r) t.rows.push_back(labelRuns(fonts, s.rowLabels, r));
    for (int c = 0; c < in.cols; ++c) t.cols.push_back(labelRuns(fonts, s.colLabels, c));
    if (s.flaggedRows.size() == static_cast<std::size_t>(in.rows)) {
      t.flagged = s.flaggedRows;
      for (auto f : t.flagged) fig.hasFlagged = fig.hasFlagged || f != 0;
    }
    t.rowAxis = fonts.shape(replaceInvalidUtf8(s.rowAxis.empty() ? "rows" : s.rowAxis));
    t.colAxis = fonts.shape(replaceInvalidUtf8(s.colAxis.empty() ? "columns" : s.colAxis));
    fig.text.push_back(std::move(t));
  }
  const ColorRange shown = fig.layout.range;
  fig.ticks = {formatGeneral(shown.hi, 3), formatGeneral(0.5 * (double{shown.lo} + double{shown.hi}), 3),
               formatGeneral(shown.lo, 3)};
  const Slice2D& first = *in.slices[0];
  fig.blockedLegend = fonts.shape(!in.options.blockedLegend.empty() ? replaceInvalidUtf8(in.options.blockedLegend)
                                  : first.stage == StageId::Weights && !first.weight
                                      ? "blocked by the mask: weight exactly 0"
                                      : "blocked by the mask (score \u2212\u221e)");
  fig.nanLegend = fonts.shape("NaN");
  fig.flaggedLegend = fonts.shape("every key blocked: weights and head output 0 (output row = b_o)");
}

// Label strides, label font and angle, and the panel's size around its cells.
void measurePanel(Figure& fig, const FigureInput& in, double cellW, double cellH, FigureSizes& z) {
  FigureLayout& L = fig.layout;
  L.rowLabelStride = static_cast<int>(std::ceil(kLabelSpacing / cellH));
  L.colLabelStride = static_cast<int>(std::ceil(kLabelSpacing / cellW));
  const double rowSpacing = L.rowLabelStride * cellH, colSpacing = L.colLabelStride * cellW;
  fig.labelFont = std::clamp(0.78 * std::min(rowSpacing, colSpacing), 8.0, 12.0);
  fig.colAngle = colSpacing >= 2.0 * fig.labelFont ? kPi / 4 : kPi / 2;
  const double capH = 0.73 * fig.labelFont;  // DejaVu's cap height, for centring on a cell
  const double sinA = std::sin(fig.colAngle), cosA = std::cos(fig.colAngle);

  double rowW = 0, colExtent = 0, leftOverhang = 0;
  for (const PanelText& t : fig.text) {
    for (int r = 0; r < in.rows; r += L.rowLabelStride) {
      rowW = std::max(rowW, in.fonts.width(in.measure, t.rows[static_cast<std::size_t>(r)], fig.labelFont, false));
    }
    for (int c = 0; c < in.cols; c += L.colLabelStride) {
      const double w = in.fonts.width(in.measure, t.cols[static_cast<std::size_t>(c)], fig.labelFont, false);
      colExtent = std::max(colExtent, w * sinA + capH * cosA);
      // A slanted label reaches left of its column; the first columns may reach past the
      // row labels.
      leftOverhang = std::max(leftOverhang, w * cosA + capH * sinA - (c + 0.5) * cellW);
    }
  }
  fig.rowLabelW = std::ceil(rowW);
  const double axisW = std::ceil(kAxisFont * 1.6);  // the rotated row-axis title
  const double besideGrid = axisW + fig.rowLabelW + kPad;
  z.panelLeft = std::ceil(besideGrid + std::max(0.0, leftOverhang - besideGrid));
  z.headingH = in.grid ? std::ceil(kAxisFont * 1.9) : 0;
  z.colLabelH = std::ceil(colExtent + kPad);
  z.axisH = std::ceil(kAxisFont * 1.8);
  z.panelW = z.panelLeft + in.cols * cellW;
  z.panelH = z.headingH + in.rows * cellH + z.colLabelH + z.axisH;
}

// Caption: title, subtitle, the formula (auto titles), a note when labels were thinned.
void measureCaption(Figure& fig, const FigureInput& in, FigureSizes& z) {
  const FigureLayout& L = fig.layout;
  Fonts& fonts = in.fonts;
  fig.caption.clear();
  // Caller text may hold line breaks (one caption line each) and may be very long (cut, so
  // a runaway subtitle cannot widen the picture past its cap).
  auto addLines = [&](const std::string& text, double fontSize, bool bold, Rgb color) {
    std::size_t start = 0;
    for (int n = 0; n < kMaxCaptionLines && start <= text.size(); ++n) {
      std::size_t end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      std::string line = text.substr(start, end - start);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (!line.empty()) fig.caption.push_back({fonts.shape(truncateLabel(line, kMaxCaptionCodePoints)), fontSize, bold, color});
      start = end + 1;
    }
  };
  const bool autoTitle = in.options.title.empty();
  fig.documentTitle = autoTitle ? defaultTitle(in.slices, in.grid) : replaceInvalidUtf8(in.options.title);
  addLines(fig.documentTitle, kTitleFont, true, kInk);
  if (!in.options.subtitle.empty()) addLines(replaceInvalidUtf8(in.options.subtitle), kCaptionFont, false, kSoftInk);
  if (autoTitle) {
    const Slice2D& first = *in.slices[0];
    addLines(first.weight ? weightMeaning(*first.weight) : stageInfo(first.stage).formula, kCaptionFont, false, kSoftInk);
  }
  if (L.rowLabelStride > 1 || L.colLabelStride > 1) {
    std::string note = "labels thinned to fit:";
    if (L.rowLabelStride > 1) note += " every " + ordinal(L.rowLabelStride) + " row";
    if (L.rowLabelStride > 1 && L.colLabelStride > 1) note += ",";
    if (L.colLabelStride > 1) note += " every " + ordinal(L.colLabelStride) + " column";
    fig.caption.push_back({fonts.shape(note), kCaptionFont, false, kSoftInk});
  }
  z.captionH = 0;
  z.captionW = 0;
  fig.captionBaselines.clear();
  for (const CaptionLine& line : fig.caption) {
    const double lineH = std::ceil(line.size * 1.45);
    fig.captionBaselines.push_back(kMargin + z.captionH + line.size);
    z.captionH += lineH;
    z.captionW = std::max(z.captionW, fonts.width(in.measure, line.runs, line.size, line.bold));
  }
  z.captionH = std::ceil(z.captionH + 10);
}

// Colour bar and legend to the right of the panels, then the whole picture's size.
void measureRightAndTotal(Figure& fig, const FigureInput& in, double cellH, FigureSizes& z) {
  Fonts& fonts = in.fonts;
  double tickW = 0;
  for (const std::string& t : fig.ticks) tickW = std::max(tickW, fonts.width(in.measure, fonts.shape(t), kTickFont, false));
  double legendW = 0;
  if (fig.hasBlocked) legendW = std::max(legendW, 20 + fonts.width(in.measure, fig.blockedLegend, kTickFont, false));
  if (fig.hasNan) legendW = std::max(legendW, 20 + fonts.width(in.measure, fig.nanLegend, kTickFont, false));
  if (fig.hasFlagged) legendW = std::max(legendW, 20 + fonts.width(in.measure, fig.flaggedLegend, kTickFont, false));
  z.rightW = std::ceil(std::max(kBarWidth + kTickLength + kTickGap + tickW, legendW));
  const double panelsH = in.gridRows * z.panelH + (in.gridRows - 1) * in.gridGap;
  fig.barH = std::floor(std::clamp(in.gridRows * in.rows * cellH, kBarMinHeight, kBarMaxHeight));
  const double legendH = (fig.hasBlocked ? 20 : 0) + (fig.hasNan ? 20 : 0) + (fig.hasFlagged ? 20 : 0) +
                         ((fig.hasBlocked || fig.hasNan || fig.hasFlagged) ? 16 : 0);
  const double rightH = z.headingH + 8 + fig.barH + 8 + legendH;

  const double panelsW = in.gridCols * z.panelW + (in.gridCols - 1) * in.gridGap;
  z.width = std::ceil(kMargin + std::max(panelsW + kPanelGap + z.rightW, z.captionW) + kMargin);
  z.height = std::ceil(kMargin + z.captionH + std::max(panelsH, rightH) + kMargin);
}

FigureSizes measureFigure(Figure& fig, const FigureInput& in, double cellW, double cellH) {
  FigureSizes z;
  measurePanel(fig, in, cellW, cellH, z);
  measureCaption(fig, in, z);
  measureRightAndTotal(fig, in, cellH, z);
  return z;
}

// Shrinks the cells until the picture fits kMaxSide (only the grid part scales with the cell
// size; labels and margins stay); returns the last measurement.
FigureSizes fitCells(Figure& fig, const FigureInput& in, double& cellW, double& cellH) {
  FigureSizes z;
  for (int attempt = 0; attempt < 8; ++attempt) {
    z = measureFigure(fig, in, cellW, cellH);
    if (z.width <= kMaxSide && z.height <= kMaxSide) break;
    bool changed = false;
    if (z.width > kMaxSide && cellW > 1) {
      const double fixed = z.width - in.gridCols * in.cols * cellW;
      const double next = std::clamp(std::floor((kMaxSide - fixed) / (in.gridCols * in.cols)), 1.0, cellW - 1);
      changed = changed || next != cellW;
      cellW = next;
    }
    if (z.height > kMaxSide && cellH > 1) {
      const double fixed = z.height - in.gridRows * in.rows * cellH;
      const double next = std::clamp(std::floor((kMaxSide - fixed) / (in.gridRows * in.rows)), 1.0, cellH - 1);
      changed = changed || next != cellH;
      cellH = next;
    }
    if (!changed) break;
  }
  return z;
}

// Final positions: every panel, the colour bar, the legend; whether numbers fit in the cells.
void placeFigure(Figure& fig, const FigureInput& in, const FigureSizes& z, double cellW, double cellH) {
  FigureLayout& L = fig.layout;
  L.width = static_cast<int>(z.width);
  L.height = static_cast<int>(z.height);
  const double top = kMargin + z.captionH;
  for (std::size_t i = 0; i < in.slices.size(); ++i) {
    const int gx = static_cast<int>(i) % in.gridCols, gy = static_cast<int>(i) / in.gridCols;
    HeatmapLayout p;
    p.x0 = kMargin + gx * (z.panelW + in.gridGap) + z.panelLeft;
    p.y0 = top + gy * (z.panelH + in.gridGap) + z.headingH;
    p.cellW = cellW;
    p.cellH = cellH;
    p.rows = in.rows;
    p.cols = in.cols;
    L.panels.push_back(p);
  }
  const double panelsW = in.gridCols * z.panelW + (in.gridCols - 1) * in.gridGap;
  fig.barX = kMargin + panelsW + kPanelGap;
  fig.barY = top + z.headingH + 8;
  fig.legendY = fig.barY + fig.barH + 24;
  L.barX = fig.barX;
  L.barY = fig.barY;
  L.barW = kBarWidth;
  L.barH = fig.barH;
  L.tickLabelX = fig.barX + kBarWidth + kTickLength + kTickGap;
  L.legendY = fig.legendY;

  // Numbers inside cells only when one fits: "-0.00" at the chosen size must fit the cell.
  const double sampleW = in.fonts.width(in.measure, in.fonts.shape("-0.00"), 10.0, false) / 10.0;  // per px of size
  fig.valueFont = std::min({11.0, 0.5 * cellH, (cellW - 4) / std::max(sampleW, 1e-6)});
  L.showValues = in.options.showValues.value_or(cellW >= 34 && cellH >= 16) && fig.valueFont >= 6;
}

}  // namespace

Result<Figure> buildFigure(const std::vector<const Slice2D*>& slices, bool grid, const ExportOptions& options,
                           Fonts& fonts, cairo_t* measure) {
  if (auto st = checkSlices(slices); !st) return st.error();
  const int rows = slices[0]->rows, cols = slices[0]->cols;
  const int gridCols = static_cast<int>(std::ceil(std::sqrt(static_cast<double>(slices.size()))));
  const int gridRows = static_cast<int>((slices.size() + static_cast<std::size_t>(gridCols) - 1) /
                                        static_cast<std::size_t>(gridCols));
  const FigureInput in{slices, grid, options, fonts, measure, rows, cols, gridCols, gridRows, grid ? kPanelGap : 0};
  Figure fig;
  fig.slices = slices;
  chooseColors(fig, in);
  shapeFixedText(fig, in);
  double cellW = options.cellPixels > 0 ? options.cellPixels : autoCell(cols);
  double cellH = options.cellPixels > 0 ? options.cellPixels : autoCell(rows);
  const FigureSizes z = fitCells(fig, in, cellW, cellH);
  if (z.width > kHardMaxSide || z.height > kHardMaxSide) {
    return makeError("the picture would be " + std::to_string(static_cast<long long>(z.width)) + " x " +
                     std::to_string(static_cast<long long>(z.height)) + " px, above the " +
                     std::to_string(static_cast<int>(kHardMaxSide)) +
                     " px a picture can have; export the numbers (CSV or .npy) instead");
  }
  placeFigure(fig, in, z, cellW, cellH);
  return fig;
}

}  // namespace mhascope::export_detail
