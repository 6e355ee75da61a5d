// Animated GIF through giflib (gif.hpp).
#include "export/gif.hpp"

#include <gif_lib.h>

#include <algorithm>
#include <cstring>
#include <unordered_map>
#include <utility>
#include <memory>

namespace mhascope {
namespace {

struct Out {
  std::string bytes;
};

int writeOut(GifFileType* gif, const GifByteType* data, int length) {
  try {
    static_cast<Out*>(gif->UserData)->bytes.append(reinterpret_cast<const char*>(data), static_cast<std::size_t>(length));
    return length;
  } catch (...) {
    return 0;  // no exception may cross giflib's C frames: a short write is its error
  }
}

struct MapDeleter {
  void operator()(ColorMapObject* m) const { GifFreeMapObject(m); }
};
using MapPtr = std::unique_ptr<ColorMapObject, MapDeleter>;

std::uint32_t rgbAt(const RgbFrame& f, std::size_t i) {
  return (std::uint32_t{f.rgb[3 * i]} << 16) | (std::uint32_t{f.rgb[3 * i + 1]} << 8) | f.rgb[3 * i + 2];
}

// The frame's palette and its pixels as indices into it: the 256 most frequent colours, each
// other colour drawn as the nearest of them (squared RGB distance). A picture of flat fills with
// antialiased edges keeps every fill exact; only edge pixels move. (Median cut, which averages
// the colours of a box, turned the white paper grey.)
Result<MapPtr> paletteOf(const RgbFrame& f, std::vector<GifByteType>& indices) {
  const std::size_t n = static_cast<std::size_t>(f.width) * static_cast<std::size_t>(f.height);
  std::unordered_map<std::uint32_t, std::uint64_t> counts;
  for (std::size_t i = 0; i < n; ++i) ++counts[rgbAt(f, i)];
  std::vector<std::pair<std::uint64_t, std::uint32_t>> byCount;
  byCount.reserve(counts.size());
  for (const auto& [c, k] : counts) byCount.emplace_back(k, c);
  const std::size_t keep = std::min<std::size_t>(256, byCount.size());
  // Most frequent first; ties by colour so the palette never depends on the hash order.
  std::partial_sort(byCount.begin(), byCount.begin() + static_cast<std::ptrdiff_t>(keep), byCount.end(),
                    [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
  MapPtr map(GifMakeMapObject(256, nullptr));
  if (!map) return makeError("out of memory for a GIF palette");
  std::unordered_map<std::uint32_t, GifByteType> indexOf;
  for (std::size_t k = 0; k < 256; ++k) {
    const std::uint32_t c = k < keep ? byCount[k].second : 0;
    map->Colors[k] = GifColorType{static_cast<GifByteType>(c >> 16), static_cast<GifByteType>(c >> 8), static_cast<GifByteType>(c)};
    if (k < keep) indexOf.emplace(c, static_cast<GifByteType>(k));
  }
  for (std::size_t k = keep; k < byCount.size(); ++k) {
    const std::uint32_t c = byCount[k].second;
    int best = 0;
    long bestD = -1;
    for (std::size_t j = 0; j < keep; ++j) {
      const long dr = long{map->Colors[j].Red} - long{c >> 16 & 0xffu}, dg = long{map->Colors[j].Green} - long{c >> 8 & 0xffu},
                 db = long{map->Colors[j].Blue} - long{c & 0xffu};
      const long d = dr * dr + dg * dg + db * db;
      if (bestD < 0 || d < bestD) {
        bestD = d;
        best = static_cast<int>(j);
      }
    }
    indexOf.emplace(c, static_cast<GifByteType>(best));
  }
  indices.resize(n);
  for (std::size_t i = 0; i < n; ++i) indices[i] = indexOf[rgbAt(f, i)];
  return map;
}

Error gifError(const char* what, int code) { return makeError(std::string(what) + ": " + GifErrorString(code)); }

Status checkFrame(const RgbFrame& f, std::size_t k, int w, int h) {
  if (f.width != w || f.height != h) {
    return makeError("frame " + std::to_string(k) + " is " + std::to_string(f.width) + " x " + std::to_string(f.height) +
                     ", the first " + std::to_string(w) + " x " + std::to_string(h) + ": every frame needs one size");
  }
  if (f.rgb.size() != static_cast<std::size_t>(w) * static_cast<std::size_t>(h) * 3) {
    return makeError("frame " + std::to_string(k) + " holds " + std::to_string(f.rgb.size()) + " bytes, not width x height x 3");
  }
  return Ok{};
}

}  // namespace

Result<std::string> encodeGif(std::size_t count, int delayCentiseconds,
                              const std::function<Result<RgbFrame>(std::size_t)>& frameAt) {
  if (count == 0) return makeError("an animation needs at least one frame");
  if (delayCentiseconds < 2 || delayCentiseconds > 6000) {
    return makeError("a frame's delay must be 2 … 6000 hundredths of a second, got " + std::to_string(delayCentiseconds));
  }
  try {
    auto first = frameAt(0);
    if (!first) return first.error();
    const int w = first->width, h = first->height;
    if (w < 1 || h < 1 || w > 65535 || h > 65535) {
      return makeError("a GIF frame is 1 … 65535 pixels a side, got " + std::to_string(w) + " x " + std::to_string(h));
    }
    if (auto st = checkFrame(*first, 0, w, h); !st) return st.error();
    Out out;
    int err = 0;
    GifFileType* gif = EGifOpen(&out, writeOut, &err);
    if (!gif) return gifError("cannot start the GIF", err);
    auto close = [&](Status st) -> Result<std::string> {
      int closeErr = 0;
      const int rc = EGifCloseFile(gif, &closeErr);
      if (!st) return st.error();
      if (rc == GIF_ERROR) return gifError("cannot finish the GIF", closeErr);
      return std::move(out.bytes);
    };
    EGifSetGifVersion(gif, true);  // GIF89a: delays and the loop
    if (EGifPutScreenDesc(gif, w, h, 8, 0, nullptr) == GIF_ERROR) return close(gifError("GIF screen", gif->Error));
    // Loop forever (the NETSCAPE2.0 application block, count 0).
    const GifByteType loop[3] = {1, 0, 0};
    if (EGifPutExtensionLeader(gif, APPLICATION_EXT_FUNC_CODE) == GIF_ERROR ||
        EGifPutExtensionBlock(gif, 11, "NETSCAPE2.0") == GIF_ERROR || EGifPutExtensionBlock(gif, 3, loop) == GIF_ERROR ||
        EGifPutExtensionTrailer(gif) == GIF_ERROR) {
      return close(gifError("GIF loop block", gif->Error));
    }
    std::vector<GifByteType> indices;
    RgbFrame frame = std::move(*first);
    for (std::size_t k = 0; k < count; ++k) {
      if (k > 0) {
        auto next = frameAt(k);
        if (!next) return close(next.error());
        if (auto st = checkFrame(*next, k, w, h); !st) return close(st);
        frame = std::move(*next);
      }
      auto map = paletteOf(frame, indices);
      if (!map) return close(map.error());
      GraphicsControlBlock gcb{};
      gcb.DisposalMode = DISPOSE_DO_NOT;
      gcb.UserInputFlag = false;
      gcb.DelayTime = delayCentiseconds;
      gcb.TransparentColor = NO_TRANSPARENT_COLOR;
      GifByteType ext[4];
      EGifGCBToExtension(&gcb, ext);
      if (EGifPutExtension(gif, GRAPHICS_EXT_FUNC_CODE, 4, ext) == GIF_ERROR ||
          EGifPutImageDesc(gif, 0, 0, w, h, false, map->get()) == GIF_ERROR) {
        return close(gifError("GIF frame", gif->Error));
      }
      for (int y = 0; y < h; ++y) {
        if (EGifPutLine(gif, indices.data() + static_cast<std::size_t>(y) * static_cast<std::size_t>(w), w) == GIF_ERROR) {
          return close(gifError("GIF pixels", gif->Error));
        }
      }
    }
    return close(Ok{});
  } catch (const std::bad_alloc&) {
    return makeError("out of memory while writing the animation");
  }
}

Result<std::string> encodeGif(const std::vector<RgbFrame>& frames, int delayCentiseconds) {
  return encodeGif(frames.size(), delayCentiseconds, [&](std::size_t k) -> Result<RgbFrame> { return frames[k]; });
}

}  // namespace mhascope
