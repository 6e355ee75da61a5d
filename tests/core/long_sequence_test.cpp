// Long sequences: the default memory budget, the weights' colour scales and the rule that
// downsamples a heatmap to the screen (core/util/memory_budget, core/color/color_scale,
// core/color/downsample).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "color/color_scale.hpp"
#include "color/downsample.hpp"
#include "util/memory_budget.hpp"

namespace mhascope {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// A causal mask's pattern: cell i of a row-major matrix with `cols` columns lies above the diagonal.
bool r0blocked(std::size_t i, int cols) { return static_cast<int>(i % cols) > static_cast<int>(i / cols); }

TEST(MemoryBudget, ParsesMemAvailable) {
  const char* meminfo = "MemTotal:       24576000 kB\nMemFree:         1000 kB\nMemAvailable:   23093964 kB\n";
  ASSERT_TRUE(parseMemAvailable(meminfo).has_value());
  EXPECT_EQ(*parseMemAvailable(meminfo), 23093964ull * 1024);
  EXPECT_FALSE(parseMemAvailable("MemTotal: 100 kB\n").has_value());
  EXPECT_FALSE(parseMemAvailable("MemAvailable: lots\n").has_value());
  EXPECT_FALSE(parseMemAvailable("MemAvailable: 100 MB\n").has_value());
  EXPECT_FALSE(parseMemAvailable("MemAvailable: 99999999999999999999999 kB\n").has_value());
  EXPECT_FALSE(parseMemAvailable("").has_value());
}

TEST(MemoryBudget, HalfOfWhatIsAvailableWithinBounds) {
  EXPECT_EQ(budgetForAvailable(20ull << 30), 10ull << 30);
  EXPECT_EQ(budgetForAvailable(std::nullopt), 512ull << 20);      // unknown: the old fixed default
  EXPECT_EQ(budgetForAvailable(300ull << 20), 512ull << 20);      // never below 512 MiB
  EXPECT_EQ(budgetForAvailable(1ull << 40), 32ull << 30);         // never above 32 GiB
  const std::uint64_t here = defaultMemoryBudget();
  EXPECT_GE(here, kMinDefaultBudget);
  EXPECT_LE(here, kMaxDefaultBudget);
}

TEST(ColorScale, LinearLogAndPerRowPositions) {
  const ColorRange unit{0.0f, 1.0f};
  EXPECT_FLOAT_EQ(colorPosition(ColorScale::Linear, unit, 0.25f, 0), 0.25f);
  EXPECT_FLOAT_EQ(colorPosition(ColorScale::Linear, ColorRange{-2, 2}, 1.0f, 0), 0.75f);
  // log: 4 decades below the top; 1/T at T = 2048 sits at ~0.17 instead of 0.0005.
  EXPECT_FLOAT_EQ(colorPosition(ColorScale::Log, unit, 1.0f, 0), 1.0f);
  EXPECT_NEAR(colorPosition(ColorScale::Log, unit, 0.01f, 0), 0.5f, 1e-6);
  EXPECT_NEAR(colorPosition(ColorScale::Log, unit, 1e-4f, 0), 0.0f, 1e-6);
  EXPECT_EQ(colorPosition(ColorScale::Log, unit, 0.0f, 0), 0.0f);   // an exact 0: the bottom, not −inf
  EXPECT_EQ(colorPosition(ColorScale::Log, unit, 1e-9f, 0), 0.0f);
  EXPECT_GT(colorPosition(ColorScale::Log, unit, 1.0f / 2048, 0), 0.15f);
  EXPECT_LT(colorPosition(ColorScale::Linear, unit, 1.0f / 2048, 0), 0.001f);
  // per row: the row's largest weight is the top colour; a row of zeros stays at the bottom.
  EXPECT_FLOAT_EQ(colorPosition(ColorScale::PerRow, unit, 0.001f, 0.002f), 0.5f);
  EXPECT_FLOAT_EQ(colorPosition(ColorScale::PerRow, unit, 0.002f, 0.002f), 1.0f);
  EXPECT_EQ(colorPosition(ColorScale::PerRow, unit, 0.0f, 0.0f), 0.0f);
  // NaN and −inf keep their own colours on every scale.
  for (ColorScale s : {ColorScale::Linear, ColorScale::Log, ColorScale::PerRow}) {
    EXPECT_TRUE(std::isnan(colorPosition(s, unit, std::nanf(""), 1.0f)));
    EXPECT_EQ(colorPosition(s, unit, -kInf, 1.0f), -kInf);
    EXPECT_EQ(colorPosition(s, unit, kInf, 1.0f), 1.0f);
  }
}

TEST(ColorScale, OnlyWeightsChangeScaleAndTheLegendSaysWhich) {
  EXPECT_EQ(effectiveColorScale(ColorScale::Log, DataKind::Probability), ColorScale::Log);
  EXPECT_EQ(effectiveColorScale(ColorScale::Log, DataKind::Signed), ColorScale::Linear);
  EXPECT_EQ(effectiveColorScale(ColorScale::PerRow, DataKind::Signed), ColorScale::Linear);
  const ColorbarTicks log = colorbarTicks(ColorScale::Log, ColorRange{0, 1});
  EXPECT_EQ(log.top, "1");
  EXPECT_EQ(log.middle, "0.01");
  EXPECT_EQ(log.bottom, "≤ 0.0001");
  EXPECT_EQ(colorScaleLegend(ColorScale::Log, ColorRange{0, 1}), "colour scale: log10, ≤ 0.0001 … 1 (4 decades)");
  EXPECT_NE(colorScaleLegend(ColorScale::PerRow, ColorRange{0, 1}).find("per row"), std::string::npos);
  EXPECT_EQ(colorScaleLegend(ColorScale::Linear, ColorRange{-2, 2}), "colour scale: linear, -2 … 2");
}

// A straightforward reference: every block's cells turned into positions, then reduced.
std::vector<float> referenceBlocks(const std::vector<float>& v, const std::vector<std::uint8_t>& blocked, int rows,
                                   int cols, int ky, int kx, ColorScale scale, ColorRange range, DownsampleRule rule) {
  const int orows = (rows + ky - 1) / ky, ocols = (cols + kx - 1) / kx;
  std::vector<float> out(static_cast<std::size_t>(orows) * ocols, -kInf);
  for (int r = 0; r < rows; ++r) {
    float rowMax = -kInf;
    for (int c = 0; c < cols; ++c) {
      const std::size_t i = static_cast<std::size_t>(r) * cols + c;
      if (!blocked[i] && v[i] != -kInf) rowMax = std::max(rowMax, v[i]);
    }
    for (int c = 0; c < cols; ++c) {
      const std::size_t i = static_cast<std::size_t>(r) * cols + c;
      if (blocked[i] || v[i] == -kInf) continue;
      float& o = out[static_cast<std::size_t>(r / ky) * ocols + c / kx];
      o = combinePositions(o, colorPosition(scale, range, v[i], rowMax), rule);
    }
  }
  return out;
}

TEST(Downsample, MaxKeepsASingleStrongWeightAndBlockedBlocksStayBlocked) {
  // 4 x 4 weights, 2 x 2 blocks: one strong weight in the top-left block; the top-right block
  // is entirely blocked (causal), the bottom-left mixes blocked and small weights.
  const std::vector<float> w = {0.01f, 0.02f, 0, 0,     //
                                0.90f, 0.03f, 0, 0,     //
                                0.05f, 0.00f, 0.1f, 0,  //
                                0.04f, 0.06f, 0.2f, 0.3f};
  const std::vector<std::uint8_t> blocked = {0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 0, 1, 0, 0, 0, 0};
  BlockPositions out;
  downsampleToPositions(w.data(), blocked.data(), 4, 4, 2, 2, ColorScale::Linear, ColorRange{0, 1},
                        DownsampleRule::Max, out);
  ASSERT_EQ(out.rows, 2);
  ASSERT_EQ(out.cols, 2);
  EXPECT_FLOAT_EQ(out.values[0], 0.90f);  // the max, not the mean (0.24) and not a sampled cell
  EXPECT_EQ(out.values[1], -kInf);        // only blocked cells: drawn blocked
  EXPECT_FLOAT_EQ(out.values[2], 0.06f);
  EXPECT_FLOAT_EQ(out.values[3], 0.3f);
  // A mean would have given 0.2375 for the first block: check the rule's name says max.
  EXPECT_STREQ(downsampleRuleName(downsampleRuleFor(DataKind::Probability)), "max");
}

TEST(Downsample, SignedBlocksShowTheLargestMagnitudeWithItsSign) {
  const std::vector<float> s = {-5.0f, 0.1f, 2.0f, 3.0f};
  const std::vector<std::uint8_t> none(4, 0);
  BlockPositions out;
  downsampleToPositions(s.data(), nullptr, 1, 4, 1, 2, ColorScale::Linear, ColorRange{-5, 5}, DownsampleRule::MaxAbs, out);
  ASSERT_EQ(out.cols, 2);
  EXPECT_FLOAT_EQ(out.values[0], 0.0f);  // −5: the bottom of the diverging map, not +0.1's near-white
  EXPECT_FLOAT_EQ(out.values[1], 0.8f);  // 3
  EXPECT_STREQ(downsampleRuleName(downsampleRuleFor(DataKind::Signed)), "max |v|");
  // NaN anywhere in a block shows (magenta), a partial last block is reduced over what it has.
  const std::vector<float> n = {0.1f, std::nanf(""), 0.2f};
  downsampleToPositions(n.data(), nullptr, 1, 3, 1, 2, ColorScale::Linear, ColorRange{0, 1}, DownsampleRule::Max, out);
  ASSERT_EQ(out.cols, 2);
  EXPECT_TRUE(std::isnan(out.values[0]));
  EXPECT_FLOAT_EQ(out.values[1], 0.2f);
}

TEST(Downsample, PerRowScaleIsAppliedBeforeRowsAreCombined) {
  // Row 0's weights are tiny but its own max is 0.001; row 1 peaks at 0.5. Per row, both rows'
  // largest weights are the top colour, so the block is 1 (raw max then scaled would give 1 too,
  // but row 0's 0.0005 must read as 0.5 on its own).
  const std::vector<float> w = {0.0005f, 0.001f, 0.5f, 0.25f};
  BlockPositions out;
  downsampleToPositions(w.data(), nullptr, 2, 2, 1, 2, ColorScale::PerRow, ColorRange{0, 1}, DownsampleRule::Max, out);
  ASSERT_EQ(out.rows, 2);
  EXPECT_FLOAT_EQ(out.values[0], 1.0f);
  EXPECT_FLOAT_EQ(out.values[1], 1.0f);
  downsampleToPositions(w.data(), nullptr, 2, 2, 1, 1, ColorScale::PerRow, ColorRange{0, 1}, DownsampleRule::Max, out);
  EXPECT_FLOAT_EQ(out.values[0], 0.5f);
  EXPECT_FLOAT_EQ(out.values[3], 0.5f);
}

TEST(Downsample, AgreesWithAReferenceOnRandomMatricesAndSteps) {
  std::uint64_t state = 12345;
  auto next = [&state] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<float>((state >> 40) & 0xFFFFFF) / static_cast<float>(0x1000000);
  };
  for (int trial = 0; trial < 60; ++trial) {
    const int rows = 1 + static_cast<int>(next() * 40), cols = 1 + static_cast<int>(next() * 40);
    const int ky = 1 + static_cast<int>(next() * 7), kx = 1 + static_cast<int>(next() * 7);
    std::vector<float> v(static_cast<std::size_t>(rows) * cols);
    std::vector<std::uint8_t> blocked(v.size());
    const bool signedData = trial % 2 == 0;
    for (std::size_t i = 0; i < v.size(); ++i) {
      v[i] = signedData ? 4.0f * next() - 2.0f : next() * next() * next();
      blocked[i] = next() < 0.2f;
      if (signedData && blocked[i]) v[i] = -kInf;
    }
    const DownsampleRule rule = signedData ? DownsampleRule::MaxAbs : DownsampleRule::Max;
    const ColorRange range = signedData ? ColorRange{-2, 2} : ColorRange{0, 1};
    for (ColorScale scale : {ColorScale::Linear, ColorScale::Log, ColorScale::PerRow}) {
      if (signedData && scale != ColorScale::Linear) continue;
      BlockPositions out;
      downsampleToPositions(v.data(), blocked.data(), rows, cols, ky, kx, scale, range, rule, out);
      const auto want = referenceBlocks(v, blocked, rows, cols, ky, kx, scale, range, rule);
      ASSERT_EQ(out.values.size(), want.size());
      for (std::size_t i = 0; i < want.size(); ++i) {
        ASSERT_EQ(out.values[i], want[i]) << "trial " << trial << " scale " << colorScaleName(scale) << " entry " << i;
      }
      // A window starting on whole blocks gives the same blocks as the whole matrix there (the
      // per-row scale still divides by the whole row's maximum).
      const int wr = ky * (rows / ky / 2), wc = kx * (cols / kx / 2);
      BlockPositions part;
      downsampleToPositions(v.data(), blocked.data(), rows, cols, ky, kx, scale, range, rule, part,
                            CellWindow{wr, wc, rows - wr, cols - wc});
      for (int i = 0; i < part.rows; ++i) {
        for (int j = 0; j < part.cols; ++j) {
          ASSERT_EQ(part.values[static_cast<std::size_t>(i) * part.cols + j],
                    want[static_cast<std::size_t>(i + wr / ky) * out.cols + j + wc / kx])
              << "trial " << trial << " window entry " << i << "," << j;
        }
      }
    }
  }
}

