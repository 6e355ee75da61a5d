// Heatmap pictures through cairo (PNG / SVG / PDF): layout, drawing and the atomic export.
//
// [SECTION] formats          extension → ImageFormat
// [SECTION] rendering        a built figure onto a PNG / SVG / PDF surface, into a string
// [SECTION] public API       render*, layout*, export*
// The rest of the exporter, one file each: cairo_handles.hpp (RAII, the string sink), fonts.*
// (UTF-8 labels, per-code-point font fallback, measuring, drawing text), figure.hpp (constants,
// Figure), figure_layout.cpp (cell size, label thinning, where everything goes), draw.cpp (cells,
// labels, colour bar, legend, captions). Cell numbers and ticks: util/format.hpp.
//
// Layout is computed first, with a scratch context for text measurement, and drawn second, so
// tests can ask where each cell landed (FigureLayout) and read the colours back from the PNG.
#include "export/export.hpp"

#include <cairo-pdf.h>
#include <cairo-svg.h>
#include <cairo.h>

#include <cctype>
#include <new>

#include "util/utf8.hpp"  // replaceInvalidUtf8
#include "export/figure.hpp"
#include "export/surface.hpp"
#include "io/file_io.hpp"

namespace mhascope {

using namespace export_detail;  // NOLINT(google-build-using-namespace): the exporter's own parts

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
  const std::string shown = hasExt ? "'." + replaceInvalidUtf8(path.substr(dot + 1)) + "'" : std::string("(none)");
  return makeError("cannot export '" + replaceInvalidUtf8(path) + "': unknown picture extension " + shown +
                   " (use .png, .svg or .pdf)");
}

namespace {

// =============================================================================================
// [SECTION] rendering
// =============================================================================================

Result<std::string> renderFigure(const std::vector<const Slice2D*>& slices, bool grid, ImageFormat format,
                                 const ExportOptions& options, FigureLayout* layoutOut) {
  try {
    Fonts fonts;
    SurfacePtr scratch(cairo_image_surface_create(CAIRO_FORMAT_RGB24, 1, 1));
    ContextPtr measure(cairo_create(scratch.get()));
    if (auto st = cairoOk(cairo_status(measure.get()), "cannot set up text measurement"); !st) return st.error();
    auto fig = buildFigure(slices, grid, options, fonts, measure.get());
    if (!fig) return fig.error();

    Sink sink;
    auto surface = openSurface(format, fig->layout.width, fig->layout.height, sink, fig->documentTitle, options.seeAs);
    if (!surface) return surface.error();
    {
      ContextPtr cr(cairo_create(surface->get()));
      if (auto st = drawFigure(cr.get(), fonts, *fig); !st) return st.error();
    }
    if (auto st = closeSurface(surface->get(), format, sink, fig->documentTitle); !st) return st.error();
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


Status exportHeatmap(const std::string& path, const Slice2D& slice, const ExportOptions& options) {
  return renderAndWrite(path, [&](ImageFormat f) { return renderHeatmap(slice, f, options); });
}

Status exportHeadGrid(const std::string& path, const std::vector<Slice2D>& heads, const ExportOptions& options) {
  return renderAndWrite(path, [&](ImageFormat f) { return renderHeadGrid(heads, f, options); });
}

}  // namespace mhascope
