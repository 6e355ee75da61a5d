#include "render/texture_cache.hpp"

#include <algorithm>

namespace mhascope::app {

HeatmapTexture TextureCache::get(const TextureKey& key, const float* values, int rows, int cols,
                                 const std::uint8_t* blocked) {
  for (Entry& e : entries_) {
    if (e.key == key) {
      e.usedThisFrame = true;
      return {e.texture.imguiId(), e.rowStep, e.colStep, e.width, e.height, e.key.row, e.key.col};
    }
  }
  if (maxSize_ <= 0) maxSize_ = Texture::maxSize();
  const HeatmapLook look{key.colormap, ColorRange{key.lo, key.hi}, key.scale, key.rule};
  buildHeatmapImage(values, rows, cols, look, key.stepY, key.stepX, maxSize_, scratch_, blocks_, blocked,
                    CellWindow{key.row, key.col, key.rows, key.cols});
  Entry& e = entries_.emplace_back();
  e.key = key;
  e.rowStep = scratch_.rowStep;
  e.colStep = scratch_.colStep;
  e.width = scratch_.width;
  e.height = scratch_.height;
  e.texture.upload(scratch_.rgba.data(), scratch_.width, scratch_.height);
  ++uploads_;
  return {e.texture.imguiId(), e.rowStep, e.colStep, e.width, e.height, e.key.row, e.key.col};
}

const Texture& TextureCache::colorbar(ColormapId colormap) {
  Texture& t = colorbars_[static_cast<std::size_t>(colormap)];
  if (!t.valid()) {
    buildColorbarImage(colormap, scratch_);
    t.upload(scratch_.rgba.data(), scratch_.width, scratch_.height);
  }
  return t;
}

void TextureCache::endFrame() {
  std::erase_if(entries_, [](const Entry& e) { return !e.usedThisFrame; });
  for (Entry& e : entries_) e.usedThisFrame = false;
}

}  // namespace mhascope::app
