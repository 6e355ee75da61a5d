// Drawing a built Figure: cells (grouped by colour), numbers, labels, colour bar, legend, captions.
#include <algorithm>
#include <cmath>
#include <limits>

#include "export/figure.hpp"
#include "export/ink.hpp"
#include "util/format.hpp"

namespace mhascope::export_detail {
namespace {

void setColor(cairo_t* cr, Rgb c) { setInk(cr, c.r, c.g, c.b); }
void setColor(cairo_t* cr, RGBA8 c) { setInk(cr, c); }

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
    // NaN cells: the dark dot (the window's mark too), so NaN is told by a pattern, not by hue.
    setColor(cr, nanMarkColor());
    const double radius = std::max(1.5, 0.18 * std::min(p.cellW, p.cellH));
    for (int r = 0; r < s.rows; ++r) {
      for (int c = 0; c < s.cols; ++c) {
        if (s.isBlockedCell(r, c) || !std::isnan(s.at(r, c))) continue;
        cairo_new_sub_path(cr);
        cairo_arc(cr, p.x0 + (c + 0.5) * p.cellW, p.y0 + (r + 0.5) * p.cellH, radius, 0, 2 * kPi);
      }
    }
    cairo_fill(cr);
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
      const std::string text = formatCellValue(v);
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
  inkImage(cr, strip.get());

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
  auto legendEntry = [&](RGBA8 swatch, const Runs& text, bool cross, bool dot = false) {
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
    if (dot) {
      setColor(cr, nanMarkColor());
      cairo_new_sub_path(cr);
      cairo_arc(cr, x + 7, ly + 7, 0.18 * 14, 0, 2 * kPi);
      cairo_fill(cr);
    }
    setColor(cr, kInk);
    cairo_move_to(cr, x + 20, ly + 7 + 0.36 * kTickFont);
    fonts.draw(cr, text, kTickFont, false);
    ly += 20;
  };
  if (fig.hasBlocked) legendEntry(blockedColor(fig.layout.colormap), fig.blockedLegend, true);
  if (fig.hasNan) legendEntry(nanColor(), fig.nanLegend, false, true);
  if (fig.hasFlagged) legendEntry(RGBA8{static_cast<std::uint8_t>(kFlag.r * 255), static_cast<std::uint8_t>(kFlag.g * 255),
                                        static_cast<std::uint8_t>(kFlag.b * 255), 255},
                                  fig.flaggedLegend, false);
  return Ok{};
}

}  // namespace

Status drawFigure(cairo_t* cr, Fonts& fonts, const Figure& fig) {
  setInk(cr, 1, 1, 1);
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

}  // namespace mhascope::export_detail
