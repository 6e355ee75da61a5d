// Heatmap pictures through cairo (PNG / SVG / PDF): layout, drawing and the atomic export.
//
// [SECTION] formats          extension → ImageFormat
// [SECTION] cairo plumbing   RAII handles, rendering into a std::string
// [SECTION] text             UTF-8 labels, per-code-point font fallback, measuring, drawing
// [SECTION] numbers          tick and cell value text (locale-independent)
// [SECTION] layout           cell size, label thinning, where everything goes
// [SECTION] drawing          cells, labels, colour bar, legend, captions
// [SECTION] public API       render*, layout*, export*
//
// Layout is computed first, with a scratch context for text measurement, and drawn second, so
// tests can ask where each cell landed (FigureLayout) and read the colours back from the PNG.
#include "export/export.hpp"

#include <cairo-pdf.h>
#include <cairo-svg.h>
#include <cairo.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <unordered_map>

#include "io/file_io.hpp"
#include "attention/tokenizer.hpp"  // sanitizeUtf8

namespace mhascope {

// =============================================================================================
// [SECTION] formats
// =============================================================================================

const char* imageFormatName(ImageFormat format) {
  switch (format) {
    case ImageFormat::Png: return "png";
    case ImageFormat::Svg: return "svg";
    case ImageFormat::Pdf: return "pdf";
  }
  return "?";
}

Result<ImageFormat> formatFromPath(const std::string& path) {
  const auto slash = path.find_last_of('/');
  const auto dot = path.find_last_of('.');
  const bool hasExt = dot != std::string::npos && (slash == std::string::npos || dot > slash);
  std::string ext = hasExt ? path.substr(dot + 1) : std::string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (ext == "png") return ImageFormat::Png;
  if (ext == "svg") return ImageFormat::Svg;
  if (ext == "pdf") return ImageFormat::Pdf;
  const std::string shown = hasExt ? "'." + sanitizeUtf8(path.substr(dot + 1)) + "'" : std::string("(none)");
  return makeError("cannot export '" + sanitizeUtf8(path) + "': unknown picture extension " + shown +
                   " (use .png, .svg or .pdf)");
}

namespace {

// =============================================================================================
// [SECTION] cairo plumbing
// =============================================================================================

struct SurfaceDeleter {
  void operator()(cairo_surface_t* s) const { cairo_surface_destroy(s); }
};
struct ContextDeleter {
  void operator()(cairo_t* cr) const { cairo_destroy(cr); }
};
struct FaceDeleter {
  void operator()(cairo_font_face_t* f) const { cairo_font_face_destroy(f); }
};
struct ScaledFontDeleter {
  void operator()(cairo_scaled_font_t* f) const { cairo_scaled_font_destroy(f); }
};
using SurfacePtr = std::unique_ptr<cairo_surface_t, SurfaceDeleter>;
using ContextPtr = std::unique_ptr<cairo_t, ContextDeleter>;
using FacePtr = std::unique_ptr<cairo_font_face_t, FaceDeleter>;
using ScaledFontPtr = std::unique_ptr<cairo_scaled_font_t, ScaledFontDeleter>;

// Cairo streams the file through a C callback: collect it in a string. No exception may cross
// cairo's C frames, so an allocation failure becomes a cairo write error.
struct Sink {
  std::string bytes;
};

cairo_status_t writeToSink(void* closure, const unsigned char* data, unsigned int length) {
  try {
    static_cast<Sink*>(closure)->bytes.append(reinterpret_cast<const char*>(data), length);
    return CAIRO_STATUS_SUCCESS;
  } catch (...) {
    return CAIRO_STATUS_WRITE_ERROR;
  }
}

Status cairoOk(cairo_status_t status, const char* what) {
  if (status == CAIRO_STATUS_SUCCESS) return Ok{};
  return makeError(std::string(what) + ": " + cairo_status_to_string(status));
}

// =============================================================================================
// [SECTION] text
// =============================================================================================

// Tried in order for every code point; the first face that has a glyph draws it. Cairo's toy
// text API draws with one face and no fallback, so without this a CJK token would come out as
// empty boxes. Families that are not installed resolve to some other face, which the coverage
// check then simply finds lacking or redundant.
constexpr std::array<const char*, 5> kFontFamilies = {"DejaVu Sans", "Droid Sans Fallback", "Noto Sans CJK JP",
                                                      "Noto Color Emoji", "Symbola"};

struct TextRun {
  int face = 0;  // index into kFontFamilies
  std::string text;
};
using Runs = std::vector<TextRun>;

// Input is valid UTF-8 (sanitizeUtf8 ran first), so decoding needs no error paths.
char32_t decodeAt(std::string_view s, std::size_t& i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  int len = b0 < 0x80 ? 1 : b0 < 0xE0 ? 2 : b0 < 0xF0 ? 3 : 4;
  if (i + static_cast<std::size_t>(len) > s.size()) len = 1;
  char32_t cp = len == 1 ? b0 : len == 2 ? (b0 & 0x1Fu) : len == 3 ? (b0 & 0x0Fu) : (b0 & 0x07u);
  for (int k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + static_cast<std::size_t>(k)]) & 0x3Fu);
  i += static_cast<std::size_t>(len);
  return cp;
}

std::string codePointName(char32_t cp) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "U+%04X", static_cast<unsigned>(cp));
  return buf;
}

// Invisible joiners and variation selectors: dropped when no font has them, rather than
// spelled out as "U+FE0F" in the middle of a label.
bool isInvisibleFormatChar(char32_t cp) {
  return cp == 0x200B || cp == 0x200C || cp == 0x200D || cp == 0x2060 || (cp >= 0xFE00 && cp <= 0xFE0F) ||
         (cp >= 0xE0100 && cp <= 0xE01EF);
}

