// Heatmap textures keyed by what they show: (trace serial, stage, batch item, head, colormap,
// colour range, colour scale, cells per texel). A texture is uploaded only when its key is new; entries not drawn during a
// frame are given up at the frame's end, so the live texture count follows what is on screen and
// stays flat however many configurations go by.
// GL storage is reused: a new key fills (glTexSubImage2D) the corner of a texture given up
// earlier when one is large enough, and the frame draws that corner (u1, v1). Allocating storage
// is what cost (a new 840 x 840 texture: ~25 ms with llvmpipe, filling it 0.2 ms), so a frame
// that zooms or pans a long sequence never allocates: a few given-up textures are kept (kSpares),
// and frames that upload nothing make sure two storages (one drawn, one spare) hold twice the
// largest whole-matrix texture (a zoomed view's texture spans up to two views of cells at up to
// one texel per pixel, the whole matrix at fit about one view).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "color/color_scale.hpp"
#include "color/colormap.hpp"
#include "color/downsample.hpp"
#include "render/heatmap_image.hpp"
#include "render/texture.hpp"

namespace mhascope::app {

struct TextureKey {
  std::uint64_t traceSerial = 0;  // ShownResult::traceSerial: changes whenever a new trace is shown
  int stage = 0;
  int batch = 0;
  int head = -1;  // -1 for stages without a head axis
  ColormapId colormap = ColormapId::Viridis;
  float lo = 0.0f, hi = 1.0f;
  ColorScale scale = ColorScale::Linear;
  DownsampleRule rule = DownsampleRule::Max;
  int stepY = 1, stepX = 1;  // cells per texel asked for (the screen's resolution)
  int row = 0, col = 0, rows = -1, cols = -1;  // the window of cells textured (-1: all)
  friend bool operator==(const TextureKey&, const TextureKey&) = default;
};

// Which cells a texture holds along one axis, in whole blocks of `step` cells counted from cell 0
// (so the texels of any two textures at one step fall on the same cells). [first, last): the
// visible cells of `total`.
// textureSpan: the visible cells and a margin, on a grid of half-views, so that panning reuses the
// texture until the view has moved by half of itself (up to two views of cells).
// visibleSpan: the visible cells alone, for the first frame at rest after a zoom (about a quarter
// of the cells to read; the margin follows a frame later, see TextureCache::zoomedFrom).
std::pair<int, int> textureSpan(int first, int last, int total, int step);  // {first cell, count}
std::pair<int, int> visibleSpan(int first, int last, int total, int step);

// Returned by value (the cache's storage may move when it grows during a frame).
struct HeatmapTexture {
  void* imguiId = nullptr;       // for ImGui::Image / AddImage
  int rowStep = 1, colStep = 1;  // cells per texel: the key's steps, or more past GL_MAX_TEXTURE_SIZE
  int width = 0, height = 0;     // texels
  int row = 0, col = 0;          // the cell at texel (0, 0)
  float u1 = 1.0f, v1 = 1.0f;    // texture coordinates of the texels' far corner (the storage may be larger)
};

class TextureCache {
 public:
  static constexpr int kSpares = 4;
  // The texture for `key`; on a miss, builds the pixels from rows x cols `values` and uploads.
  // `blocked` (rows x cols, may be null): Slice2D::blockedCells, drawn in the blocked colour.
  HeatmapTexture get(const TextureKey& key, const float* values, int rows, int cols,
                     const std::uint8_t* blocked = nullptr);
  // The frame that zooms draws the picture it drew last frame, stretched to the new zoom, when that
  // holds every visible cell (`visible`: rows x cols from (row, col)); the picture at the new steps
  // is built once the zoom rests (a wheel burst or a trackpad zooms every frame). Of the same
  // picture's textures (everything in the key but its steps and window) drawn last frame, the
  // finest that holds the visible cells, kept for this frame; none: empty.
  std::optional<HeatmapTexture> covering(const TextureKey& key, CellWindow visible);
  // The same picture (everything in the key but its steps and its window) was drawn at other
  // steps last frame and not yet at these: the view's zoom changed since.
  bool zoomedFrom(const TextureKey& key) const;
  // A 256 x 1 strip of the colormap, for colour bars (built once per map).
  const Texture& colorbar(ColormapId colormap);
  // Frees the heatmap textures nobody drew since the last endFrame().
  void endFrame();

  int size() const { return static_cast<int>(entries_.size()); }
  std::uint64_t uploads() const { return uploads_; }
  // GL storage allocations for heatmaps (a zoom or a pan of a long sequence must not add any).
  std::uint64_t allocations() const { return allocations_; }
  // 0 = ask the GPU (GL_MAX_TEXTURE_SIZE). Tests lower it to exercise the downsampling path.
  void setMaxTextureSize(int texels) { maxSize_ = texels; }

 private:
  struct Entry {
    TextureKey key;
    Texture texture;
    int rowStep = 1, colStep = 1, width = 0, height = 0;
    bool usedThisFrame = true;
  };
  static HeatmapTexture drawnTexture(const Entry& e);
  Texture takeStorage(int width, int height);  // a spare that holds width x height, or a new one
  void allocateStorage(Texture& t, int width, int height);

  std::vector<Entry> entries_;  // a handful (one per visible map): a linear scan is fastest
  std::vector<Texture> spares_;  // storage given up, kept for the next keys (at most kSpares)
  int spareSide_ = 0;            // the side spares are allocated with (see above)
  bool uploadedThisFrame_ = false;
  std::uint64_t allocations_ = 0;
  std::array<Texture, kColormapCount> colorbars_;
  HeatmapImage scratch_;        // pixel buffer reused for every upload
  BlockPositions blocks_;       // downsampled colour positions, reused
  std::uint64_t uploads_ = 0;
  int maxSize_ = 0;
};

}  // namespace mhascope::app
