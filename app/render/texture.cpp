// GL 1.1 texture calls only: libGL exports them directly, so no loader is needed for our own
// GL use (ImGui's OpenGL3 backend loads what it draws with).
#include "render/texture.hpp"

#include <GL/gl.h>

#include <atomic>
#include <utility>

namespace mhascope::app {
namespace {
// Counts textures across the process; textures are only touched on the UI thread, but an
// atomic keeps the counter honest if that ever changes.
std::atomic<int> gLiveTextures{0};
}  // namespace

void Texture::release() {
  if (id_ != 0) {
    const GLuint id = id_;
    glDeleteTextures(1, &id);
    id_ = 0;
    --gLiveTextures;
  }
  width_ = height_ = 0;
}

void Texture::upload(const std::uint8_t* rgba, int width, int height) {
  if (width <= 0 || height <= 0) return;
  if (id_ != 0 && width == width_ && height == height_) {
    uploadRegion(rgba, width, height);
    return;
  }
  glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
  storage(rgba, width, height);
}

void Texture::allocate(int width, int height) {
  if (width > 0 && height > 0 && (width != width_ || height != height_ || id_ == 0)) storage(nullptr, width, height);
}

void Texture::uploadRegion(const std::uint8_t* rgba, int width, int height) {
  if (id_ == 0 || width <= 0 || height <= 0 || width > width_ || height > height_) return;
  glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
  glBindTexture(GL_TEXTURE_2D, id_);
  glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, width, height, GL_RGBA, GL_UNSIGNED_BYTE, rgba);
}

void Texture::storage(const std::uint8_t* rgba, int width, int height) {
  if (id_ == 0) {
    GLuint id = 0;
    glGenTextures(1, &id);
    id_ = id;
    ++gLiveTextures;
  }
  glBindTexture(GL_TEXTURE_2D, id_);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
  glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, width, height, 0, GL_RGBA, GL_UNSIGNED_BYTE, rgba);
  width_ = width;
  height_ = height;
}

int Texture::liveCount() { return gLiveTextures.load(); }

int Texture::maxSize() {
  GLint v = 0;
  glGetIntegerv(GL_MAX_TEXTURE_SIZE, &v);
  return v > 0 ? v : 2048;  // 2048 is the GL 3.3 minimum every driver must support
}

}  // namespace mhascope::app