class Fonts {
 public:
  Fonts() {
    cairo_font_options_t* fo = cairo_font_options_create();
    cairo_matrix_t size, identity;
    cairo_matrix_init_scale(&size, 12, 12);
    cairo_matrix_init_identity(&identity);
    for (const char* family : kFontFamilies) {
      regular_.emplace_back(cairo_toy_font_face_create(family, CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL));
      probes_.emplace_back(cairo_scaled_font_create(regular_.back().get(), &size, &identity, fo));
    }
    bold_.reset(cairo_toy_font_face_create(kFontFamilies[0], CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_BOLD));
    cairo_font_options_destroy(fo);
  }

  // A label ready to draw: runs of text per face; code points no face has become "U+1F600".
  Runs shape(std::string_view utf8) {
    Runs runs;
    bool afterName = false;  // a "U+…" name is set off from its neighbours by spaces
    auto append = [&runs, &afterName](int face, std::string_view piece, bool isName) {
      const bool empty = runs.empty();
      if (!empty && (isName || afterName)) append0(runs, " ");
      if (runs.empty() || runs.back().face != face) runs.push_back(TextRun{face, {}});
      runs.back().text.append(piece);
      afterName = isName;
    };
    std::size_t i = 0;
    while (i < utf8.size()) {
      const std::size_t start = i;
      const char32_t cp = decodeAt(utf8, i);
      const std::string_view bytes = utf8.substr(start, i - start);
      if (cp < 0x20 || (cp >= 0x7F && cp < 0xA0)) {  // control characters have no picture
        append(0, codePointName(cp), true);
        continue;
      }
      const int face = faceFor(cp);
      if (face >= 0) {
        append(face, bytes, false);
      } else if (!isInvisibleFormatChar(cp)) {
        append(0, codePointName(cp), true);
      }
    }
    return runs;
  }

  static void append0(Runs& runs, std::string_view text) {
    if (runs.empty() || runs.back().face != 0) runs.push_back(TextRun{0, {}});
    runs.back().text.append(text);
  }

  double width(cairo_t* cr, const Runs& runs, double size, bool bold) const {
    double w = 0;
    for (const TextRun& run : runs) {
      select(cr, run.face, size, bold);
      cairo_text_extents_t ext;
      cairo_text_extents(cr, run.text.c_str(), &ext);
      w += ext.x_advance;
    }
    return w;
  }

  // Draws from the current point along the current transformation.
  void draw(cairo_t* cr, const Runs& runs, double size, bool bold) const {
    for (const TextRun& run : runs) {
      select(cr, run.face, size, bold);
      cairo_show_text(cr, run.text.c_str());
    }
  }

 private:
  void select(cairo_t* cr, int face, double size, bool bold) const {
    cairo_set_font_face(cr, bold && face == 0 ? bold_.get() : regular_[static_cast<std::size_t>(face)].get());
    cairo_set_font_size(cr, size);
  }

  int faceFor(char32_t cp) {
    if (auto it = coverage_.find(cp); it != coverage_.end()) return it->second;
    std::string utf8;
    appendUtf8(utf8, cp);
    int found = -1;
    for (std::size_t f = 0; f < probes_.size() && found < 0; ++f) {
      cairo_scaled_font_t* sf = probes_[f].get();
      if (cairo_scaled_font_status(sf) != CAIRO_STATUS_SUCCESS) continue;
      cairo_glyph_t* glyphs = nullptr;
      int count = 0;
      const cairo_status_t st = cairo_scaled_font_text_to_glyphs(sf, 0, 0, utf8.c_str(), static_cast<int>(utf8.size()),
                                                                 &glyphs, &count, nullptr, nullptr, nullptr);
      // Glyph index 0 is the font's ".notdef" box: the face does not have this character.
      if (st == CAIRO_STATUS_SUCCESS && count == 1 && glyphs[0].index != 0) found = static_cast<int>(f);
      cairo_glyph_free(glyphs);
    }
    coverage_.emplace(cp, found);
    return found;
  }

  static void appendUtf8(std::string& out, char32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  std::vector<FacePtr> regular_;
  std::vector<ScaledFontPtr> probes_;  // one 12 px instance per face, only to ask for glyphs
  FacePtr bold_;
  std::unordered_map<char32_t, int> coverage_;  // code point → face, -1 = none has it
};

// Long tokens would push the heatmap off the page: keep the first code points and mark the cut.
std::string truncateLabel(const std::string& utf8, std::size_t maxCodePoints) {
  std::size_t i = 0, n = 0;
  while (i < utf8.size() && n < maxCodePoints) {
    decodeAt(utf8, i);
    ++n;
  }
  if (i >= utf8.size()) return utf8;
  return utf8.substr(0, i) + "\u2026";
}

// =============================================================================================
// [SECTION] numbers
// =============================================================================================

// std::to_chars never consults the locale: a German LC_NUMERIC must not turn 0.5 into "0,5".
std::string formatGeneral(double v, int significant) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+inf" : "-inf";
  if (v == 0) v = 0;  // no "-0"
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, significant);
  return std::string(buf, res.ptr);
}

// A cell's number: two decimals for weights and small scores, fewer as the magnitude grows so
// the text keeps to about five characters.
std::string formatCell(float value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+inf" : "";  // blocked cells say it with colour
  const double v = value;
  const double a = std::abs(v);
  if (a >= 1e4) return formatGeneral(v, 2);
  const int decimals = a < 10 ? 2 : a < 100 ? 1 : 0;
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, decimals);
  std::string s(buf, res.ptr);
  if (s[0] == '-' && s.find_first_not_of("-0.") == std::string::npos) s.erase(0, 1);  // "-0.00" → "0.00"
  return s;
}

