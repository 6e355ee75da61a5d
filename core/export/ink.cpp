// The exporter's colour path (ink.hpp).
#include "export/ink.hpp"

#include <cstdint>

namespace mhascope::export_detail {
namespace {

// cairo identifies user data by the address of a key.
const cairo_user_data_key_t kSeeAsKey{};

}  // namespace

void attachSeeAs(cairo_surface_t* surface, SeeAs kind) {
  // The kind is stored in the pointer itself: no allocation, nothing to free.
  cairo_surface_set_user_data(surface, &kSeeAsKey, reinterpret_cast<void*>(static_cast<std::uintptr_t>(kind) + 1), nullptr);
}

SeeAs seeAsOf(cairo_t* cr) {
  const auto v = reinterpret_cast<std::uintptr_t>(cairo_surface_get_user_data(cairo_get_target(cr), &kSeeAsKey));
  if (v == 0 || v > static_cast<std::uintptr_t>(kSeeAsCount)) return SeeAs::Normal;
  return static_cast<SeeAs>(v - 1);
}

void setInk(cairo_t* cr, double r, double g, double b) {
  const Rgb01 c = seeAsRgb(seeAsOf(cr), Rgb01{r, g, b});
  cairo_set_source_rgb(cr, c.r, c.g, c.b);
}

void setInk(cairo_t* cr, RGBA8 c) {
  const RGBA8 s = seeAsColor(seeAsOf(cr), c);
  cairo_set_source_rgb(cr, s.r / 255.0, s.g / 255.0, s.b / 255.0);
}

void inkImage(cairo_t* cr, cairo_surface_t* image) {
  const SeeAs kind = seeAsOf(cr);
  if (kind == SeeAs::Normal) return;
  cairo_surface_flush(image);
  unsigned char* px = cairo_image_surface_get_data(image);
  if (!px) return;
  const int w = cairo_image_surface_get_width(image), h = cairo_image_surface_get_height(image);
  const int stride = cairo_image_surface_get_stride(image);
  // RGB24 pixels are native-endian 32-bit words 0xXXRRGGBB.
  for (int y = 0; y < h; ++y) {
    auto* row = reinterpret_cast<std::uint32_t*>(px + static_cast<std::ptrdiff_t>(y) * stride);
    for (int x = 0; x < w; ++x) {
      const std::uint32_t p = row[x];
      const RGBA8 c = seeAsColor(kind, RGBA8{static_cast<std::uint8_t>(p >> 16), static_cast<std::uint8_t>(p >> 8),
                                             static_cast<std::uint8_t>(p), 255});
      row[x] = (std::uint32_t{c.r} << 16) | (std::uint32_t{c.g} << 8) | std::uint32_t{c.b};
    }
  }
  cairo_surface_mark_dirty(image);
}

}  // namespace mhascope::export_detail