// max |v| picks the position farther from the middle (0.5) compared exactly: 1e-30 and 2e-30 are
// both "0.5 away" once rounded to float, and the rounded rule kept the larger, nearer one, which
// made a block's colour depend on the order its cells were combined in.
TEST(Downsample, MaxAbsComparesDistancesExactly) {
  EXPECT_EQ(combinePositions(1e-30f, 2e-30f, DownsampleRule::MaxAbs), 1e-30f);
  EXPECT_EQ(combinePositions(2e-30f, 1e-30f, DownsampleRule::MaxAbs), 1e-30f);
  EXPECT_EQ(combinePositions(0.000180041f, 0.000180049f, DownsampleRule::MaxAbs), 0.000180041f);
  EXPECT_EQ(combinePositions(0.25f, 0.75f, DownsampleRule::MaxAbs), 0.75f);  // equally far: the larger
  EXPECT_EQ(combinePositions(0.75f, 0.25f, DownsampleRule::MaxAbs), 0.75f);
  EXPECT_EQ(combinePositions(0.2f, 0.7f, DownsampleRule::MaxAbs), 0.2f);
  EXPECT_EQ(combinePositions(1.0f, 1e-30f, DownsampleRule::MaxAbs), 1.0f);
  EXPECT_EQ(combinePositions(0.9f, 0.6f, DownsampleRule::MaxAbs), 0.9f);
}

