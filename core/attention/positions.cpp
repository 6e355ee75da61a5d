// Positions inside attention: RoPE's rotation of q and k, ALiBi's slopes and bias; and the q/k norm that comes
// before the rotation. The engine's forward, the one-head path and the KV-cache decoder all call these, so the
// three agree on what a position (and the norm) does.
#include <cmath>

#include "attention/engine.hpp"
#include "attention/engine_record.hpp"

namespace mhascope {

RopeTable ropeTable(std::int64_t T, std::int64_t dk, std::int64_t firstPosition, float base,
                    const std::vector<double>& given, float gain) {
  RopeTable t;
  t.half = dk / 2;
  t.cos.resize(static_cast<std::size_t>(T * t.half));
  t.sin.resize(t.cos.size());
  for (std::int64_t i = 0; i < t.half; ++i) {
    // The textbook frequency, or the one a model's config decided (validated: d_k/2 finite numbers).
    const double invFreq = given.empty() ? std::pow(static_cast<double>(base),
                                                    -2.0 * static_cast<double>(i) / static_cast<double>(dk))
                                         : given[static_cast<std::size_t>(i)];
    for (std::int64_t r = 0; r < T; ++r) {
      // The angle in double, then cos and sin rounded to float: the same float numbers whatever
      // the position's size (a float angle loses digits at large t), and the same for every caller.
      const double angle = static_cast<double>(firstPosition + r) * invFreq;
      // YaRN's gain (1 otherwise: the same bits) lengthens q and k alike.
      t.cos[static_cast<std::size_t>(r * t.half + i)] = static_cast<float>(gain == 1.0f ? std::cos(angle) : std::cos(angle) * gain);
      t.sin[static_cast<std::size_t>(r * t.half + i)] = static_cast<float>(gain == 1.0f ? std::sin(angle) : std::sin(angle) * gain);
    }
  }
  return t;
}

void rotateRows(float* x, std::int64_t T, std::int64_t dk, const RopeTable& table, RopeStyle style) {
  const std::int64_t half = table.half;
  for (std::int64_t r = 0; r < T; ++r) {
    float* row = x + r * dk;
    const float* cs = table.cos.data() + r * half;
    const float* sn = table.sin.data() + r * half;
    for (std::int64_t i = 0; i < half; ++i) {
      float& a = style == RopeStyle::Half ? row[i] : row[2 * i];
      float& b = style == RopeStyle::Half ? row[i + half] : row[2 * i + 1];
      const float a0 = a, b0 = b;
      a = a0 * cs[i] - b0 * sn[i];
      b = b0 * cs[i] + a0 * sn[i];
    }
  }
}

void rotatePositions(float* x, std::int64_t T, std::int64_t dk, std::int64_t firstPosition, float base,
                     RopeStyle style, const std::vector<double>& invFreq, float gain) {
  rotateRows(x, T, dk, ropeTable(T, dk, firstPosition, base, invFreq, gain), style);
}

std::vector<float> alibiSlopes(int heads) {
  // The paper's rule: for n a power of two, m_i = 2^(-8i/n), i = 1 .. n (a geometric sequence that
  // starts at and has ratio 2^(-8/n)); otherwise the n of the closest power of two below h, then
  // every other slope of 2n (they fall between the first ones) until there are h.
  auto powerOfTwo = [](int n) {
    std::vector<float> m(static_cast<std::size_t>(n));
    for (int i = 1; i <= n; ++i) m[static_cast<std::size_t>(i - 1)] = static_cast<float>(std::pow(2.0, -8.0 * i / n));
    return m;
  };
  if (heads <= 0) return {};
  int closest = 1;
  while (closest * 2 <= heads) closest *= 2;
  std::vector<float> m = powerOfTwo(closest);
  if (closest == heads) return m;
  const std::vector<float> twice = alibiSlopes(2 * closest);
  for (std::size_t i = 0; i < twice.size() && static_cast<int>(m.size()) < heads; i += 2) m.push_back(twice[i]);
  return m;
}

float alibiBias(float slope, bool causal, std::int64_t t, std::int64_t j) {
  const auto distance = static_cast<float>(causal ? t - j : (t > j ? t - j : j - t));
  return -slope * distance;
}

// q/k norm (AttentionOptions::qNorm): each query and key scaled to unit root mean square and times a learned gain.
void normQueryKeyHeads(const float* in, std::int64_t n, std::int64_t dk, const std::vector<float>& gain, float eps,
                       float* out, std::int64_t outStride) {
  // The root mean square over one run of features.
  const auto inverseRms = [eps](const float* x, std::int64_t count) {
    double sq = 0;
    for (std::int64_t c = 0; c < count; ++c) sq += static_cast<double>(x[c]) * x[c];
    return static_cast<float>(1.0 / std::sqrt(sq / static_cast<double>(count) + eps));
  };
  const bool whole = static_cast<std::int64_t>(gain.size()) != dk;  // one norm over all n heads' features
  const float wholeInv = whole ? inverseRms(in, n * dk) : 0.0f;     // read before any head is written
  for (std::int64_t i = 0; i < n; ++i) {
    const float* x = in + i * dk;
    const float inv = whole ? wholeInv : inverseRms(x, dk);
    const float* g = gain.data() + (whole ? i * dk : 0);
    float* y = out + i * outStride;
    for (std::int64_t c = 0; c < dk; ++c) y[c] = g[c] * (x[c] * inv);
  }
}

}  // namespace mhascope
