#include "color/downsample.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace mhascope {
namespace {

constexpr float kNone = -std::numeric_limits<float>::infinity();

inline bool skipped(const float* v, const std::uint8_t* blocked, std::size_t i) {
  return (blocked && blocked[i]) || v[i] == kNone;
}

// The largest value of one row that is not blocked (per-row scale); −inf when all are.
float rowMaximum(const float* v, const std::uint8_t* blocked, std::size_t first, int cols) {
  float m = kNone;
  for (int c = 0; c < cols; ++c) {
    const std::size_t i = first + static_cast<std::size_t>(c);
    if (!skipped(v, blocked, i) && v[i] > m) m = v[i];
  }
  return m;
}

}  // namespace

DownsampleRule downsampleRuleFor(DataKind kind) {
  return kind == DataKind::Probability ? DownsampleRule::Max : DownsampleRule::MaxAbs;
}

const char* downsampleRuleName(DownsampleRule r) { return r == DownsampleRule::Max ? "max" : "max |v|"; }

int cellsPerTexel(int cells, int texels) {
  if (cells <= 0) return 1;
  texels = std::max(texels, 1);
  return (cells + texels - 1) / texels;
}

float combinePositions(float a, float b, DownsampleRule rule) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<float>::quiet_NaN();
  if (a == kNone) return b;
  if (b == kNone) return a;
  if (rule == DownsampleRule::Max) return std::max(a, b);
  const float da = std::fabs(a - 0.5f), db = std::fabs(b - 0.5f);
  return da > db || (da == db && a > b) ? a : b;
}

void downsampleToPositions(const float* values, const std::uint8_t* blocked, int rows, int cols, int ky, int kx,
                           ColorScale scale, ColorRange range, DownsampleRule rule, BlockPositions& out,
                           CellWindow window) {
  ky = std::max(ky, 1);
  kx = std::max(kx, 1);
  const int r0 = std::clamp(window.row, 0, std::max(rows, 0)), c0 = std::clamp(window.col, 0, std::max(cols, 0));
  const int wr = window.rows < 0 ? rows - r0 : std::clamp(window.rows, 0, rows - r0);
  const int wc = window.cols < 0 ? cols - c0 : std::clamp(window.cols, 0, cols - c0);
  out.ky = ky;
  out.kx = kx;
  out.rows = wr > 0 ? (wr + ky - 1) / ky : 0;
  out.cols = wc > 0 ? (wc + kx - 1) / kx : 0;
  out.values.assign(static_cast<std::size_t>(out.rows) * out.cols, kNone);
  for (int r = r0; r < r0 + wr; ++r) {
    const std::size_t rowStart = static_cast<std::size_t>(r) * cols;
    const std::size_t first = rowStart + static_cast<std::size_t>(c0);
    const float rowMax = scale == ColorScale::PerRow ? rowMaximum(values, blocked, rowStart, cols) : 0.0f;
    float* dst = &out.values[static_cast<std::size_t>((r - r0) / ky) * out.cols];
    for (int j = 0; j < out.cols; ++j) {
      // Every scale is increasing in v within a row, so the row's part of the block is decided
      // on raw values and only its extremes are turned into positions.
      float lo = std::numeric_limits<float>::infinity(), hi = kNone;
      bool nan = false;
      const int c1 = std::min(wc, (j + 1) * kx);
      for (int c = j * kx; c < c1; ++c) {
        const std::size_t i = first + static_cast<std::size_t>(c);
        if (skipped(values, blocked, i)) continue;
        const float v = values[i];
        nan = nan || std::isnan(v);
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
      float here = kNone;
      if (nan) {
        here = std::numeric_limits<float>::quiet_NaN();
      } else if (hi != kNone) {
        here = colorPosition(scale, range, hi, rowMax);
        if (rule == DownsampleRule::MaxAbs) here = combinePositions(here, colorPosition(scale, range, lo, rowMax), rule);
      }
      dst[j] = combinePositions(dst[j], here, rule);
    }
  }
}

}  // namespace mhascope