// =============================================================================================
// [SECTION] layout
// =============================================================================================

constexpr double kMaxSide = 8000;         // soft cap on the picture side; cells shrink to fit
constexpr double kHardMaxSide = 32000;    // cairo image surfaces end at 32767 px
constexpr double kMinLabelCell = 14;      // smallest auto cell that still carries every label
constexpr double kMaxAutoCell = 56;       // larger cells only waste paper
constexpr double kTargetGridSide = 640;   // auto cells aim for a grid about this big
constexpr double kLabelSpacing = 12;      // labels closer than this overlap: thin them
constexpr double kMargin = 20;
constexpr double kPanelGap = 28;
constexpr double kPad = 5;                // between the grid and its labels
constexpr double kBarWidth = 18;
constexpr double kBarMinHeight = 140, kBarMaxHeight = 480;
constexpr double kTickLength = 4, kTickGap = 6;  // colour-bar tick, then blank before its label
constexpr double kMinCrossCell = 8;              // blocked cells this small show the colour only
constexpr double kTitleFont = 18, kCaptionFont = 12, kAxisFont = 12, kTickFont = 11;
constexpr std::size_t kMaxLabelCodePoints = 16;
constexpr std::size_t kMaxCaptionCodePoints = 160;
constexpr int kMaxCaptionLines = 4;
constexpr double kPi = 3.14159265358979323846;

struct Rgb {
  double r, g, b;
};
constexpr Rgb kInk{0.1, 0.1, 0.1};
constexpr Rgb kSoftInk{0.35, 0.35, 0.35};
constexpr Rgb kFlag{0.84, 0.12, 0.12};  // fully masked rows

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
  return fonts.shape(truncateLabel(sanitizeUtf8(labels[static_cast<std::size_t>(i)]), kMaxLabelCodePoints));
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

