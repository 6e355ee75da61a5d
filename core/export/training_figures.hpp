// Pictures of a training run, through cairo like every exported heatmap (PNG / SVG / PDF):
//   contact sheet — chosen heads (rows) × chosen steps (columns) as small attention maps of the
//                   probe sequence, each column headed by its step number, each row by its head,
//                   one colour scale (viridis, 0 … 1) with a colour bar, token labels on the
//                   first column and the bottom row when they fit;
//   curves        — panels of lines over the step axis (loss, accuracy, role scores) with tick
//                   values, an optional log-y axis, a legend and an optional marked step;
//   animation     — the two together, one frame per step, as an animated GIF.
// Plain data in (no training types): the window and tests fill these structs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "export/export.hpp"  // ImageFormat, formatFromPath, SeeAs
#include "export/gif.hpp"     // RgbFrame

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

// A training run as an animation: at each of the sheet's steps, the heads' attention on the probe
// (the contact sheet's column of that step) beside the curves with that step marked. Every frame
// is drawn by the code that draws the contact sheet and the curves pictures, so frame k is those
// two pictures side by side, encoded as an animated GIF (export/gif.hpp).
inline constexpr int kDefaultAnimationDelay = 25;   // 1/100 s per frame: 40 frames in 10 s
inline constexpr int kDefaultAnimationFrames = 40;
struct TrainingAnimation {
  ContactSheet sheet;   // one column per frame: sheet.steps are the frames' steps
  CurvesFigure curves;  // markStep is set per frame
  int delayCentiseconds = kDefaultAnimationDelay;
  // > 0: every frame scaled to this many pixels wide, its height in proportion, each pixel the
  // nearest of the drawn frame's (so the frame's flat colours stay exact); 0: as drawn.
  int width = 0;
};
inline constexpr int kMinAnimationWidth = 160, kMaxAnimationWidth = 4000;
inline constexpr int kMaxAnimationFrames = 400;
// Frames × width × height the encoder may be asked for (a frame at a time is in memory).
inline constexpr std::uint64_t kMaxAnimationPixels = 400'000'000;

// `count` indices spread evenly over [0, available), the first and the last included; all of
// them when there are no more than `count`.
std::vector<std::size_t> evenlySpaced(std::size_t available, std::size_t count);
// Frame k's picture: sheet column k, and at its right the curves marked at its step. Errors as for the two
// pictures, and k out of range.
Result<RgbFrame> renderAnimationFrame(const TrainingAnimation& a, std::size_t k);
// The GIF's bytes; errors: more than kMaxAnimationFrames frames or kMaxAnimationPixels pixels
// (naming the numbers), and those of the frames.
Result<std::string> renderTrainingGif(const TrainingAnimation& a);
// Renders, then writes atomically (.gif only; the error names the path).
Status exportTrainingGif(const std::string& path, const TrainingAnimation& a);

}  // namespace mhascope
