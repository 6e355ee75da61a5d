// Contact sheets and training curves through cairo (PNG / SVG / PDF).
//
// [SECTION] plumbing       surfaces for the three formats, rendering into a string
// [SECTION] contact sheet  heads × steps of small attention maps
// [SECTION] curves         stacked line panels over one step axis
// [SECTION] public API
// [SECTION] animation      one frame per step, the two pictures side by side, as a GIF
//
// Text uses cairo's toy API with DejaVu Sans: the labels here are step numbers, head names and
// the task's token symbols (ASCII for induction / reverse / sort).
#include "export/training_figures.hpp"

#include <cairo-pdf.h>
#include <cairo-svg.h>
#include <cairo.h>

#include <algorithm>
#include <cmath>
#include <cctype>
#include <filesystem>
#include <functional>
#include <memory>

#include "util/utf8.hpp"  // replaceInvalidUtf8
#include "color/colormap.hpp"
#include "export/axis_ticks.hpp"
#include "export/ink.hpp"
#include "export/surface.hpp"
#include "io/file_io.hpp"

namespace mhascope {
using namespace export_detail;  // NOLINT(google-build-using-namespace): the exporter's own parts
namespace {

// =============================================================================================
// [SECTION] plumbing
// =============================================================================================

constexpr int kMaxSide = 16000;  // beyond this no viewer opens the PNG comfortably

// Creates the surface, runs `draw`, returns the encoded file.
Result<std::string> renderWith(int width, int height, ImageFormat format, const std::string& docTitle, SeeAs seeAs,
                               const std::function<void(cairo_t*)>& draw) {
  if (width < 1 || height < 1 || width > kMaxSide || height > kMaxSide) {
    return makeError("the picture would be " + std::to_string(width) + " x " + std::to_string(height) +
                     " pixels (at most " + std::to_string(kMaxSide) + " per side); choose fewer heads or steps");
  }
  try {
    Sink sink;
    auto surface = openSurface(format, width, height, sink, docTitle, seeAs);
    if (!surface) return surface.error();
    {
      ContextPtr cr(cairo_create(surface->get()));
      setInk(cr.get(), 1, 1, 1);
      cairo_paint(cr.get());
      cairo_select_font_face(cr.get(), "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
      draw(cr.get());
      if (auto st = cairoOk(cairo_status(cr.get()), "drawing failed"); !st) return st.error();
    }
    if (auto st = closeSurface(surface->get(), format, sink, docTitle); !st) return st.error();
    return std::move(sink.bytes);
  } catch (const std::bad_alloc&) {
    return makeError("out of memory while rendering the picture");
  }
}

double textWidth(cairo_t* cr, const std::string& s, double size) {
  cairo_set_font_size(cr, size);
  cairo_text_extents_t ext;
  cairo_text_extents(cr, s.c_str(), &ext);
  return ext.x_advance;
}

// Draws s with its left end at x (align 0), centre (0.5) or right end (1), baseline at y.
void text(cairo_t* cr, const std::string& s, double x, double y, double size, double align = 0, bool bold = false) {
  cairo_select_font_face(cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL, bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
  const double w = textWidth(cr, s, size);
  cairo_move_to(cr, x - align * w, y);
  cairo_show_text(cr, s.c_str());
}

void setRgb(cairo_t* cr, std::uint32_t rgb) {
  setInk(cr, ((rgb >> 16) & 0xff) / 255.0, ((rgb >> 8) & 0xff) / 255.0, (rgb & 0xff) / 255.0);
}

double measureMax(const std::vector<std::string>& labels, double size, bool bold = false) {
  std::unique_ptr<cairo_surface_t, decltype(&cairo_surface_destroy)> s(cairo_image_surface_create(CAIRO_FORMAT_RGB24, 1, 1),
                                                                       cairo_surface_destroy);
  std::unique_ptr<cairo_t, decltype(&cairo_destroy)> cr(cairo_create(s.get()), cairo_destroy);
  cairo_select_font_face(cr.get(), "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL, bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
  double w = 0;
  for (const auto& l : labels) w = std::max(w, textWidth(cr.get(), l, size));
  return w;
}

// =============================================================================================
// [SECTION] contact sheet
// =============================================================================================

Status checkSheet(const ContactSheet& s) {
  if (s.rowTitles.empty()) return makeError("a contact sheet needs at least one head");
  if (s.steps.empty()) return makeError("a contact sheet needs at least one step");
  if (s.seq < 1) return makeError("a contact sheet needs T >= 1");
  const std::size_t want = s.rowTitles.size() * s.steps.size();
  if (s.maps.size() != want) {
    return makeError("a contact sheet of " + std::to_string(s.rowTitles.size()) + " heads x " +
                     std::to_string(s.steps.size()) + " steps needs " + std::to_string(want) + " maps, got " +
                     std::to_string(s.maps.size()));
  }
  for (const auto& m : s.maps) {
    if (m.size() != static_cast<std::size_t>(s.seq) * static_cast<std::size_t>(s.seq)) {
      return makeError("every map must hold T x T = " + std::to_string(s.seq * s.seq) + " weights, one holds " +
                       std::to_string(m.size()));
    }
  }
  if (!s.tokens.empty() && s.tokens.size() != static_cast<std::size_t>(s.seq)) {
    return makeError("the contact sheet has " + std::to_string(s.tokens.size()) + " token labels for T = " +
                     std::to_string(s.seq));
  }
  return Ok{};
}

struct SheetGeometry {
  double cell = 6, map = 0, gap = 14, left = 0, top = 0, labelFont = 0;
  int width = 0, height = 0;
};

SheetGeometry sheetGeometry(const ContactSheet& s) {
  SheetGeometry g;
  g.cell = std::clamp(std::floor(220.0 / s.seq), 2.0, 14.0);
  g.map = g.cell * s.seq;
  g.labelFont = g.cell >= 9 ? std::min(g.cell - 1, 10.0) : 0;  // token labels only when they are readable
  const double tokenW = g.labelFont > 0 ? measureMax(s.tokens, g.labelFont) + 4 : 0;
  g.left = 16 + measureMax(s.rowTitles, 12) + 10 + tokenW;
  g.top = 16 + 22 + 18 + 20 + 16;  // title, probe line, step headers
  const double cols = static_cast<double>(s.steps.size()), rows = static_cast<double>(s.rowTitles.size());
  g.width = static_cast<int>(std::ceil(g.left + cols * g.map + (cols - 1) * g.gap + 24 + 14 + 44));
  // Wide enough for its title (a sheet of one step, an animation's frame, is narrower than it).
  g.width = std::max(g.width, static_cast<int>(std::ceil(16 + measureMax({replaceInvalidUtf8(s.title)}, 16, true) + 16)));
  g.height = static_cast<int>(std::ceil(g.top + rows * g.map + (rows - 1) * g.gap + tokenW + 24));
  return g;
}

void drawSheetMap(cairo_t* cr, const ContactSheet& s, const std::vector<float>& m, double x, double y, double cell) {
  const ColorRange range{0.0f, 1.0f};
  for (int r = 0; r < s.seq; ++r) {
    for (int c = 0; c < s.seq; ++c) {
      const bool blocked = s.causal && c > r;
      setInk(cr, blocked ? blockedColor(ColormapId::Viridis)
                           : mapValue(ColormapId::Viridis, range, m[static_cast<std::size_t>(r * s.seq + c)]));
      cairo_rectangle(cr, x + c * cell, y + r * cell, cell, cell);
      cairo_fill(cr);
    }
  }
  setInk(cr, 0.55, 0.55, 0.55);
  cairo_set_line_width(cr, 1);
  cairo_rectangle(cr, x - 0.5, y - 0.5, s.seq * cell + 1, s.seq * cell + 1);
  cairo_stroke(cr);
}

void drawSheet(cairo_t* cr, const ContactSheet& s, const SheetGeometry& g) {
  setInk(cr, 0.1, 0.1, 0.1);
  text(cr, replaceInvalidUtf8(s.title), 16, 16 + 16, 16, 0, true);
  std::string probe = "probe sequence (queries down, keys across):";
  for (const auto& t : s.tokens) {
    if (probe.size() > 150) {
      probe += " …";
      break;
    }
    probe += ' ';
    probe += replaceInvalidUtf8(t);
  }
  setInk(cr, 0.35, 0.35, 0.35);
  text(cr, probe, 16, 16 + 22 + 14, 11);
  const std::size_t cols = s.steps.size();
  for (std::size_t c = 0; c < cols; ++c) {
    const double x = g.left + static_cast<double>(c) * (g.map + g.gap);
    setInk(cr, 0.1, 0.1, 0.1);
    text(cr, "step " + std::to_string(s.steps[c]), x + g.map / 2, g.top - 10, 13, 0.5, true);
  }
  for (std::size_t r = 0; r < s.rowTitles.size(); ++r) {
    const double y = g.top + static_cast<double>(r) * (g.map + g.gap);
    setInk(cr, 0.1, 0.1, 0.1);
    text(cr, replaceInvalidUtf8(s.rowTitles[r]), 16, y + g.map / 2 + 4, 12);
    for (std::size_t c = 0; c < cols; ++c) {
      drawSheetMap(cr, s, s.maps[r * cols + c], g.left + static_cast<double>(c) * (g.map + g.gap), y, g.cell);
    }
    if (g.labelFont > 0) {  // query labels left of the first map
      setInk(cr, 0.3, 0.3, 0.3);
      for (int t = 0; t < s.seq; ++t) text(cr, replaceInvalidUtf8(s.tokens[static_cast<std::size_t>(t)]), g.left - 4, y + (t + 0.8) * g.cell, g.labelFont, 1);
    }
  }
  if (g.labelFont > 0) {  // key labels under the last row, rotated
    const double y = g.top + static_cast<double>(s.rowTitles.size()) * (g.map + g.gap) - g.gap + 4;
    setInk(cr, 0.3, 0.3, 0.3);
    for (std::size_t c = 0; c < cols; ++c) {
      for (int t = 0; t < s.seq; ++t) {
        cairo_save(cr);
        cairo_translate(cr, g.left + static_cast<double>(c) * (g.map + g.gap) + (t + 0.75) * g.cell, y);
        cairo_rotate(cr, M_PI / 2);
        text(cr, replaceInvalidUtf8(s.tokens[static_cast<std::size_t>(t)]), 0, 0, g.labelFont);
        cairo_restore(cr);
      }
    }
  }
  // Colour bar 0 … 1 right of the last column.
  const double bx = g.left + static_cast<double>(cols) * (g.map + g.gap) - g.gap + 24, by = g.top;
  const double bh = g.map;
  for (int i = 0; i < 64; ++i) {
    setInk(cr, mapValue(ColormapId::Viridis, {0.0f, 1.0f}, 1.0f - (static_cast<float>(i) + 0.5f) / 64.0f));
    cairo_rectangle(cr, bx, by + i * bh / 64, 14, bh / 64 + 0.5);
    cairo_fill(cr);
  }
  setInk(cr, 0.1, 0.1, 0.1);
  for (double v : {0.0, 0.5, 1.0}) text(cr, tickLabel(v), bx + 18, by + (1 - v) * bh + 4, 10);
  text(cr, "weight", bx, by - 6, 10);
}

// =============================================================================================
// [SECTION] curves
// =============================================================================================

constexpr double kPlotW = 640, kPanelH = 200, kLegendW = 200, kAxisW = 56;

void drawPanel(cairo_t* cr, const CurvesFigure& fig, const CurvePanel& p, AxisRange xr, double x0, double y0) {
  const double yTop = y0 + 22, yBot = y0 + kPanelH - 8;
  std::vector<double> all;
  for (const auto& s : p.series) all.insert(all.end(), s.ys.begin(), s.ys.end());
  for (double h : p.hLines) all.push_back(h);
  const AxisRange yr = axisRange(all, p.logY, p.fromZero);
  auto px = [&](double x) { return x0 + axisFraction(xr, false, x) * kPlotW; };
  auto py = [&](double y) { return yBot - std::clamp(axisFraction(yr, p.logY, y), -0.02, 1.02) * (yBot - yTop); };
  setInk(cr, 0.1, 0.1, 0.1);
  text(cr, replaceInvalidUtf8(p.title) + (p.logY ? " (log scale)" : ""), x0, y0 + 14, 12, 0, true);
  cairo_set_line_width(cr, 1);
  setInk(cr, 0.88, 0.88, 0.88);
  for (double t : axisTicks(yr, p.logY)) {
    cairo_move_to(cr, x0, py(t));
    cairo_line_to(cr, x0 + kPlotW, py(t));
  }
  cairo_stroke(cr);
  setInk(cr, 0.2, 0.2, 0.2);
  for (double t : axisTicks(yr, p.logY)) text(cr, tickLabel(t), x0 - 6, py(t) + 4, 10, 1);
  cairo_rectangle(cr, x0, yTop, kPlotW, yBot - yTop);
  cairo_stroke(cr);
  for (double h : p.hLines) {
    const double dash[] = {2.0, 3.0};
    cairo_set_dash(cr, dash, 2, 0);
    setInk(cr, 0.5, 0.5, 0.5);
    cairo_move_to(cr, x0, py(h));
    cairo_line_to(cr, x0 + kPlotW, py(h));
    cairo_stroke(cr);
    cairo_set_dash(cr, nullptr, 0, 0);
  }
  cairo_save(cr);
  cairo_rectangle(cr, x0, yTop - 2, kPlotW, yBot - yTop + 4);
  cairo_clip(cr);
  cairo_set_line_width(cr, 1.8);
  for (const auto& s : p.series) {
    setRgb(cr, s.rgb);
    if (s.dashed) {
      const double dash[] = {6.0, 3.0};
      cairo_set_dash(cr, dash, 2, 0);
    }
    for (std::size_t i = 0; i < std::min(s.xs.size(), s.ys.size()); ++i) {
      if (i == 0) cairo_move_to(cr, px(s.xs[i]), py(s.ys[i]));
      else cairo_line_to(cr, px(s.xs[i]), py(s.ys[i]));
    }
    cairo_stroke(cr);
    cairo_set_dash(cr, nullptr, 0, 0);
  }
  if (fig.markStep >= 0) {
    setInk(cr, 0.85, 0.2, 0.2);
    cairo_set_line_width(cr, 1.2);
    cairo_move_to(cr, px(static_cast<double>(fig.markStep)), yTop);
    cairo_line_to(cr, px(static_cast<double>(fig.markStep)), yBot);
    cairo_stroke(cr);
  }
  cairo_restore(cr);
  double ly = yTop + 10;  // legend
  for (const auto& s : p.series) {
    setRgb(cr, s.rgb);
    cairo_set_line_width(cr, 2.5);
    cairo_move_to(cr, x0 + kPlotW + 14, ly - 4);
    cairo_line_to(cr, x0 + kPlotW + 34, ly - 4);
    cairo_stroke(cr);
    setInk(cr, 0.15, 0.15, 0.15);
    text(cr, replaceInvalidUtf8(s.name), x0 + kPlotW + 40, ly, 10);
    ly += 15;
  }
}

void drawCurves(cairo_t* cr, const CurvesFigure& fig, AxisRange xr) {
  const double x0 = 16 + kAxisW;
  setInk(cr, 0.1, 0.1, 0.1);
  text(cr, replaceInvalidUtf8(fig.title), 16, 28, 16, 0, true);
  double y = 40;
  for (const auto& p : fig.panels) {
    drawPanel(cr, fig, p, xr, x0, y);
    y += kPanelH;
  }
  const double yAxis = y - 8;
  setInk(cr, 0.2, 0.2, 0.2);
  for (double t : axisTicks(xr, false, 8)) {
    const double x = x0 + axisFraction(xr, false, t) * kPlotW;
    cairo_move_to(cr, x, yAxis);
    cairo_line_to(cr, x, yAxis + 4);
    cairo_stroke(cr);
    text(cr, tickLabel(t), x, yAxis + 16, 10, 0.5);
  }
  text(cr, fig.xName, x0 + kPlotW / 2, yAxis + 32, 11, 0.5);
  if (fig.markStep >= 0) {
    setInk(cr, 0.85, 0.2, 0.2);
    text(cr, "step " + std::to_string(fig.markStep), x0 + kPlotW, yAxis + 32, 11, 1);
  }
}

// The step axis every panel shares; errors: no panels, a series whose steps and values differ
// in count, no points.
Result<AxisRange> curvesRange(const CurvesFigure& fig) {
  if (fig.panels.empty()) return makeError("no curves to draw");
  std::vector<double> xs;
  for (const auto& p : fig.panels) {
    for (const auto& s : p.series) {
      if (s.xs.size() != s.ys.size()) {
        return makeError("curve '" + s.name + "' has " + std::to_string(s.xs.size()) + " steps but " +
                         std::to_string(s.ys.size()) + " values");
      }
      xs.insert(xs.end(), s.xs.begin(), s.xs.end());
    }
  }
  if (xs.empty()) return makeError("the curves have no points yet");
  AxisRange xr{*std::min_element(xs.begin(), xs.end()), *std::max_element(xs.begin(), xs.end())};
  if (xr.hi <= xr.lo) xr.hi = xr.lo + 1;
  return xr;
}
int curvesWidth() { return static_cast<int>(16 + kAxisW + kPlotW + kLegendW); }
int curvesHeight(const CurvesFigure& fig) { return static_cast<int>(40 + kPanelH * static_cast<double>(fig.panels.size()) + 44); }

}  // namespace

// =============================================================================================
// [SECTION] public API
// =============================================================================================

Result<std::string> renderContactSheet(const ContactSheet& sheet, ImageFormat format) {
  if (auto st = checkSheet(sheet); !st) return st.error();
  const SheetGeometry g = sheetGeometry(sheet);
  return renderWith(g.width, g.height, format, sheet.title, sheet.seeAs, [&](cairo_t* cr) { drawSheet(cr, sheet, g); });
}

Result<std::string> renderCurves(const CurvesFigure& fig, ImageFormat format) {
  auto xr = curvesRange(fig);
  if (!xr) return xr.error();
  return renderWith(curvesWidth(), curvesHeight(fig), format, fig.title, fig.seeAs, [&](cairo_t* cr) { drawCurves(cr, fig, *xr); });
}


Status exportContactSheet(const std::string& path, const ContactSheet& sheet) {
  return renderAndWrite(path, [&](ImageFormat f) { return renderContactSheet(sheet, f); });
}

Status exportCurves(const std::string& path, const CurvesFigure& fig) {
  return renderAndWrite(path, [&](ImageFormat f) { return renderCurves(fig, f); });
}

// =============================================================================================
// [SECTION] animation
// =============================================================================================

namespace {

// An RGB24 image surface of this size, painted by `draw`, as RGB bytes.
Result<RgbFrame> renderPixels(int width, int height, SeeAs seeAs, const std::function<void(cairo_t*)>& draw) {
  if (width < 1 || height < 1 || width > kMaxSide || height > kMaxSide) {
    return makeError("an animation frame would be " + std::to_string(width) + " x " + std::to_string(height) +
                     " pixels (at most " + std::to_string(kMaxSide) + " per side)");
  }
  SurfacePtr surface(cairo_image_surface_create(CAIRO_FORMAT_RGB24, width, height));
  if (auto st = cairoOk(cairo_surface_status(surface.get()), "cannot create an animation frame"); !st) return st.error();
  attachSeeAs(surface.get(), seeAs);
  {
    ContextPtr cr(cairo_create(surface.get()));
    setInk(cr.get(), 1, 1, 1);
    cairo_paint(cr.get());
    cairo_select_font_face(cr.get(), "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    draw(cr.get());
    if (auto st = cairoOk(cairo_status(cr.get()), "drawing failed"); !st) return st.error();
  }
  cairo_surface_flush(surface.get());
  RgbFrame f;
  f.width = width;
  f.height = height;
  f.rgb.resize(static_cast<std::size_t>(width) * static_cast<std::size_t>(height) * 3);
  const unsigned char* data = cairo_image_surface_get_data(surface.get());
  const int stride = cairo_image_surface_get_stride(surface.get());
  for (int y = 0; y < height; ++y) {
    const auto* row = reinterpret_cast<const std::uint32_t*>(data + static_cast<std::ptrdiff_t>(y) * stride);
    std::uint8_t* out = f.rgb.data() + static_cast<std::size_t>(y) * static_cast<std::size_t>(width) * 3;
    for (int x = 0; x < width; ++x) {
      out[3 * x] = static_cast<std::uint8_t>(row[x] >> 16);
      out[3 * x + 1] = static_cast<std::uint8_t>(row[x] >> 8);
      out[3 * x + 2] = static_cast<std::uint8_t>(row[x]);
    }
  }
  return f;
}

// Column k of the sheet as a sheet of its own.
ContactSheet sheetColumn(const ContactSheet& s, std::size_t k) {
  ContactSheet one = s;
  one.steps = {s.steps[k]};
  one.maps.clear();
  const std::size_t cols = s.steps.size();
  for (std::size_t r = 0; r < s.rowTitles.size(); ++r) one.maps.push_back(s.maps[r * cols + k]);
  return one;
}

}  // namespace

std::vector<std::size_t> evenlySpaced(std::size_t available, std::size_t count) {
  std::vector<std::size_t> out;
  if (available == 0 || count == 0) return out;
  if (count >= available || available == 1) {
    for (std::size_t i = 0; i < available; ++i) out.push_back(i);
    return out;
  }
  if (count == 1) return {available - 1};
  for (std::size_t i = 0; i < count; ++i) out.push_back(i * (available - 1) / (count - 1));
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Result<RgbFrame> renderAnimationFrame(const TrainingAnimation& a, std::size_t k) {
  if (auto st = checkSheet(a.sheet); !st) return st.error();
  if (k >= a.sheet.steps.size()) {
    return makeError("frame " + std::to_string(k) + " of an animation of " + std::to_string(a.sheet.steps.size()) + " frames");
  }
  const ContactSheet one = sheetColumn(a.sheet, k);
  CurvesFigure curves = a.curves;
  curves.markStep = a.sheet.steps[k];
  auto xr = curvesRange(curves);
  if (!xr) return xr.error();
  const SheetGeometry g = sheetGeometry(one);
  const int cw = curvesWidth(), ch = curvesHeight(curves);
  // The heads on the left, the curves on their right, both from the top.
  return renderPixels(g.width + cw, std::max(g.height, ch), a.sheet.seeAs, [&](cairo_t* cr) {
    cairo_save(cr);  // the sheet inside its own picture's bounds, as its PNG has it
    cairo_rectangle(cr, 0, 0, g.width, g.height);
    cairo_clip(cr);
    drawSheet(cr, one, g);
    cairo_restore(cr);
    cairo_save(cr);
    cairo_translate(cr, g.width, 0);
    drawCurves(cr, curves, *xr);
    cairo_restore(cr);
  });
}

namespace {
// `f` scaled to `width` pixels wide (height in proportion, at least 1), each pixel the nearest one of `f`'s.
RgbFrame scaledFrame(const RgbFrame& f, int width) {
  RgbFrame out;
  out.width = width;
  out.height = std::max(1, static_cast<int>(std::lround(static_cast<double>(f.height) * width / f.width)));
  out.rgb.resize(static_cast<std::size_t>(out.width) * static_cast<std::size_t>(out.height) * 3);
  for (int y = 0; y < out.height; ++y) {
    const int sy = std::min(f.height - 1, static_cast<int>((y + 0.5) * f.height / out.height));
    for (int x = 0; x < out.width; ++x) {
      const int sx = std::min(f.width - 1, static_cast<int>((x + 0.5) * f.width / out.width));
      const std::size_t from = (static_cast<std::size_t>(sy) * static_cast<std::size_t>(f.width) + static_cast<std::size_t>(sx)) * 3;
      const std::size_t to = (static_cast<std::size_t>(y) * static_cast<std::size_t>(out.width) + static_cast<std::size_t>(x)) * 3;
      std::copy_n(f.rgb.begin() + static_cast<std::ptrdiff_t>(from), 3, out.rgb.begin() + static_cast<std::ptrdiff_t>(to));
    }
  }
  return out;
}
}  // namespace

Result<std::string> renderTrainingGif(const TrainingAnimation& a) {
  const std::size_t n = a.sheet.steps.size();
  if (n > static_cast<std::size_t>(kMaxAnimationFrames)) {
    return makeError("an animation of " + std::to_string(n) + " frames (at most " + std::to_string(kMaxAnimationFrames) +
                     "): choose fewer frames");
  }
  if (a.width != 0 && (a.width < kMinAnimationWidth || a.width > kMaxAnimationWidth)) {
    return makeError("an animation " + std::to_string(a.width) + " pixels wide (from " + std::to_string(kMinAnimationWidth) +
                     " to " + std::to_string(kMaxAnimationWidth) + ")");
  }
  // Frames are drawn one at a time as the encoder asks, so one frame is in memory; the size is
  // checked on the first, which every frame shares.
  return encodeGif(n, a.delayCentiseconds, [&](std::size_t k) -> Result<RgbFrame> {
    auto f = renderAnimationFrame(a, k);
    if (!f) return f.error();
    if (a.width > 0 && a.width != f->width) f = scaledFrame(*f, a.width);
    const std::uint64_t pixels = static_cast<std::uint64_t>(f->width) * static_cast<std::uint64_t>(f->height) * n;
    if (pixels > kMaxAnimationPixels) {
      return makeError("the animation would be " + std::to_string(n) + " frames of " + std::to_string(f->width) + " x " +
                       std::to_string(f->height) + " pixels (" + std::to_string(pixels / 1'000'000) + " M pixels, at most " +
                       std::to_string(kMaxAnimationPixels / 1'000'000) + " M): choose fewer frames or heads");
    }
    return f;
  });
}

Status exportTrainingGif(const std::string& path, const TrainingAnimation& a) {
  std::string ext = std::filesystem::path(path).extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (ext != ".gif") return makeError("cannot export '" + sanitizedPath(path) + "': an animation is a .gif file");
  auto bytes = renderTrainingGif(a);
  if (!bytes) return makeError("cannot export '" + sanitizedPath(path) + "': " + bytes.error().message);
  return writeFileAtomic(path, *bytes);
}

}  // namespace mhascope
