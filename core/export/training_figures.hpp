// Pictures of a training run, through cairo like every exported heatmap (PNG / SVG / PDF):
//   contact sheet — chosen heads (rows) × chosen steps (columns) as small attention maps of the
//                   probe sequence, each column headed by its step number, each row by its head,
//                   one colour scale (viridis, 0 … 1) with a colour bar, token labels on the
//                   first column and the bottom row when they fit;
//   curves        — panels of lines over the step axis (loss, accuracy, role scores) with tick
//                   values, an optional log-y axis, a legend and an optional marked step.
// Plain data in (no training types): the window and tests fill these structs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "export/export.hpp"  // ImageFormat, formatFromPath, SeeAs

namespace mhascope {

struct ContactSheet {
  std::string title;                      // "induction · 2 layers × 2 heads · probe sequence"
  std::vector<std::string> rowTitles;     // one per head shown: "layer 0 head 1"
  std::vector<std::int64_t> steps;        // one per column
  int seq = 0;                            // T
  std::vector<std::string> tokens;        // T labels
  // rows * cols maps of T*T weights in [0, 1], index row * cols + col, each row-major (query, key).
  std::vector<std::vector<float>> maps;
  bool causal = true;                     // keys after the query drawn as blocked (the mask's look)
  SeeAs seeAs = SeeAs::Normal;            // every colour as this reader sees it
};

struct CurveSeries {
  std::string name;
  std::vector<double> xs, ys;
  std::uint32_t rgb = 0x4c72b0;           // 0xRRGGBB
  bool dashed = false;
};
struct CurvePanel {
  std::string title;                      // "probe loss"
  std::vector<CurveSeries> series;
  bool logY = false;
  bool fromZero = true;                   // linear axes start at 0
  std::vector<double> hLines;             // reference levels drawn dotted (a role threshold)
};
struct CurvesFigure {
  std::string title;
  std::string xName = "step";
  std::vector<CurvePanel> panels;         // stacked vertically, one shared step axis
  std::int64_t markStep = -1;             // a vertical line at this step (the chosen one); -1 none
  SeeAs seeAs = SeeAs::Normal;            // every colour as this reader sees it
};

// The file's bytes. Errors: no rows or steps, maps of the wrong count or size, a picture too large.
Result<std::string> renderContactSheet(const ContactSheet& sheet, ImageFormat format);
Result<std::string> renderCurves(const CurvesFigure& fig, ImageFormat format);
// Render (format from the extension), then write atomically; errors name the path.
Status exportContactSheet(const std::string& path, const ContactSheet& sheet);
Status exportCurves(const std::string& path, const CurvesFigure& fig);

}  // namespace mhascope
