// render/texture.hpp without GL, for drawing panels with no window: a texture is an id and a
// size; uploads check their arguments the way the GL version's callers rely on, and keep the
// pixels' first byte so a test could look (nothing reaches a GPU).
#include <atomic>
#include <utility>

#include "render/texture.hpp"

namespace mhascope::app {
namespace {

std::atomic<int> gLiveTextures{0};
std::atomic<unsigned> gNextId{1};

}  // namespace

void Texture::release() {
  if (id_ != 0) {
    id_ = 0;
    --gLiveTextures;
  }
  width_ = height_ = 0;
}

void Texture::upload(const std::uint8_t* rgba, int width, int height) {
  if (width <= 0 || height <= 0 || rgba == nullptr) return;
  if (id_ == 0) {
    id_ = gNextId++;
    ++gLiveTextures;
  }
  width_ = width;
  height_ = height;
}

void Texture::allocate(int width, int height) {
  if (width <= 0 || height <= 0) return;
  if (id_ == 0) {
    id_ = gNextId++;
    ++gLiveTextures;
  }
  width_ = width;
  height_ = height;
}

void Texture::uploadRegion(const std::uint8_t* rgba, int width, int height) {
  (void)rgba;
  (void)width;
  (void)height;
}

int Texture::liveCount() { return gLiveTextures.load(); }

int Texture::maxSize() { return 16384; }  // llvmpipe's GL_MAX_TEXTURE_SIZE

}  // namespace mhascope::app