Result<Figure> buildFigure(const std::vector<const Slice2D*>& slices, bool grid, const ExportOptions& options,
                           Fonts& fonts, cairo_t* measure) {
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

  Figure fig;
  fig.slices = slices;
  FigureLayout& L = fig.layout;
  const DataKind kind = kindOf(*slices[0]);
  L.colormap = options.colormap.value_or(defaultColormap(kind));

  // One colour scale for every panel, so equal colours mean equal values across heads.
  const std::size_t cells = static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols);
  if (options.range) {
    L.range = *options.range;
  } else {
    L.range = rangeFor(kind, slices[0]->data, cells);
    for (std::size_t i = 1; i < slices.size(); ++i) L.range = unionRange(L.range, rangeFor(kind, slices[i]->data, cells));
  }
  for (const Slice2D* s : slices) {
    for (std::size_t k = 0; k < cells; ++k) {
      const float v = s->data[k];
      if (std::isnan(v)) fig.hasNan = true;
      if (v == -std::numeric_limits<float>::infinity()) fig.hasBlocked = true;
    }
    for (std::uint8_t b : s->blockedCells) fig.hasBlocked = fig.hasBlocked || b != 0;
  }

  // --- text that does not depend on the cell size ---------------------------------------------
  for (std::size_t i = 0; i < slices.size(); ++i) {
    const Slice2D& s = *slices[i];
    PanelText t;
    if (grid) t.heading = fonts.shape("head " + std::to_string(s.head >= 0 ? s.head : static_cast<int>(i)));
    t.rows.reserve(static_cast<std::size_t>(rows));
    for (int r = 0; r < rows; ++r) t.rows.push_back(labelRuns(fonts, s.rowLabels, r));
    for (int c = 0; c < cols; ++c) t.cols.push_back(labelRuns(fonts, s.colLabels, c));
    if (s.flaggedRows.size() == static_cast<std::size_t>(rows)) {
      t.flagged = s.flaggedRows;
      for (auto f : t.flagged) fig.hasFlagged = fig.hasFlagged || f != 0;
    }
    t.rowAxis = fonts.shape(sanitizeUtf8(s.rowAxis.empty() ? "rows" : s.rowAxis));
    t.colAxis = fonts.shape(sanitizeUtf8(s.colAxis.empty() ? "columns" : s.colAxis));
    fig.text.push_back(std::move(t));
  }
  const ColorRange shown = L.range;
  fig.ticks = {formatGeneral(shown.hi, 3), formatGeneral(0.5 * (double{shown.lo} + double{shown.hi}), 3),
               formatGeneral(shown.lo, 3)};
  fig.blockedLegend = fonts.shape(slices[0]->stage == StageId::Weights && !slices[0]->weight
                                      ? "blocked by the mask: weight exactly 0"
                                      : "blocked by the mask (score \u2212\u221e)");
  fig.nanLegend = fonts.shape("NaN");
  fig.flaggedLegend = fonts.shape("every key blocked: weights and head output 0 (output row = b_o)");

  const int gridCols = static_cast<int>(std::ceil(std::sqrt(static_cast<double>(slices.size()))));
  const int gridRows = static_cast<int>((slices.size() + static_cast<std::size_t>(gridCols) - 1) /
                                        static_cast<std::size_t>(gridCols));

  double cellW = options.cellPixels > 0 ? options.cellPixels : autoCell(cols);
  double cellH = options.cellPixels > 0 ? options.cellPixels : autoCell(rows);

  // --- sizes for a given cell size; shrink the cells until the picture fits --------------------
  double panelLeft = 0, panelW = 0, panelH = 0, headingH = 0, colLabelH = 0, axisH = 0;
  double width = 0, height = 0, captionH = 0, captionW = 0, rightW = 0;
  const double gridGap = grid ? kPanelGap : 0;
  auto measureAll = [&] {
    L.rowLabelStride = static_cast<int>(std::ceil(kLabelSpacing / cellH));
    L.colLabelStride = static_cast<int>(std::ceil(kLabelSpacing / cellW));
    const double rowSpacing = L.rowLabelStride * cellH, colSpacing = L.colLabelStride * cellW;
    fig.labelFont = std::clamp(0.78 * std::min(rowSpacing, colSpacing), 8.0, 12.0);
    fig.colAngle = colSpacing >= 2.0 * fig.labelFont ? kPi / 4 : kPi / 2;
    const double capH = 0.73 * fig.labelFont;  // DejaVu's cap height, for centring on a cell
    const double sinA = std::sin(fig.colAngle), cosA = std::cos(fig.colAngle);

    double rowW = 0, colExtent = 0, leftOverhang = 0;
    for (const PanelText& t : fig.text) {
      for (int r = 0; r < rows; r += L.rowLabelStride) rowW = std::max(rowW, fonts.width(measure, t.rows[static_cast<std::size_t>(r)], fig.labelFont, false));
      for (int c = 0; c < cols; c += L.colLabelStride) {
        const double w = fonts.width(measure, t.cols[static_cast<std::size_t>(c)], fig.labelFont, false);
        colExtent = std::max(colExtent, w * sinA + capH * cosA);
        // A slanted label reaches left of its column; the first columns may reach past the
        // row labels.
        leftOverhang = std::max(leftOverhang, w * cosA + capH * sinA - (c + 0.5) * cellW);
      }
    }
    fig.rowLabelW = std::ceil(rowW);
    const double axisW = std::ceil(kAxisFont * 1.6);  // the rotated row-axis title
    const double besideGrid = axisW + fig.rowLabelW + kPad;
    panelLeft = std::ceil(besideGrid + std::max(0.0, leftOverhang - besideGrid));
    headingH = grid ? std::ceil(kAxisFont * 1.9) : 0;
    colLabelH = std::ceil(colExtent + kPad);
    axisH = std::ceil(kAxisFont * 1.8);
    panelW = panelLeft + cols * cellW;
    panelH = headingH + rows * cellH + colLabelH + axisH;

    // Caption: title, subtitle, the formula (auto titles), a note when labels were thinned.
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
    const bool autoTitle = options.title.empty();
    fig.documentTitle = autoTitle ? defaultTitle(slices, grid) : sanitizeUtf8(options.title);
    addLines(fig.documentTitle, kTitleFont, true, kInk);
    if (!options.subtitle.empty()) addLines(sanitizeUtf8(options.subtitle), kCaptionFont, false, kSoftInk);
    if (autoTitle) {
      addLines(slices[0]->weight ? weightMeaning(*slices[0]->weight) : stageInfo(slices[0]->stage).formula, kCaptionFont,
               false, kSoftInk);
    }
    if (L.rowLabelStride > 1 || L.colLabelStride > 1) {
      std::string note = "labels thinned to fit:";
      if (L.rowLabelStride > 1) note += " every " + ordinal(L.rowLabelStride) + " row";
      if (L.rowLabelStride > 1 && L.colLabelStride > 1) note += ",";
      if (L.colLabelStride > 1) note += " every " + ordinal(L.colLabelStride) + " column";
      fig.caption.push_back({fonts.shape(note), kCaptionFont, false, kSoftInk});
    }
    captionH = 0;
    captionW = 0;
    fig.captionBaselines.clear();
    for (const CaptionLine& line : fig.caption) {
      const double lineH = std::ceil(line.size * 1.45);
      fig.captionBaselines.push_back(kMargin + captionH + line.size);
      captionH += lineH;
      captionW = std::max(captionW, fonts.width(measure, line.runs, line.size, line.bold));
    }
    captionH = std::ceil(captionH + 10);

    // Colour bar and legend to the right of the panels.
    double tickW = 0;
    for (const std::string& t : fig.ticks) tickW = std::max(tickW, fonts.width(measure, fonts.shape(t), kTickFont, false));
    double legendW = 0;
    if (fig.hasBlocked) legendW = std::max(legendW, 20 + fonts.width(measure, fig.blockedLegend, kTickFont, false));
    if (fig.hasNan) legendW = std::max(legendW, 20 + fonts.width(measure, fig.nanLegend, kTickFont, false));
    if (fig.hasFlagged) legendW = std::max(legendW, 20 + fonts.width(measure, fig.flaggedLegend, kTickFont, false));
    rightW = std::ceil(std::max(kBarWidth + kTickLength + kTickGap + tickW, legendW));
    const double panelsH = gridRows * panelH + (gridRows - 1) * gridGap;
    fig.barH = std::floor(std::clamp(gridRows * rows * cellH, kBarMinHeight, kBarMaxHeight));
    const double legendH = (fig.hasBlocked ? 20 : 0) + (fig.hasNan ? 20 : 0) + (fig.hasFlagged ? 20 : 0) +
                           ((fig.hasBlocked || fig.hasNan || fig.hasFlagged) ? 16 : 0);
    const double rightH = headingH + 8 + fig.barH + 8 + legendH;

    const double panelsW = gridCols * panelW + (gridCols - 1) * gridGap;
    width = std::ceil(kMargin + std::max(panelsW + kPanelGap + rightW, captionW) + kMargin);
    height = std::ceil(kMargin + captionH + std::max(panelsH, rightH) + kMargin);
  };

  for (int attempt = 0; attempt < 8; ++attempt) {
    measureAll();
    if (width <= kMaxSide && height <= kMaxSide) break;
    // Only the grid part scales with the cell size; labels and margins stay.
    bool changed = false;
    if (width > kMaxSide && cellW > 1) {
      const double fixed = width - gridCols * cols * cellW;
      const double next = std::clamp(std::floor((kMaxSide - fixed) / (gridCols * cols)), 1.0, cellW - 1);
      changed = changed || next != cellW;
      cellW = next;
    }
    if (height > kMaxSide && cellH > 1) {
      const double fixed = height - gridRows * rows * cellH;
      const double next = std::clamp(std::floor((kMaxSide - fixed) / (gridRows * rows)), 1.0, cellH - 1);
      changed = changed || next != cellH;
      cellH = next;
    }
    if (!changed) break;
  }
  if (width > kHardMaxSide || height > kHardMaxSide) {
    return makeError("the picture would be " + std::to_string(static_cast<long long>(width)) + " x " +
                     std::to_string(static_cast<long long>(height)) + " px, above the " +
                     std::to_string(static_cast<int>(kHardMaxSide)) +
                     " px a picture can have; export the numbers (CSV or .npy) instead");
  }

  // --- final positions ------------------------------------------------------------------------
  L.width = static_cast<int>(width);
  L.height = static_cast<int>(height);
  const double top = kMargin + captionH;
  for (std::size_t i = 0; i < slices.size(); ++i) {
    const int gx = static_cast<int>(i) % gridCols, gy = static_cast<int>(i) / gridCols;
    HeatmapLayout p;
    p.x0 = kMargin + gx * (panelW + gridGap) + panelLeft;
    p.y0 = top + gy * (panelH + gridGap) + headingH;
    p.cellW = cellW;
    p.cellH = cellH;
    p.rows = rows;
    p.cols = cols;
    L.panels.push_back(p);
  }
  const double panelsW = gridCols * panelW + (gridCols - 1) * gridGap;
  fig.barX = kMargin + panelsW + kPanelGap;
  fig.barY = top + headingH + 8;
  fig.legendY = fig.barY + fig.barH + 24;
  L.barX = fig.barX;
  L.barY = fig.barY;
  L.barW = kBarWidth;
  L.barH = fig.barH;
  L.tickLabelX = fig.barX + kBarWidth + kTickLength + kTickGap;
  L.legendY = fig.legendY;

  // Numbers inside cells only when one fits: "-0.00" at the chosen size must fit the cell.
  const double sampleW = fonts.width(measure, fonts.shape("-0.00"), 10.0, false) / 10.0;  // per px of size
  fig.valueFont = std::min({11.0, 0.5 * cellH, (cellW - 4) / std::max(sampleW, 1e-6)});
  L.showValues = options.showValues.value_or(cellW >= 34 && cellH >= 16) && fig.valueFont >= 6;
  return fig;
}

