// A move-only OpenGL texture (RAII): created once, re-filled with glTexSubImage2D when the size
// is unchanged, deleted in the destructor. Nearest filtering, because one texel is one matrix
// cell and blurring two cells together would show values that were never computed.
#pragma once

#include <cstdint>
#include <utility>

namespace mhascope::app {

class Texture {
 public:
  Texture() = default;
  ~Texture() { release(); }
  Texture(Texture&& other) noexcept
      : id_(std::exchange(other.id_, 0u)), width_(std::exchange(other.width_, 0)), height_(std::exchange(other.height_, 0)) {}
  Texture& operator=(Texture&& other) noexcept {
    if (this != &other) {
      release();
      id_ = std::exchange(other.id_, 0u);
      width_ = std::exchange(other.width_, 0);
      height_ = std::exchange(other.height_, 0);
    }
    return *this;
  }
  Texture(const Texture&) = delete;
  Texture& operator=(const Texture&) = delete;

  // Uploads width*height RGBA8 pixels, row 0 at the top. Reuses the GL object when the size
  // matches (no new allocation on the GPU).
  void upload(const std::uint8_t* rgba, int width, int height);
  // Storage of width x height texels without pixels (the texture's size becomes that), to be
  // filled later by uploadRegion: with the software renderer, allocating a 840 x 840 texture cost
  // ~25 ms and filling an allocated one 0.2 ms, so heatmap textures are allocated once and reused.
  void allocate(int width, int height);
  // Fills texels [0, width) x [0, height) (at most the texture's size); the rest keeps what it had.
  void uploadRegion(const std::uint8_t* rgba, int width, int height);
  bool valid() const { return id_ != 0; }
  unsigned id() const { return id_; }
  int width() const { return width_; }
  int height() const { return height_; }
  // For ImGui::Image / ImDrawList::AddImage.
  void* imguiId() const { return reinterpret_cast<void*>(static_cast<std::uintptr_t>(id_)); }

  // Textures alive right now, for the "no growth over 1000 config changes" test.
  static int liveCount();
  // GL_MAX_TEXTURE_SIZE of the current context (queried once per call; cheap).
  static int maxSize();

 private:
  void release();
  void storage(const std::uint8_t* rgba, int width, int height);  // glTexImage2D (rgba may be null)
  unsigned id_ = 0;
  int width_ = 0, height_ = 0;
};

}  // namespace mhascope::app
