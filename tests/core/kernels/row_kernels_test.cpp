// The attention's row kernels (kernels/row_kernels.hpp) against plain double-precision loops:
// scale + mask + softmax at odd row lengths (vector body and scalar tail), with scattered blocked
// keys, a fully blocked row, -inf scores and rows where every visible score overflows.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "kernels/row_kernels.hpp"
#include "kernel_variants.hpp"

namespace mhascope {
namespace {

struct Reference {
  std::vector<double> scaled, masked, weights;
};

// softmax(mask(s * factor)) in double; blocked keys -inf; a fully blocked row gives zeros.
Reference reference(const std::vector<float>& s, float factor, const std::vector<std::uint8_t>& blocked) {
  const std::size_t n = s.size();
  Reference r{std::vector<double>(n), std::vector<double>(n), std::vector<double>(n, 0.0)};
  double m = -kInf;
  for (std::size_t k = 0; k < n; ++k) {
    r.scaled[k] = static_cast<double>(s[k] * factor);  // the product itself is one float rounding
    r.masked[k] = !blocked.empty() && blocked[k] ? -kInf : r.scaled[k];
    m = std::max(m, r.masked[k]);
  }
  if (m == -kInf) return r;
  double sum = 0;
  for (std::size_t k = 0; k < n; ++k) sum += r.masked[k] == -kInf ? 0.0 : std::exp(r.masked[k] - m);
  for (std::size_t k = 0; k < n; ++k) r.weights[k] = r.masked[k] == -kInf ? 0.0 : std::exp(r.masked[k] - m) / sum;
  return r;
}

// Runs the kernels the way the engine does and compares every output with the reference.
void checkRow(const std::vector<float>& s, float factor, const std::vector<std::uint8_t>& blocked, const char* what) {
  const auto n = static_cast<std::int64_t>(s.size());
  const std::uint8_t* blk = blocked.empty() ? nullptr : blocked.data();
  bool allBlocked = blk != nullptr;
  for (std::uint8_t b : blocked) allBlocked = allBlocked && b;
  std::vector<float> scaled(s.size(), 7.0f), masked(s.size(), 7.0f), weights(s.size(), 7.0f);
  const float m = scaleMaskRow(s.data(), factor, blk, scaled.data(), blk ? masked.data() : nullptr, n);
  const std::vector<float>& maskedRow = blk ? masked : scaled;
  const bool some = softmaxRow(maskedRow.data(), m, BlockedKeys{blk}, allBlocked, weights.data(), n);
  EXPECT_EQ(some, !allBlocked) << what;
  // A row whose blocked keys are one run to its end may be given as that run (what the engine
  // passes for the causal mask): the same bits as from the bytes.
  std::int64_t first = n;
  while (first > 0 && blk && blk[first - 1]) --first;
  bool run = blk != nullptr;
  for (std::int64_t k = 0; k < first && run; ++k) run = blk[k] == 0;
  if (run) {
    std::vector<float> fromRun(s.size(), 7.0f);
    softmaxRow(maskedRow.data(), m, BlockedKeys{nullptr, first}, allBlocked, fromRun.data(), n);
    EXPECT_EQ(std::memcmp(fromRun.data(), weights.data(), weights.size() * sizeof(float)), 0) << what << " as a run";
  }
  const Reference r = reference(s, factor, blocked);
  double rowMax = -kInf;
  for (double x : r.masked) rowMax = std::max(rowMax, x);
  EXPECT_EQ(static_cast<double>(m), rowMax) << what << " n=" << n;
  for (std::size_t k = 0; k < s.size(); ++k) {
    EXPECT_EQ(static_cast<double>(scaled[k]), r.scaled[k]) << what << " n=" << n << " k=" << k;
    EXPECT_EQ(static_cast<double>(maskedRow[k]), r.masked[k]) << what << " n=" << n << " k=" << k;
    if (!blocked.empty() && blocked[k]) {
      EXPECT_EQ(weights[k], 0.0f) << what << " blocked key must weigh exactly 0, k=" << k;
    } else {
      EXPECT_NEAR(weights[k], r.weights[k], 1e-6 + 2e-6 * r.weights[k]) << what << " n=" << n << " k=" << k;
    }
  }
}

TEST(RowKernels, SoftmaxOfScaledMaskedScoresMatchesDoubleAtOddLengths) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 4.0f);
  for (int n : {1, 2, 3, 7, 15, 16, 17, 31, 33, 100, 257, 1025}) {
    std::vector<float> s(static_cast<std::size_t>(n));
    for (float& x : s) x = normal(rng);
    checkRow(s, 0.125f, {}, "no mask");
    std::vector<std::uint8_t> scattered(s.size());
    for (std::size_t k = 0; k < s.size(); ++k) scattered[k] = (k * 7 + 3) % 5 == 0 && k + 1 < s.size();
    checkRow(s, 0.125f, scattered, "scattered blocked keys");
    std::vector<std::uint8_t> causal(s.size(), 0);
    for (std::size_t k = s.size() / 2 + 1; k < s.size(); ++k) causal[k] = 1;
    checkRow(s, 1.0f, causal, "causal row");
  }
}

TEST(RowKernels, FullyBlockedRowsWeighZeroAndOverflowGivesNaN) {
  for (int n : {1, 5, 16, 19, 64}) {
    std::vector<float> s(static_cast<std::size_t>(n), 1.5f);
    checkRow(s, 0.5f, std::vector<std::uint8_t>(s.size(), 1), "fully blocked");
    // Visible -inf scores (no mask) weigh 0; the others share the weight.
    std::vector<float> withInf = s;
    for (std::size_t k = 0; k < withInf.size(); k += 3) withInf[k] = -kInf;
    if (n > 1) checkRow(withInf, 0.5f, {}, "-inf scores");
    // Every visible score -inf (overflowed): NaN weights, like PyTorch; not a masked row of zeros.
    std::vector<float> w(s.size());
    std::vector<float> minus(s.size(), -kInf), scaled(s.size());
    const float m = scaleMaskRow(minus.data(), 0.5f, nullptr, scaled.data(), nullptr, n);
    EXPECT_EQ(m, -kInf);
    EXPECT_TRUE(softmaxRow(scaled.data(), m, BlockedKeys{}, false, w.data(), n));
    for (float x : w) EXPECT_TRUE(std::isnan(x)) << "n=" << n;
  }
}

TEST(RowKernels, SoftmaxOfHugeScoresStaysFinite) {
  // exp of a logit above ~88 overflows float: the row maximum is subtracted first.
  std::vector<float> s = {1000.0f, 999.0f, -1000.0f, 998.0f, 1000.0f, 0.0f, 3.0f, 997.0f, 1000.0f, -5.0f, 990.0f,
                          1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 1000.0f, 999.5f};
  checkRow(s, 1.0f, {}, "huge scores");
}

}  // namespace
}  // namespace mhascope