// =============================================================================================
// [SECTION] drawing
// =============================================================================================

void setColor(cairo_t* cr, Rgb c) { cairo_set_source_rgb(cr, c.r, c.g, c.b); }
void setColor(cairo_t* cr, RGBA8 c) { cairo_set_source_rgb(cr, c.r / 255.0, c.g / 255.0, c.b / 255.0); }

// Cells grouped by colour — one fill per table entry, with horizontal runs of equal colour
// merged — instead of one fill per cell: a 512 x 512 map stays a few hundred fill operations.
// Antialiasing is off so PNG cells are solid blocks of the exact table colour.
// The blocked cell's cross, inset a quarter of the cell (same shape as the window draws).
void crossPath(cairo_t* cr, double x, double y, double w, double h) {
  const double d = 0.22 * std::min(w, h);
  const double mx = x + w / 2, my = y + h / 2;
  cairo_move_to(cr, mx - d, my - d);
  cairo_line_to(cr, mx + d, my + d);
  cairo_move_to(cr, mx - d, my + d);
  cairo_line_to(cr, mx + d, my - d);
}

void drawCells(cairo_t* cr, const Slice2D& s, const HeatmapLayout& p, ColormapId map, ColorRange range) {
  constexpr int kNanSlot = kColormapEntries, kBlockedSlot = kColormapEntries + 1;
  struct Span {
    int row, c0, c1;  // columns [c0, c1)
  };
  std::vector<std::vector<Span>> bySlot(kColormapEntries + 2);
  auto slotOf = [&](int r, int c) {
    if (s.isBlockedCell(r, c)) return kBlockedSlot;
    const float v = s.at(r, c);
    if (std::isnan(v)) return kNanSlot;
    const int idx = tableIndex(range, v);
    return idx < 0 ? kBlockedSlot : idx;
  };
  for (int r = 0; r < s.rows; ++r) {
    int c = 0;
    while (c < s.cols) {
      const int slot = slotOf(r, c);
      int end = c + 1;
      while (end < s.cols && slotOf(r, end) == slot) ++end;
      bySlot[static_cast<std::size_t>(slot)].push_back({r, c, end});
      c = end;
    }
  }
  cairo_save(cr);
  cairo_set_antialias(cr, CAIRO_ANTIALIAS_NONE);
  for (int slot = 0; slot < kColormapEntries + 2; ++slot) {
    const auto& spans = bySlot[static_cast<std::size_t>(slot)];
    if (spans.empty()) continue;
    setColor(cr, slot == kNanSlot ? nanColor() : slot == kBlockedSlot ? blockedColor(map) : tableColor(map, slot));
    for (const Span& sp : spans) {
      cairo_rectangle(cr, p.x0 + sp.c0 * p.cellW, p.y0 + sp.row * p.cellH, (sp.c1 - sp.c0) * p.cellW, p.cellH);
    }
    cairo_fill(cr);
  }
  // Blocked cells: the cross every view draws, when the cell can show one.
  if (p.cellW >= kMinCrossCell && p.cellH >= kMinCrossCell) {
    setColor(cr, blockedMarkColor());
    cairo_set_line_width(cr, 1.5);
    for (int r = 0; r < s.rows; ++r) {
      for (int c = 0; c < s.cols; ++c) {
        if (!s.isBlockedCell(r, c) && s.at(r, c) != -std::numeric_limits<float>::infinity()) continue;
        crossPath(cr, p.x0 + c * p.cellW, p.y0 + r * p.cellH, p.cellW, p.cellH);
      }
    }
    cairo_stroke(cr);
  }
  // A hairline frame just outside the cells, so pale cells at the edge keep their shape.
  setColor(cr, Rgb{0.55, 0.55, 0.55});
  cairo_set_line_width(cr, 1);
  cairo_rectangle(cr, p.x0 - 0.5, p.y0 - 0.5, s.cols * p.cellW + 1, s.rows * p.cellH + 1);
  cairo_stroke(cr);
  cairo_restore(cr);
}

