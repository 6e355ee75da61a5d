// Per-row kernels of the attention (see row_kernels.hpp). They use Eigen's SIMD packets directly so
// that each does its work in one pass over the row.
#include "kernels/row_kernels.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace mhascope {
namespace {
namespace simd = Eigen::internal;
using Packet = simd::packet_traits<float>::type;
constexpr std::int64_t kLanes = static_cast<std::int64_t>(sizeof(Packet) / sizeof(float));
constexpr float kNegInf = -std::numeric_limits<float>::infinity();
}  // namespace

float scaleMaskRow(const float* s, float factor, const std::uint8_t* blocked, float* scaled, float* masked,
                   std::int64_t n) {
  return scaleMaskRow(s, factor, blocked ? BlockedKeys{blocked} : BlockedKeys{}, scaled, masked, n);
}

float scaleMaskRow(const float* s, float factor, const BlockedKeys& blocked, float* scaled, float* masked,
                   std::int64_t n) {
  if (blocked.any()) {
    float m = kNegInf;
    for (std::int64_t k = 0; k < n; ++k) {
      scaled[k] = s[k] * factor;
      masked[k] = blocked.at(k) ? kNegInf : scaled[k];
      m = std::max(m, masked[k]);
    }
    return m;
  }
  const Packet f = simd::pset1<Packet>(factor);
  Packet vmax = simd::pset1<Packet>(kNegInf);
  std::int64_t k = 0;
  for (; k + kLanes <= n; k += kLanes) {
    const Packet v = simd::pmul(simd::ploadu<Packet>(s + k), f);
    simd::pstoreu(scaled + k, v);
    if (masked) simd::pstoreu(masked + k, v);
    vmax = simd::pmax(vmax, v);
  }
  float m = simd::predux_max(vmax);
  for (; k < n; ++k) {
    scaled[k] = s[k] * factor;
    if (masked) masked[k] = scaled[k];
    m = std::max(m, scaled[k]);
  }
  return m;
}

namespace {

// exp(x - m) over the row into out, then times 1 / (its sum + extra), blocked keys exactly 0; returns that factor.
// extra: exp(sink - m) of a learned sink, or 0 (none: the sum's bits are the plain softmax's).
float normaliseRow(const float* x, float m, const BlockedKeys& blocked, float* out, std::int64_t n, const float* extra) {
  std::int64_t k = 0;
  const Packet vm = simd::pset1<Packet>(m);
  Packet acc = simd::pset1<Packet>(0.0f);
  for (; k + kLanes <= n; k += kLanes) {
    const Packet e = simd::pexp(simd::psub(simd::ploadu<Packet>(x + k), vm));
    simd::pstoreu(out + k, e);
    acc = simd::padd(acc, e);
  }
  float sum = simd::predux(acc);
  for (; k < n; ++k) {
    out[k] = std::exp(x[k] - m);
    sum += out[k];
  }
  if (extra) sum += *extra;
  const float inv = 1.0f / sum;
  if (blocked.any()) {
    // Blocked keys get exactly 0 (times inv, as the others: NaN if the row's sum is NaN, like
    // PyTorch). Their x is -inf, whose vectorised exp is not 0 but at most ~1e-38, and it is in
    // the sum: that changes no bit of it, since the sum is >= 1 (the row's maximum, or the sink when it is
    // larger, gives exp(0) = 1) and every partial sum it could round differently stays below 2^-24 of that.
    // (Subtracting them again, one by one, as this did before, left the sum as it was and took a
    // scalar pass over every row of a causal mask: a quarter of the attention's time at T = 4096.)
    // Branch-free passes the compiler vectorises; a run of blocked keys to the row's end reads
    // no bytes.
    const std::int64_t from = std::clamp<std::int64_t>(blocked.from, 0, n);
    if (blocked.bytes) {
      for (k = 0; k < from; ++k) out[k] = (blocked.bytes[k] ? 0.0f : out[k]) * inv;
    } else {
      for (k = 0; k < from; ++k) out[k] *= inv;
    }
    for (k = from; k < n; ++k) out[k] = 0.0f * inv;
    return inv;
  }
  const Packet vinv = simd::pset1<Packet>(inv);
  for (k = 0; k + kLanes <= n; k += kLanes) simd::pstoreu(out + k, simd::pmul(simd::ploadu<Packet>(out + k), vinv));
  for (; k < n; ++k) out[k] *= inv;
  return inv;
}

}  // namespace

bool softmaxRow(const float* x, float m, const BlockedKeys& blocked, bool allBlocked, float* out, std::int64_t n) {
  if (allBlocked) {
    std::fill(out, out + n, 0.0f);
    return false;
  }
  if (m == kNegInf) {
    std::fill(out, out + n, std::numeric_limits<float>::quiet_NaN());
    return true;
  }
  normaliseRow(x, m, blocked, out, n, nullptr);
  return true;
}

float softmaxRowWithSink(const float* x, float m, const BlockedKeys& blocked, bool allBlocked, float sink, float* out,
                         std::int64_t n) {
  if (sink == kNegInf) {  // no sink: the plain softmax, and nothing on the sink
    softmaxRow(x, m, blocked, allBlocked, out, n);
    return 0.0f;
  }
  if (allBlocked || m == kNegInf) {  // nothing to attend to but the sink
    std::fill(out, out + n, 0.0f);
    return 1.0f;
  }
  // The sink is one more column: the maximum is taken over it too (for stability), and its exp joins the sum.
  const float top = std::max(m, sink);
  const float e = std::exp(sink - top);
  return e * normaliseRow(x, top, blocked, out, n, &e);
}

}  // namespace mhascope