// Big blocks (the fast path folds a block's rows cell by cell before its columns) agree bit for
// bit with combining every cell one by one: NaN, −inf that is not blocked, blocked cells, tiny
// values whose distances from the middle tie once rounded, a window, and every scale.
TEST(Downsample, FoldedBlocksAgreeWithTheCellByCellReference) {
  std::uint64_t state = 777;
  auto next = [&state] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<float>((state >> 40) & 0xFFFFFF) / static_cast<float>(0x1000000);
  };
  for (int trial = 0; trial < 24; ++trial) {
    const int rows = 20 + static_cast<int>(next() * 90), cols = 20 + static_cast<int>(next() * 90);
    const int ky = 1 + static_cast<int>(next() * 12), kx = 1 + static_cast<int>(next() * 12);
    std::vector<float> v(static_cast<std::size_t>(rows) * cols);
    std::vector<std::uint8_t> blocked(v.size());
    const bool signedData = trial % 2 == 0;
    for (std::size_t i = 0; i < v.size(); ++i) {
      const float u = next();
      v[i] = signedData ? 4.0f * next() - 2.0f : next() * next() * next();
      if (u < 0.3f) v[i] = (signedData ? -2.0f : 0.0f) + next() * 1e-4f;  // near the bottom: rounded ties
      if (u > 0.995f) v[i] = std::nanf("");
      if (u > 0.99f && u <= 0.995f) v[i] = -kInf;
      blocked[i] = r0blocked(i, cols) || next() < 0.1f;
    }
    const DownsampleRule rule = signedData ? DownsampleRule::MaxAbs : DownsampleRule::Max;
    const ColorRange range = signedData ? ColorRange{-2, 2} : ColorRange{0, 1};
    for (ColorScale scale : {ColorScale::Linear, ColorScale::Log, ColorScale::PerRow}) {
      if (signedData && scale != ColorScale::Linear) continue;
      const auto want = referenceBlocks(v, blocked, rows, cols, ky, kx, scale, range, rule);
      BlockPositions out;
      downsampleToPositions(v.data(), blocked.data(), rows, cols, ky, kx, scale, range, rule, out);
      ASSERT_EQ(out.values.size(), want.size());
      for (std::size_t i = 0; i < want.size(); ++i) {
        const bool same = std::isnan(want[i]) ? std::isnan(out.values[i]) : out.values[i] == want[i];
        ASSERT_TRUE(same) << "trial " << trial << " scale " << colorScaleName(scale) << " entry " << i << ": "
                          << out.values[i] << " vs " << want[i];
      }
      const int wr = ky * (rows / ky / 3), wc = kx * (cols / kx / 3);
      BlockPositions part;
      downsampleToPositions(v.data(), blocked.data(), rows, cols, ky, kx, scale, range, rule, part,
                            CellWindow{wr, wc, rows - 2 * wr, cols - 2 * wc});
      for (int i = 0; i < part.rows; ++i) {
        for (int j = 0; j < part.cols; ++j) {
          const float got = part.values[static_cast<std::size_t>(i) * part.cols + j];
          const int bi = i + wr / ky, bj = j + wc / kx;
          // Blocks cut by the window's far edge cover fewer cells: compare whole blocks only.
          if ((i + 1) * ky > rows - 2 * wr || (j + 1) * kx > cols - 2 * wc) continue;
          const float w = want[static_cast<std::size_t>(bi) * out.cols + bj];
          ASSERT_TRUE(std::isnan(w) ? std::isnan(got) : got == w) << "trial " << trial << " window " << i << "," << j;
        }
      }
    }
  }
}