void drawValues(cairo_t* cr, Fonts& fonts, const Figure& fig, const Slice2D& s, const HeatmapLayout& p) {
  const double size = fig.valueFont;
  for (int r = 0; r < s.rows; ++r) {
    for (int c = 0; c < s.cols; ++c) {
      if (s.isBlockedCell(r, c)) continue;  // the cross says it
      const float v = s.at(r, c);
      const std::string text = formatCell(v);
      if (text.empty()) continue;
      const RGBA8 bg = mapValue(fig.layout.colormap, fig.layout.range, v);
      // Dark text on light cells, light text on dark ones (Rec. 709 luma).
      const double luma = (0.2126 * bg.r + 0.7152 * bg.g + 0.0722 * bg.b) / 255.0;
      setColor(cr, luma > 0.5 ? Rgb{0.05, 0.05, 0.05} : Rgb{0.97, 0.97, 0.97});
      const Runs runs = fonts.shape(text);
      const double w = fonts.width(cr, runs, size, false);
      cairo_move_to(cr, p.x0 + (c + 0.5) * p.cellW - w / 2, p.y0 + (r + 0.5) * p.cellH + 0.36 * size);
      fonts.draw(cr, runs, size, false);
    }
  }
}

void drawLabels(cairo_t* cr, const Fonts& fonts, const Figure& fig, const PanelText& t, const HeatmapLayout& p) {
  const double size = fig.labelFont;
  const double capH = 0.73 * size;
  const double gridW = p.cols * p.cellW, gridH = p.rows * p.cellH;
  setColor(cr, kInk);
  // Fully masked query rows: a red bar in the gap between labels and grid (outside the cells,
  // so every cell keeps its exact colour) and the row label in red.
  for (std::size_t r = 0; r < t.flagged.size(); ++r) {
    if (!t.flagged[r]) continue;
    setColor(cr, kFlag);
    cairo_rectangle(cr, p.x0 - kPad + 1, p.y0 + static_cast<double>(r) * p.cellH, std::max(2.0, kPad / 2 - 1), p.cellH);
    cairo_fill(cr);
  }
  // Row labels: right-aligned against the grid, centred on their row.
  for (int r = 0; r < p.rows; r += fig.layout.rowLabelStride) {
    const Runs& runs = t.rows[static_cast<std::size_t>(r)];
    const double w = fonts.width(cr, runs, size, false);
    const bool flagged = static_cast<std::size_t>(r) < t.flagged.size() && t.flagged[static_cast<std::size_t>(r)];
    setColor(cr, flagged ? kFlag : kInk);
    cairo_move_to(cr, p.x0 - kPad - w, p.y0 + (r + 0.5) * p.cellH + capH / 2);
    fonts.draw(cr, runs, size, false);
  }
  setColor(cr, kInk);
  // Column labels: rotated so they read upwards, ending just below their column.
  for (int c = 0; c < p.cols; c += fig.layout.colLabelStride) {
    const Runs& runs = t.cols[static_cast<std::size_t>(c)];
    const double w = fonts.width(cr, runs, size, false);
    cairo_save(cr);
    cairo_translate(cr, p.x0 + (c + 0.5) * p.cellW, p.y0 + gridH + kPad);
    cairo_rotate(cr, -fig.colAngle);
    cairo_move_to(cr, -w, capH / 2);
    fonts.draw(cr, runs, size, false);
    cairo_restore(cr);
  }
  // Axis names (T_q, T_k, d_k …): the row axis rotated along the left edge, the column axis
  // centred under the column labels.
  const double colLabelBottom = [&] {
    double extent = 0;
    for (int c = 0; c < p.cols; c += fig.layout.colLabelStride) {
      const double w = fonts.width(cr, t.cols[static_cast<std::size_t>(c)], size, false);
      extent = std::max(extent, w * std::sin(fig.colAngle) + capH * std::cos(fig.colAngle));
    }
    return p.y0 + gridH + kPad + extent;
  }();
  setColor(cr, kSoftInk);
  const double colAxisW = fonts.width(cr, t.colAxis, kAxisFont, true);
  cairo_move_to(cr, p.x0 + gridW / 2 - colAxisW / 2, colLabelBottom + kPad + kAxisFont);
  fonts.draw(cr, t.colAxis, kAxisFont, true);
  const double rowAxisW = fonts.width(cr, t.rowAxis, kAxisFont, true);
  const double rowLabelLeft = p.x0 - kPad - fig.rowLabelW;
  cairo_save(cr);
  // Rotated, the title's descenders (the 'q' of T_q) point at the row labels: keep them clear.
  cairo_translate(cr, rowLabelLeft - 6 - 0.25 * kAxisFont, p.y0 + gridH / 2);
  cairo_rotate(cr, -kPi / 2);
  cairo_move_to(cr, -rowAxisW / 2, 0);
  fonts.draw(cr, t.rowAxis, kAxisFont, true);
  cairo_restore(cr);
  if (!t.heading.empty()) {
    setColor(cr, kInk);
    cairo_move_to(cr, p.x0, p.y0 - 8);
    fonts.draw(cr, t.heading, kAxisFont, true);
  }
}

