// Saving the window's picture: read the back buffer after rendering (glReadPixels), flip it
// (GL's row 0 is the bottom), encode PNG with cairo, write atomically.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "util/result.hpp"

namespace mhascope::app {

struct RgbaImage {
  int width = 0, height = 0;
  std::vector<std::uint8_t> rgba;  // row 0 at the top
};

// The current framebuffer's pixels; call after rendering, before swapping buffers.
RgbaImage readFramebuffer(int width, int height);
// PNG through cairo, then writeFileAtomic (no partial file on any error).
Status savePng(const std::string& path, const RgbaImage& image);

}  // namespace mhascope::app
