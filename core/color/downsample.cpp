#include "color/downsample.hpp"

#include "util/thread_pool.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <thread>
#include <vector>

namespace mhascope {
namespace {

constexpr float kNone = -std::numeric_limits<float>::infinity();
constexpr long long kSplitCells = 1 << 20;  // windows at least this large are folded on two threads

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

// Linear and log scales turn values into positions by one increasing function for the whole
// matrix, so a block's position is that of its largest value (and, for max |v|, of its smallest
// too): the ky rows of a block are folded cell by cell first (contiguous, so the compiler
// vectorises it), then kx columns at a time. The same positions as combining the rows' parts one
// by one (a max is a max in any order; max |v| is decided by the block's two extremes).
// Block rows [brBegin, brEnd) of the output.
void foldBlocks(const float* values, const std::uint8_t* blocked, int cols, int r0, int c0, int wr, int wc, int ky,
                int kx, ColorScale scale, ColorRange range, DownsampleRule rule, BlockPositions& out, int brBegin,
                int brEnd) {
  const float inf = std::numeric_limits<float>::infinity();
  const bool needLo = rule == DownsampleRule::MaxAbs;
  std::vector<float> hi(static_cast<std::size_t>(wc)), lo(needLo ? static_cast<std::size_t>(wc) : 0);
  std::vector<std::uint8_t> nan(static_cast<std::size_t>(wc));
  for (int br = brBegin; br < brEnd; ++br) {
    std::fill(hi.begin(), hi.end(), kNone);
    std::fill(lo.begin(), lo.end(), inf);
    std::fill(nan.begin(), nan.end(), std::uint8_t{0});
    for (int r = br * ky; r < std::min(wr, (br + 1) * ky); ++r) {
      const std::size_t first = static_cast<std::size_t>(r0 + r) * cols + static_cast<std::size_t>(c0);
      const float* v = values + first;
      const std::uint8_t* b = blocked ? blocked + first : nullptr;
      for (int c = 0; c < wc; ++c) {
        const float x = v[c];
        const bool skip = (b && b[c]) || x == kNone;
        const float h = skip ? kNone : x;
        hi[c] = h > hi[c] ? h : hi[c];  // a NaN never wins here: nan[] counts it
        nan[c] |= static_cast<std::uint8_t>(!skip && x != x);
        if (needLo) {
          const float l = skip ? inf : x;
          lo[c] = l < lo[c] ? l : lo[c];
        }
      }
    }
    float* dst = &out.values[static_cast<std::size_t>(br) * out.cols];
    for (int j = 0; j < out.cols; ++j) {
      float h = kNone, l = inf;
      bool isNan = false;
      for (int c = j * kx; c < std::min(wc, (j + 1) * kx); ++c) {
        h = std::max(h, hi[static_cast<std::size_t>(c)]);
        if (needLo) l = std::min(l, lo[static_cast<std::size_t>(c)]);
        isNan = isNan || nan[static_cast<std::size_t>(c)] != 0;
      }
      if (isNan) {
        dst[j] = std::numeric_limits<float>::quiet_NaN();
      } else if (h != kNone) {
        dst[j] = colorPosition(scale, range, h, 0.0f);
        if (needLo) dst[j] = combinePositions(dst[j], colorPosition(scale, range, l, 0.0f), rule);
      }
    }
  }
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
  // The position farther from 0.5 (the middle of the diverging map), equal distances → the larger,
  // compared exactly (a rounded |a − 0.5| made distinct positions tie), so the winner of a block
  // is always its smallest or its largest position whatever order cells are combined in.
  const bool aLow = a < 0.5f, bLow = b < 0.5f;
  if (aLow == bLow) return aLow ? std::min(a, b) : std::max(a, b);
  const float low = aLow ? a : b, high = aLow ? b : a;
  // 0.5 − low > high − 0.5  ⇔  low + high < 1; the sum of two positions in [0, 1] is exact in
  // double wherever it matters (near 1).
  return static_cast<double>(low) + static_cast<double>(high) < 1.0 ? low : high;
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
  if (scale != ColorScale::PerRow) {
    // Two cores for a large window (a zoom of a T = 4096 map reads up to 6 M cells): the second
    // folds the lower half of the block rows; the entries are the same whoever computes them.
    const bool split = static_cast<long long>(wr) * wc >= kSplitCells && std::thread::hardware_concurrency() >= 2;
    const int half = split ? out.rows / 2 : out.rows;
    parallelFor(split ? 2 : 1, split ? 2 : 1, [&](std::int64_t part) {  // the process's thread pool
      foldBlocks(values, blocked, cols, r0, c0, wr, wc, ky, kx, scale, range, rule, out, part == 0 ? 0 : half,
                 part == 0 ? half : out.rows);
    });
    return;
  }
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