// The colour bar is one 1 x 256 image scaled up with nearest-neighbour sampling: every table
// entry is one crisp band in PNG, SVG and PDF alike, with no seams between bands.
Status drawColorBar(cairo_t* cr, Fonts& fonts, const Figure& fig) {
  SurfacePtr strip(cairo_image_surface_create(CAIRO_FORMAT_RGB24, 1, kColormapEntries));
  if (auto st = cairoOk(cairo_surface_status(strip.get()), "colour bar"); !st) return st;
  cairo_surface_flush(strip.get());
  unsigned char* px = cairo_image_surface_get_data(strip.get());
  const int stride = cairo_image_surface_get_stride(strip.get());
  for (int i = 0; i < kColormapEntries; ++i) {
    const RGBA8 c = tableColor(fig.layout.colormap, kColormapEntries - 1 - i);  // top row = high end
    auto* p = reinterpret_cast<std::uint32_t*>(px + i * stride);
    *p = (std::uint32_t{c.r} << 16) | (std::uint32_t{c.g} << 8) | std::uint32_t{c.b};
  }
  cairo_surface_mark_dirty(strip.get());

  const double x = fig.barX, y = fig.barY, h = fig.barH;
  cairo_save(cr);
  cairo_rectangle(cr, x, y, kBarWidth, h);
  cairo_clip(cr);
  cairo_translate(cr, x, y);
  cairo_scale(cr, kBarWidth, h / kColormapEntries);
  cairo_set_source_surface(cr, strip.get(), 0, 0);
  cairo_pattern_set_filter(cairo_get_source(cr), CAIRO_FILTER_NEAREST);
  cairo_paint(cr);
  cairo_restore(cr);

  cairo_save(cr);
  cairo_set_antialias(cr, CAIRO_ANTIALIAS_NONE);
  setColor(cr, Rgb{0.45, 0.45, 0.45});
  cairo_set_line_width(cr, 1);
  cairo_rectangle(cr, x - 0.5, y - 0.5, kBarWidth + 1, h + 1);
  cairo_stroke(cr);
  cairo_restore(cr);

  // Ticks at max, mid and min, labels to the right with a clear gap, so a tick never reads as
  // a minus sign in front of its label ("0.5" seen as "-0.5").
  setColor(cr, kInk);
  cairo_set_line_width(cr, 1);
  const std::array<double, 3> ys = {y, y + h / 2, y + h};
  for (std::size_t k = 0; k < 3; ++k) {
    const double ty = std::round(ys[k]) + 0.5;
    cairo_move_to(cr, x + kBarWidth, ty);
    cairo_line_to(cr, x + kBarWidth + kTickLength, ty);
    cairo_stroke(cr);
    cairo_move_to(cr, x + kBarWidth + kTickLength + kTickGap, ys[k] + 0.36 * kTickFont);
    fonts.draw(cr, fonts.shape(fig.ticks[k]), kTickFont, false);
  }

  // Legend for the colours that are not values.
  double ly = fig.legendY;
  auto legendEntry = [&](RGBA8 swatch, const Runs& text, bool cross) {
    cairo_save(cr);
    cairo_set_antialias(cr, CAIRO_ANTIALIAS_NONE);
    setColor(cr, swatch);
    cairo_rectangle(cr, x, ly, 14, 14);
    cairo_fill(cr);
    cairo_restore(cr);
    if (cross) {  // the swatch looks like the cells it names
      setColor(cr, blockedMarkColor());
      cairo_set_line_width(cr, 1.5);
      crossPath(cr, x, ly, 14, 14);
      cairo_stroke(cr);
    }
    setColor(cr, kInk);
    cairo_move_to(cr, x + 20, ly + 7 + 0.36 * kTickFont);
    fonts.draw(cr, text, kTickFont, false);
    ly += 20;
  };
  if (fig.hasBlocked) legendEntry(blockedColor(fig.layout.colormap), fig.blockedLegend, true);
  if (fig.hasNan) legendEntry(nanColor(), fig.nanLegend, false);
  if (fig.hasFlagged) legendEntry(RGBA8{static_cast<std::uint8_t>(kFlag.r * 255), static_cast<std::uint8_t>(kFlag.g * 255),
                                        static_cast<std::uint8_t>(kFlag.b * 255), 255},
                                  fig.flaggedLegend, false);
  return Ok{};
}

Status drawFigure(cairo_t* cr, Fonts& fonts, const Figure& fig) {
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);

  for (std::size_t i = 0; i < fig.caption.size(); ++i) {
    const CaptionLine& line = fig.caption[i];
    setColor(cr, line.color);
    cairo_move_to(cr, kMargin, fig.captionBaselines[i]);
    fonts.draw(cr, line.runs, line.size, line.bold);
  }
  for (std::size_t i = 0; i < fig.slices.size(); ++i) {
    const HeatmapLayout& p = fig.layout.panels[i];
    drawCells(cr, *fig.slices[i], p, fig.layout.colormap, fig.layout.range);
    if (fig.layout.showValues) drawValues(cr, fonts, fig, *fig.slices[i], p);
    drawLabels(cr, fonts, fig, fig.text[i], p);
  }
  if (auto st = drawColorBar(cr, fonts, fig); !st) return st;
  return cairoOk(cairo_status(cr), "drawing failed");
}

std::string xmlEscape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

