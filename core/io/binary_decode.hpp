// Decoding numbers from file bytes, shared by the .npy and .safetensors readers: integers in a
// given byte order whatever the host's, and IEEE half / bfloat16 to float32.
#pragma once

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace mhascope::detail {

// Assembles an unsigned integer from sizeof(U) bytes in the file's byte order: the compiler
// turns this into a plain load (plus bswap for the other order).
template <class U>
U loadUnsigned(const unsigned char* p, bool bigEndian) {
  U v = 0;
  for (std::size_t k = 0; k < sizeof(U); ++k) {
    const std::size_t idx = bigEndian ? k : sizeof(U) - 1 - k;
    v = static_cast<U>((static_cast<std::uint64_t>(v) << 8) | p[idx]);
  }
  return v;
}

inline float halfToFloat(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1fu;
  const std::uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in float
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

// bfloat16 is the top half of a float32.
inline float bf16ToFloat(std::uint16_t h) { return std::bit_cast<float>(static_cast<std::uint32_t>(h) << 16); }

// float64 → float32. Casting a finite double beyond FLT_MAX to float is undefined behaviour, so
// such a value gives false (and 0) for the caller to count and report; ±inf and NaN pass through
// for the caller's NaN/Inf check.
inline bool narrowToFloat(double v, float& out) {
  if (std::isfinite(v) && std::fabs(v) > static_cast<double>(FLT_MAX)) {
    out = 0.0f;
    return false;
  }
  out = static_cast<float>(v);
  return true;
}

// The writers' side: float32 values appended as little-endian bytes (what .npy '<f4' and
// safetensors F32 store) whatever the host's byte order.
inline void appendFloat32LE(std::string& out, std::span<const float> values) {
  if constexpr (std::endian::native == std::endian::big) {
    for (const float v : values) {
      const auto bits = std::bit_cast<std::uint32_t>(v);
      for (int k = 0; k < 4; ++k) out += static_cast<char>((bits >> (8 * k)) & 0xffu);
    }
  } else {
    out.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
  }
}

}  // namespace mhascope::detail
