#include "render/screenshot.hpp"

#include <GL/gl.h>
#include <cairo.h>

#include <cstring>

#include "io/file_io.hpp"

namespace mhascope::app {

RgbaImage readFramebuffer(int width, int height) {
  RgbaImage img;
  if (width <= 0 || height <= 0) return img;
  img.width = width;
  img.height = height;
  const std::size_t stride = static_cast<std::size_t>(width) * 4;
  std::vector<std::uint8_t> raw(stride * static_cast<std::size_t>(height));
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadPixels(0, 0, width, height, GL_RGBA, GL_UNSIGNED_BYTE, raw.data());
  img.rgba.resize(raw.size());
  for (int y = 0; y < height; ++y) {  // GL's first row is the bottom of the window
    std::memcpy(&img.rgba[static_cast<std::size_t>(y) * stride], &raw[static_cast<std::size_t>(height - 1 - y) * stride],
                stride);
  }
  return img;
}

namespace {
cairo_status_t appendToString(void* closure, const unsigned char* data, unsigned int length) {
  static_cast<std::string*>(closure)->append(reinterpret_cast<const char*>(data), length);
  return CAIRO_STATUS_SUCCESS;
}
}  // namespace

Status savePng(const std::string& path, const RgbaImage& image) {
  if (image.width <= 0 || image.height <= 0) return makeError("cannot save " + path + ": the window has no pixels (0x0)");
  cairo_surface_t* surface = cairo_image_surface_create(CAIRO_FORMAT_RGB24, image.width, image.height);
  if (cairo_surface_status(surface) != CAIRO_STATUS_SUCCESS) {
    cairo_surface_destroy(surface);
    return makeError("cannot save " + path + ": out of memory for a " + std::to_string(image.width) + "x" +
                     std::to_string(image.height) + " image");
  }
  cairo_surface_flush(surface);
  unsigned char* dst = cairo_image_surface_get_data(surface);
  const int stride = cairo_image_surface_get_stride(surface);
  for (int y = 0; y < image.height; ++y) {
    auto* row = reinterpret_cast<std::uint32_t*>(dst + static_cast<std::ptrdiff_t>(y) * stride);
    const std::uint8_t* src = &image.rgba[static_cast<std::size_t>(y) * image.width * 4];
    for (int x = 0; x < image.width; ++x) {  // cairo's RGB24 is 0x00RRGGBB in native order
      row[x] = (std::uint32_t{src[4 * x]} << 16) | (std::uint32_t{src[4 * x + 1]} << 8) | src[4 * x + 2];
    }
  }
  cairo_surface_mark_dirty(surface);
  std::string bytes;
  const cairo_status_t st = cairo_surface_write_to_png_stream(surface, appendToString, &bytes);
  cairo_surface_destroy(surface);
  if (st != CAIRO_STATUS_SUCCESS) return makeError("cannot encode " + path + " as PNG: " + cairo_status_to_string(st));
  return writeFileAtomic(path, bytes);
}

}  // namespace mhascope::app