Result<std::string> renderFigure(const std::vector<const Slice2D*>& slices, bool grid, ImageFormat format,
                                 const ExportOptions& options, FigureLayout* layoutOut) {
  try {
    Fonts fonts;
    SurfacePtr scratch(cairo_image_surface_create(CAIRO_FORMAT_RGB24, 1, 1));
    ContextPtr measure(cairo_create(scratch.get()));
    if (auto st = cairoOk(cairo_status(measure.get()), "cannot set up text measurement"); !st) return st.error();
    auto fig = buildFigure(slices, grid, options, fonts, measure.get());
    if (!fig) return fig.error();
    const double w = fig->layout.width, h = fig->layout.height;

    Sink sink;
    SurfacePtr surface;
    switch (format) {
      case ImageFormat::Png:
        surface.reset(cairo_image_surface_create(CAIRO_FORMAT_RGB24, fig->layout.width, fig->layout.height));
        break;
      case ImageFormat::Svg:
        surface.reset(cairo_svg_surface_create_for_stream(writeToSink, &sink, w, h));
        cairo_svg_surface_set_document_unit(surface.get(), CAIRO_SVG_UNIT_PX);
        break;
      case ImageFormat::Pdf:
        surface.reset(cairo_pdf_surface_create_for_stream(writeToSink, &sink, w, h));
        cairo_pdf_surface_set_metadata(surface.get(), CAIRO_PDF_METADATA_TITLE, fig->documentTitle.c_str());
        cairo_pdf_surface_set_metadata(surface.get(), CAIRO_PDF_METADATA_CREATOR, "mhascope");
        break;
    }
    const std::string size = std::to_string(fig->layout.width) + " x " + std::to_string(fig->layout.height);
    if (auto st = cairoOk(cairo_surface_status(surface.get()), ("cannot create a " + size + " picture").c_str()); !st) {
      return st.error();
    }
    {
      ContextPtr cr(cairo_create(surface.get()));
      if (auto st = drawFigure(cr.get(), fonts, *fig); !st) return st.error();
    }
    if (format == ImageFormat::Png) {
      cairo_surface_flush(surface.get());
      if (auto st = cairoOk(cairo_surface_write_to_png_stream(surface.get(), writeToSink, &sink), "PNG encoding failed"); !st) {
        return st.error();
      }
    } else {
      cairo_surface_finish(surface.get());  // flushes the document into the sink
      if (auto st = cairoOk(cairo_surface_status(surface.get()), "writing the picture failed"); !st) return st.error();
    }
    if (format == ImageFormat::Svg) {
      // An SVG <title> names the picture for screen readers and file browsers (cairo writes
      // all text as glyph outlines, so the title would otherwise appear nowhere as text).
      const auto svg = sink.bytes.find("<svg");
      const auto close = svg == std::string::npos ? svg : sink.bytes.find('>', svg);
      if (close != std::string::npos) {
        sink.bytes.insert(close + 1, "\n<title>" + xmlEscape(fig->documentTitle) + "</title>");
      }
    }
    if (layoutOut) *layoutOut = fig->layout;
    return std::move(sink.bytes);
  } catch (const std::bad_alloc&) {
    return makeError("out of memory while rendering the picture");
  }
}

}  // namespace

// =============================================================================================
// [SECTION] public API
// =============================================================================================

Result<FigureLayout> layoutHeatmap(const Slice2D& slice, const ExportOptions& options) {
  Fonts fonts;
  SurfacePtr scratch(cairo_image_surface_create(CAIRO_FORMAT_RGB24, 1, 1));
  ContextPtr measure(cairo_create(scratch.get()));
  auto fig = buildFigure({&slice}, false, options, fonts, measure.get());
  if (!fig) return fig.error();
  return fig->layout;
}

Result<FigureLayout> layoutHeadGrid(const std::vector<Slice2D>& heads, const ExportOptions& options) {
  std::vector<const Slice2D*> ptrs;
  for (const Slice2D& s : heads) ptrs.push_back(&s);
  Fonts fonts;
  SurfacePtr scratch(cairo_image_surface_create(CAIRO_FORMAT_RGB24, 1, 1));
  ContextPtr measure(cairo_create(scratch.get()));
  auto fig = buildFigure(ptrs, true, options, fonts, measure.get());
  if (!fig) return fig.error();
  return fig->layout;
}

Result<std::string> renderHeatmap(const Slice2D& slice, ImageFormat format, const ExportOptions& options,
                                  FigureLayout* layoutOut) {
  return renderFigure({&slice}, false, format, options, layoutOut);
}

Result<std::string> renderHeadGrid(const std::vector<Slice2D>& heads, ImageFormat format, const ExportOptions& options,
                                   FigureLayout* layoutOut) {
  std::vector<const Slice2D*> ptrs;
  for (const Slice2D& s : heads) ptrs.push_back(&s);
  return renderFigure(ptrs, true, format, options, layoutOut);
}

namespace {

template <class Render>
Status renderAndWrite(const std::string& path, Render render) {
  auto format = formatFromPath(path);
  if (!format) return format.error();
  auto bytes = render(*format);
  if (!bytes) return makeError("cannot export '" + sanitizeUtf8(path) + "': " + bytes.error().message);
  return writeFileAtomic(path, *bytes);
}

}  // namespace

Status exportHeatmap(const std::string& path, const Slice2D& slice, const ExportOptions& options) {
  return renderAndWrite(path, [&](ImageFormat f) { return renderHeatmap(slice, f, options); });
}

Status exportHeadGrid(const std::string& path, const std::vector<Slice2D>& heads, const ExportOptions& options) {
  return renderAndWrite(path, [&](ImageFormat f) { return renderHeadGrid(heads, f, options); });
}

}  // namespace mhascope
