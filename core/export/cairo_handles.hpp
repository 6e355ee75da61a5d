// RAII handles for cairo objects and rendering into a std::string: the exporter's plumbing.
#pragma once

#include <cairo.h>

#include <memory>
#include <string>

#include "util/result.hpp"

namespace mhascope::export_detail {

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

inline cairo_status_t writeToSink(void* closure, const unsigned char* data, unsigned int length) {
  try {
    static_cast<Sink*>(closure)->bytes.append(reinterpret_cast<const char*>(data), length);
    return CAIRO_STATUS_SUCCESS;
  } catch (...) {
    return CAIRO_STATUS_WRITE_ERROR;
  }
}

inline Status cairoOk(cairo_status_t status, const char* what) {
  if (status == CAIRO_STATUS_SUCCESS) return Ok{};
  return makeError(std::string(what) + ": " + cairo_status_to_string(status));
}

}  // namespace mhascope::export_detail
