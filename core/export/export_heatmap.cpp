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

#include "attention/tokenizer.hpp"  // sanitizeUtf8
#include "export/figure.hpp"
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
  const std::string shown = hasExt ? "'." + sanitizeUtf8(path.substr(dot + 1)) + "'" : std::string("(none)");
  return makeError("cannot export '" + sanitizeUtf8(path) + "': unknown picture extension " + shown +
                   " (use .png, .svg or .pdf)");
}

namespace {

// =============================================================================================
// [SECTION] rendering
// =============================================================================================

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
