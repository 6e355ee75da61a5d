// Surfaces for the three formats (see surface.hpp).
#include "export/surface.hpp"

#include <cairo-pdf.h>
#include <cairo-svg.h>

#include <string_view>

#include "util/format.hpp"  // escapeMarkup
#include "util/utf8.hpp"    // replaceInvalidUtf8

namespace mhascope::export_detail {

Result<SurfacePtr> openSurface(ImageFormat format, int width, int height, Sink& sink, const std::string& docTitle,
                               SeeAs seeAs) {
  SurfacePtr surface;
  const double w = width, h = height;
  switch (format) {
    case ImageFormat::Png: surface.reset(cairo_image_surface_create(CAIRO_FORMAT_RGB24, width, height)); break;
    case ImageFormat::Svg:
      surface.reset(cairo_svg_surface_create_for_stream(writeToSink, &sink, w, h));
      cairo_svg_surface_set_document_unit(surface.get(), CAIRO_SVG_UNIT_PX);
      break;
    case ImageFormat::Pdf:
      surface.reset(cairo_pdf_surface_create_for_stream(writeToSink, &sink, w, h));
      cairo_pdf_surface_set_metadata(surface.get(), CAIRO_PDF_METADATA_TITLE, docTitle.c_str());
      cairo_pdf_surface_set_metadata(surface.get(), CAIRO_PDF_METADATA_CREATOR, "mhascope");
      break;
  }
  const std::string size = std::to_string(width) + " x " + std::to_string(height);
  if (auto st = cairoOk(cairo_surface_status(surface.get()), ("cannot create a " + size + " picture").c_str()); !st) {
    return st.error();
  }
  attachSeeAs(surface.get(), seeAs);
  return surface;
}

Status closeSurface(cairo_surface_t* surface, ImageFormat format, Sink& sink, const std::string& docTitle) {
  if (format == ImageFormat::Png) {
    cairo_surface_flush(surface);
    if (auto st = cairoOk(cairo_surface_write_to_png_stream(surface, writeToSink, &sink), "PNG encoding failed"); !st) {
      return st;
    }
  } else {
    cairo_surface_finish(surface);  // flushes the document into the sink
    if (auto st = cairoOk(cairo_surface_status(surface), "writing the picture failed"); !st) return st;
  }
  if (format == ImageFormat::Svg) {
    const auto svg = sink.bytes.find("<svg");
    const auto close = svg == std::string::npos ? svg : sink.bytes.find('>', svg);
    if (close != std::string::npos) sink.bytes.insert(close + 1, "\n<title>" + escapeMarkup(docTitle) + "</title>");
  }
  return Ok{};
}

std::string sanitizedPath(const std::string& path) { return replaceInvalidUtf8(path); }

}  // namespace mhascope::export_detail
