// One picture surface for every exporter: PNG / SVG / PDF streamed into a string, then written
// atomically. export_heatmap.cpp (heatmaps, head grids) and training_figures.cpp (contact
// sheets, curves) both render through these, so the three formats behave the same everywhere.
#pragma once

#include <string>

#include "export/cairo_handles.hpp"
#include "export/export.hpp"  // ImageFormat, formatFromPath
#include "export/ink.hpp"     // the picture's "see as" preview rides on its surface
#include "io/file_io.hpp"     // writeFileAtomic

namespace mhascope::export_detail {

// A surface of `format` and this size that streams into `sink` (PNG: an image surface, encoded
// by closeSurface). PDFs carry `docTitle` as their title. Every colour drawn on it is seen as
// `seeAs` (ink.hpp). The error names the size.
Result<SurfacePtr> openSurface(ImageFormat format, int width, int height, Sink& sink, const std::string& docTitle,
                               SeeAs seeAs);

// Flushes the picture into sink.bytes (the PNG encoding, or the end of the SVG/PDF document);
// an SVG gets a <title> with `docTitle` (cairo writes all text as outlines).
Status closeSurface(cairo_surface_t* surface, ImageFormat format, Sink& sink, const std::string& docTitle);

// Render (the format from the path's extension), then writeFileAtomic: on any error nothing is
// written and an existing file stays byte-identical; the message names the path.
std::string sanitizedPath(const std::string& path);
template <class Render>
Status renderAndWrite(const std::string& path, Render render) {
  auto format = formatFromPath(path);
  if (!format) return format.error();
  auto bytes = render(*format);
  if (!bytes) return makeError("cannot export '" + sanitizedPath(path) + "': " + bytes.error().message);
  return writeFileAtomic(path, *bytes);
}

}  // namespace mhascope::export_detail
