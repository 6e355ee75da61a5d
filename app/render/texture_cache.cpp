#include "render/texture_cache.hpp"

#include <algorithm>

namespace mhascope::app {
namespace {

constexpr int kStorageStep = 64;    // storage sides are whole multiples of this
constexpr int kMaxSpareSide = 2048;  // 16 MiB of RGBA: spares are never larger

int roundUp(int n) { return (n + kStorageStep - 1) / kStorageStep * kStorageStep; }

// Everything in the key but the steps and the window of cells.
bool samePicture(const TextureKey& a, const TextureKey& b) {
  TextureKey x = a;
  x.stepY = b.stepY;
  x.stepX = b.stepX;
  x.row = b.row;
  x.col = b.col;
  x.rows = b.rows;
  x.cols = b.cols;
  return x == b;
}

}  // namespace

std::pair<int, int> textureSpan(int first, int last, int total, int step) {
  const int n = std::max(last - first, 1);
  const int chunk = (std::max(step, (n + 1) / 2) + step - 1) / step * step;
  const int q = first / chunk;
  const int begin = std::max(0, (q - 1) * chunk);
  return {begin, std::min(total, (q + 3) * chunk) - begin};
}

std::pair<int, int> visibleSpan(int first, int last, int total, int step) {
  const int begin = std::max(0, first / step * step);
  const int end = std::min(total, (std::max(last, first + 1) + step - 1) / step * step);
  return {begin, std::max(end - begin, 0)};
}

bool TextureCache::zoomedFrom(const TextureKey& key) const {
  bool otherSteps = false;
  for (const Entry& e : entries_) {
    if (!samePicture(e.key, key)) continue;
    if (e.key.stepY == key.stepY && e.key.stepX == key.stepX) return false;
    otherSteps = true;
  }
  return otherSteps;
}

void TextureCache::allocateStorage(Texture& t, int width, int height) {
  t.allocate(width, height);
  ++allocations_;
}

Texture TextureCache::takeStorage(int width, int height) {
  // The smallest spare that holds the texels.
  auto best = spares_.end();
  for (auto it = spares_.begin(); it != spares_.end(); ++it) {
    if (it->width() < width || it->height() < height) continue;
    if (best == spares_.end() || it->width() * it->height() < best->width() * best->height()) best = it;
  }
  if (best != spares_.end()) {
    Texture t = std::move(*best);
    spares_.erase(best);
    return t;
  }
  Texture t;
  allocateStorage(t, std::min(roundUp(width), maxSize_), std::min(roundUp(height), maxSize_));
  return t;
}

HeatmapTexture TextureCache::drawnTexture(const Entry& e) {
  return HeatmapTexture{e.texture.imguiId(), e.rowStep, e.colStep, e.width, e.height, e.key.row, e.key.col,
                        static_cast<float>(e.width) / static_cast<float>(std::max(e.texture.width(), 1)),
                        static_cast<float>(e.height) / static_cast<float>(std::max(e.texture.height(), 1))};
}

std::optional<HeatmapTexture> TextureCache::covering(const TextureKey& key, CellWindow visible) {
  Entry* best = nullptr;
  for (Entry& e : entries_) {
    if (!samePicture(e.key, key)) continue;
    const bool holds = e.key.row <= visible.row && e.key.col <= visible.col &&
                       e.key.row + e.height * e.rowStep >= visible.row + visible.rows &&
                       e.key.col + e.width * e.colStep >= visible.col + visible.cols;
    if (holds && (!best || e.rowStep * e.colStep < best->rowStep * best->colStep)) best = &e;
  }
  if (!best) return std::nullopt;
  best->usedThisFrame = true;
  return drawnTexture(*best);
}

HeatmapTexture TextureCache::get(const TextureKey& key, const float* values, int rows, int cols,
                                 const std::uint8_t* blocked) {
  for (Entry& e : entries_) {
    if (e.key == key) {
      e.usedThisFrame = true;
      return drawnTexture(e);
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
  e.texture = takeStorage(e.width, e.height);
  e.texture.uploadRegion(scratch_.rgba.data(), e.width, e.height);
  const bool whole = key.row == 0 && key.col == 0 && (key.rows < 0 || key.rows >= rows) && (key.cols < 0 || key.cols >= cols);
  if (whole) spareSide_ = std::max(spareSide_, std::min({roundUp(2 * std::max(e.width, e.height)), kMaxSpareSide, maxSize_}));
  uploadedThisFrame_ = true;
  ++uploads_;
  return drawnTexture(e);
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
  for (Entry& e : entries_) {
    if (!e.usedThisFrame && e.texture.valid()) spares_.push_back(std::move(e.texture));
  }
  std::erase_if(entries_, [](const Entry& e) { return !e.usedThisFrame; });
  for (Entry& e : entries_) e.usedThisFrame = false;
  // Keep the largest spares.
  std::sort(spares_.begin(), spares_.end(),
            [](const Texture& a, const Texture& b) { return a.width() * a.height() > b.width() * b.height(); });
  if (spares_.size() > static_cast<std::size_t>(kSpares)) spares_.resize(static_cast<std::size_t>(kSpares));
  // A frame that built nothing: make sure two storages hold any texture of the views on screen
  // (one drawn, one ready for the next zoom or pan), allocating at most one per frame.
  const auto big = [this](const Texture& t) { return t.width() >= spareSide_ && t.height() >= spareSide_; };
  const auto bigEntries = std::count_if(entries_.begin(), entries_.end(), [&](const Entry& e) { return big(e.texture); });
  if (!uploadedThisFrame_ && spareSide_ > 0 && bigEntries + std::count_if(spares_.begin(), spares_.end(), big) < 2) {
    if (spares_.size() >= static_cast<std::size_t>(kSpares)) spares_.pop_back();
    allocateStorage(spares_.emplace_back(), spareSide_, spareSide_);
  }
  uploadedThisFrame_ = false;
}

}  // namespace mhascope::app
