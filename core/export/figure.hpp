// A picture before it is drawn: the layout constants, the text shaped for it and where every
// part goes (Figure). buildFigure() (figure_layout.cpp) measures and places; drawFigure()
// (draw.cpp) paints. Layout first, with a scratch context for text measurement, so tests can ask
// where each cell landed (FigureLayout) and read the colours back from the PNG.
#pragma once

#include <cairo.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "export/export.hpp"
#include "export/fonts.hpp"

namespace mhascope::export_detail {

inline constexpr double kMaxSide = 8000;         // soft cap on the picture side; cells shrink to fit
inline constexpr double kHardMaxSide = 32000;    // cairo image surfaces end at 32767 px
inline constexpr double kMinLabelCell = 14;      // smallest auto cell that still carries every label
inline constexpr double kMaxAutoCell = 56;       // larger cells only waste paper
inline constexpr double kTargetGridSide = 640;   // auto cells aim for a grid about this big
inline constexpr double kLabelSpacing = 12;      // labels closer than this overlap: thin them
inline constexpr double kMargin = 20;
inline constexpr double kPanelGap = 28;
inline constexpr double kPad = 5;                // between the grid and its labels
inline constexpr double kBarWidth = 18;
inline constexpr double kBarMinHeight = 140, kBarMaxHeight = 480;
inline constexpr double kTickLength = 4, kTickGap = 6;  // colour-bar tick, then blank before its label
inline constexpr double kMinCrossCell = 8;              // blocked cells this small show the colour only
inline constexpr double kTitleFont = 18, kCaptionFont = 12, kAxisFont = 12, kTickFont = 11;
inline constexpr std::size_t kMaxLabelCodePoints = 16;
inline constexpr std::size_t kMaxCaptionCodePoints = 160;
inline constexpr int kMaxCaptionLines = 4;
inline constexpr double kPi = 3.14159265358979323846;

struct Rgb {
  double r, g, b;
};
inline constexpr Rgb kInk{0.1, 0.1, 0.1};
inline constexpr Rgb kSoftInk{0.35, 0.35, 0.35};
inline constexpr Rgb kFlag{0.84, 0.12, 0.12};  // fully masked rows

struct CaptionLine {
  Runs runs;
  double size;
  bool bold;
  Rgb color;
};

struct PanelText {
  Runs heading;  // "head 2" in a grid; empty for a single heatmap
  std::vector<Runs> rows, cols;
  Runs rowAxis, colAxis;
  std::vector<std::uint8_t> flagged;  // (rows) fully masked query rows, marked beside the grid
};

// Everything the drawing pass needs; the layout numbers are all whole pixels so PNG cells land
// on pixel boundaries.
struct Figure {
  FigureLayout layout;
  std::vector<const Slice2D*> slices;
  std::vector<PanelText> text;
  std::vector<CaptionLine> caption;
  std::string documentTitle;  // for PDF metadata and the SVG <title>
  double labelFont = 12, valueFont = 10;
  double colAngle = kPi / 2;  // column labels: 90° when dense, 45° when there is room
  double rowLabelW = 0;
  double captionTop = kMargin;
  std::vector<double> captionBaselines;
  double barX = 0, barY = 0, barH = 0;
  std::array<std::string, 3> ticks;  // hi, mid, lo
  bool hasBlocked = false, hasNan = false, hasFlagged = false;
  Runs blockedLegend, nanLegend, flaggedLegend;
  double legendY = 0;
};

// Measures the text, fits the cells under the size caps and places every part.
Result<Figure> buildFigure(const std::vector<const Slice2D*>& slices, bool grid, const ExportOptions& options,
                           Fonts& fonts, cairo_t* measure);
// Paints a built figure onto `cr` (any cairo surface: PNG, SVG, PDF).
Status drawFigure(cairo_t* cr, Fonts& fonts, const Figure& fig);

}  // namespace mhascope::export_detail