// A window of over a million cells is folded on two threads: the same entries as the reference.
TEST(Downsample, TwoThreadsGiveTheSameBlocks) {
  const int rows = 1100, cols = 1030;
  std::vector<float> v(static_cast<std::size_t>(rows) * cols);
  std::vector<std::uint8_t> blocked(v.size());
  std::uint64_t state = 99;
  for (std::size_t i = 0; i < v.size(); ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    v[i] = static_cast<float>((state >> 40) & 0xFFFFFF) / static_cast<float>(0x1000000) - 0.5f;
    blocked[i] = r0blocked(i, cols);
  }
  for (const DownsampleRule rule : {DownsampleRule::Max, DownsampleRule::MaxAbs}) {
    for (const int k : {1, 3, 7}) {
      const auto want = referenceBlocks(v, blocked, rows, cols, k, k, ColorScale::Linear, ColorRange{-0.5f, 0.5f}, rule);
      BlockPositions out;
      downsampleToPositions(v.data(), blocked.data(), rows, cols, k, k, ColorScale::Linear, ColorRange{-0.5f, 0.5f},
                            rule, out);
      ASSERT_EQ(out.values, want) << "k " << k;
    }
  }
}

TEST(Downsample, CellsPerTexel) {
  EXPECT_EQ(cellsPerTexel(4096, 585), 8);
  EXPECT_EQ(cellsPerTexel(4096, 4096), 1);
  EXPECT_EQ(cellsPerTexel(300, 64), 5);
  EXPECT_EQ(cellsPerTexel(0, 10), 1);
  EXPECT_EQ(cellsPerTexel(10, 0), 10);
}

}  // namespace
}  // namespace mhascope
