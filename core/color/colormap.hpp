// Colour mapping: value → RGBA through a 256-entry colormap table, the one pure function that
// both the GUI (textures) and the exporters (PNG/SVG/PDF) use, so a picture looks the same
// wherever it is made. The data kind picks the map and the range: signed scores → diverging map
// with a range symmetric about 0; weights in [0, 1] → viridis over [0, 1].
// Non-finite values never borrow a table colour: NaN and −inf (a blocked cell) have their own.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "util/result.hpp"
#include "attention/data_kind.hpp"

namespace mhascope {

// In picker order (the enum's order is the picker's).
enum class ColormapId {
  Viridis,    // sequential, perceptually uniform (dark purple → yellow)
  Cividis,    // sequential, made to look the same with and without red-green deficiency (blue → yellow)
  Magma,      // sequential, perceptually uniform (black → pale yellow)
  Diverging,  // blue → near-white → red, symmetric lightness; for signed data about 0
  Coolwarm,   // Moreland's blue → grey-white → red diverging map; for signed data about 0
  Gray,       // black → white
};
inline constexpr int kColormapCount = 6;
inline constexpr int kColormapEntries = 256;

// All maps in picker order.
const std::array<ColormapId, kColormapCount>& allColormaps();
// "viridis" | "cividis" | "magma" | "diverging" | "coolwarm" | "gray"
const char* colormapName(ColormapId id);
// Case-insensitive; the error names the input and the allowed names.
Result<ColormapId> colormapFromName(std::string_view name);
// Signed → Diverging, Probability → Viridis.
ColormapId defaultColormap(DataKind kind);

struct RGBA8 {
  std::uint8_t r = 0, g = 0, b = 0, a = 255;
  friend bool operator==(const RGBA8&, const RGBA8&) = default;
};

// The value interval spread over the table: lo → entry 0, hi → entry 255.
struct ColorRange {
  float lo = 0.0f, hi = 1.0f;
};

// Probability → [0, 1]. Signed → [-m, m] with m = max |finite value| (1e-6 when every finite
// value is 0, so the range never collapses). NaN and ±inf are ignored.
ColorRange rangeFor(DataKind kind, const float* data, std::size_t n);
// rangeFor over numbers read a block at a time (a lazy stage): add() every block, then range()
// is what rangeFor over all of them gives.
class RangeAccumulator {
 public:
  explicit RangeAccumulator(DataKind kind) : kind_(kind) {}
  void add(const float* data, std::size_t n);
  ColorRange range() const;

 private:
  DataKind kind_;
  float maxAbs_ = 0.0f;
};
// The smallest range holding both (for one shared scale across several heatmaps).
ColorRange unionRange(ColorRange a, ColorRange b);

// Colours no table contains (tests check the distance to every entry of every map).
RGBA8 nanColor();                        // magenta: a NaN is a bug worth seeing
// Head `index`'s colour in every chart and legend (the window's, the exported curves and
// animations): golden-angle steps around the hue circle (hue 0.58 + 0.381966 · index, saturation
// 0.55, value 0.95) keep neighbouring heads far apart for any h.
RGBA8 headLineColor(int index);
RGBA8 blockedColor(ColormapId id);       // −inf (masked cell); a neutral dark grey, except on
                                         // the gray map, where every grey is a value
// A cell the mask blocks is drawn the same in every view — the heatmap, all heads, the lessons
// and exported pictures: filled with blockedColor (its score is −inf, its weight exactly 0) and,
// when the cell is large enough, crossed with this light grey (so a blocked 0 is never read as
// a weight that merely came out small).
RGBA8 blockedMarkColor();
// A NaN cell, when large enough, carries a dark dot on its magenta (the cross is the blocked
// cell's): so NaN, blocked and every value differ by a pattern whose lightness stands out from
// its fill in every "see as" preview, never by hue alone (tests/core/see_as_test.cpp checks
// every map × preview).
RGBA8 nanMarkColor();
// A fully masked query row is framed in this red, edged in this near-black so the frame shows
// on light and dark cells alike.
RGBA8 maskedRowColor();
RGBA8 maskedRowEdgeColor();
RGBA8 tableColor(ColormapId id, int index);  // entry 0..255 (clamped)

// The table entry of one value: index = round((v - lo) / (hi - lo) * 255) clamped to 0..255;
// +inf → top entry, −inf → blockedColor, NaN → nanColor.
int tableIndex(ColorRange range, float v);
RGBA8 mapValue(ColormapId id, ColorRange range, float v);

// rows*cols row-major values → rows*cols*4 bytes RGBA (a texture or an image row by row).
void fillRgba(ColormapId id, ColorRange range, const float* data, int rows, int cols, std::uint8_t* out);

// The value at the centre of the table entry nearest to the colour (RGB distance; alpha
// ignored): lo + i/255 * (hi - lo). nanColor → NaN, blockedColor → −inf.
float invertColor(ColormapId id, ColorRange range, RGBA8 color);

}  // namespace mhascope
