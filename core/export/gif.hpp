// Animated GIF through giflib (Debian's libgif): RGB frames of one size → the file's bytes. Each
// frame gets its own palette of its 256 most frequent colours (all of them when it has no more),
// the rest drawn as the nearest of those: flat areas (cells, paper, ink, curves) keep their exact
// colours and only antialiased edge pixels may move. Loops forever.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "util/result.hpp"

namespace mhascope {

struct RgbFrame {
  int width = 0, height = 0;
  std::vector<std::uint8_t> rgb;  // width * height * 3, row 0 at the top
};

// `count` frames, asked for one at a time (only one is in memory): `frameAt(k)`, k = 0 … count-1.
// `delayCentiseconds`: how long each frame shows (GIF counts in 1/100 s), 2 … 6000.
// Errors: no frames, frames of different sizes or of the wrong byte count, a bad delay, and
// whatever frameAt returns.
Result<std::string> encodeGif(std::size_t count, int delayCentiseconds,
                              const std::function<Result<RgbFrame>(std::size_t)>& frameAt);
Result<std::string> encodeGif(const std::vector<RgbFrame>& frames, int delayCentiseconds);

}  // namespace mhascope
