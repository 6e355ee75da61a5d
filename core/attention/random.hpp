// A tiny deterministic RNG (SplitMix64): the same seed gives the same numbers on every machine
// and compiler, which std::*_distribution does not promise.
#pragma once

#include <cmath>
#include <cstdint>
#include <string_view>

namespace mhascope {

class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1) with 24 bits, exactly representable as float.
  float uniform01() { return static_cast<float>(next() >> 40) * (1.0f / 16777216.0f); }
  float uniform(float lo, float hi) { return lo + (hi - lo) * uniform01(); }
  // Standard normal by Box–Muller on two 24-bit uniforms (u1 in (0, 1]).
  float normal() {
    const double u1 = (static_cast<double>(next() >> 40) + 1.0) / 16777216.0;
    const double u2 = static_cast<double>(next() >> 40) / 16777216.0;
    return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
  }

 private:
  std::uint64_t state_;
};

// FNV-1a: a stable 64-bit hash of a token's bytes, so a word's embedding depends only on the word.
inline std::uint64_t hashBytes(std::string_view s) {
  std::uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001B3ull;
  }
  return h;
}

}  // namespace mhascope
