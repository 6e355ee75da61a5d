// MXFP4 blocks to float32 (mxfp4.hpp).
#include "io/mxfp4.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace mhascope {

void dequantiseMxfp4(const std::uint8_t* blocks, const std::uint8_t* scales, std::int64_t groups, float* out) {
  for (std::int64_t g = 0; g < groups; ++g) {
    const int exponent = static_cast<int>(scales[g]) - kMxfp4ScaleBias;
    const std::uint8_t* b = blocks + g * kMxfp4BlockBytes;
    float* o = out + g * kMxfp4BlockValues;
    if (scales[g] == 0xFF) {
      std::fill(o, o + kMxfp4BlockValues, std::numeric_limits<float>::quiet_NaN());
      continue;
    }
    for (int j = 0; j < kMxfp4BlockBytes; ++j) {
      // Exact: an e2m1 value times a power of two is a float unless it overflows.
      o[2 * j] = std::ldexp(kFp4Values[b[j] & 0x0F], exponent);
      o[2 * j + 1] = std::ldexp(kFp4Values[b[j] >> 4], exponent);
    }
  }
}

}  // namespace mhascope
