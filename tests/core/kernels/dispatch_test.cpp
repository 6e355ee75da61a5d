// The kernel steps the engine calls (kernels/dispatch.hpp), on every path this machine runs (the
// general path, the AVX2 + FMA and the AVX-512 head kernels; a path the CPU lacks skips with a
// message): each step against plain double loops, the fused scores against the same products scaled and
// masked afterwards (the engine's route for hand-set scores) bit for bit, and the row kernel's two
// spellings of a row's blocked keys (bytes, or a run to the row's end) giving the same bits.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <regex>
#include <string>
#include <vector>

#include "kernels/dispatch.hpp"
#include "kernels/head_kernels.hpp"
#include "kernel_variants.hpp"

namespace mhascope {
namespace {

bool sameBits(const float* a, const float* b, std::size_t n) { return std::memcmp(a, b, n * sizeof(float)) == 0; }

std::vector<float> filled(std::size_t n, int mod, float step, float offset) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>(static_cast<int>(i * 7 % mod)) * step - offset;
  return v;
}

using KernelDispatch = KernelVariantTest;
INSTANTIATE_TEST_SUITE_P(Path, KernelDispatch, everyKernelVariant(), kernelVariantName);

TEST_P(KernelDispatch, ProjectRowsStartsEachSumFromTheBias) {
  const std::int64_t n = 37, d = 80;
  const auto x = filled(n * d, 13, 0.05f, 0.3f), w = filled(d * d, 17, 0.02f, 0.15f), b = filled(d, 5, 0.1f, 0.2f);
  std::vector<float> out(static_cast<std::size_t>(n * d));
  kernels::projectRows(x.data(), n, d, w.data(), b.data(), nullptr, out.data());
  for (std::int64_t r = 0; r < n; r += 5) {
    for (std::int64_t c = 0; c < d; ++c) {
      double s = b[static_cast<std::size_t>(c)];
      for (std::int64_t j = 0; j < d; ++j) s += double(x[static_cast<std::size_t>(r * d + j)]) * w[static_cast<std::size_t>(j * d + c)];
      ASSERT_NEAR(out[static_cast<std::size_t>(r * d + c)], s, 1e-5 + 1e-5 * std::abs(s)) << r << " " << c;
    }
  }
}

// Rows with nothing blocked, a causal-like run to the end, scattered bytes, and every key blocked.
struct Rows {
  std::int64_t nq = 6, Tk = 70, dk = 24;
  std::vector<std::uint8_t> bytes;
  std::vector<BlockedKeys> keys;
  Rows() : bytes(static_cast<std::size_t>(nq * Tk), 0), keys(static_cast<std::size_t>(nq)) {
    keys[1] = BlockedKeys{nullptr, 40};
    for (std::int64_t j = 0; j < Tk; j += 3) bytes[static_cast<std::size_t>(2 * Tk + j)] = 1;
    keys[2] = BlockedKeys{bytes.data() + 2 * Tk};
    keys[3] = BlockedKeys{nullptr, 0};
    keys[4] = BlockedKeys{bytes.data() + 2 * Tk, 65};
  }
};

TEST_P(KernelDispatch, FusedScoresEqualTheProductsScaledAndMaskedAfterwards) {
  const Rows r;
  const auto q = filled(static_cast<std::size_t>(r.nq * r.dk), 11, 0.1f, 0.5f);
  const auto k = filled(static_cast<std::size_t>(r.Tk * r.dk), 19, 0.07f, 0.6f);
  const std::size_t cells = static_cast<std::size_t>(r.nq * r.Tk);
  FloatBuffer packed;
  kernels::packKeys(k.data(), 1, r.Tk, r.dk, 1, packed);
  const float* pk = kernels::packedKeysOf(packed, 0, r.Tk, r.dk);
  std::vector<float> scores(cells), weights(cells), rowMax(static_cast<std::size_t>(r.nq));
  kernels::scaledMaskedScores(q.data(), k.data(), pk, r.nq, r.Tk, r.dk, 0.25f, r.keys.data(), scores.data(),
                              weights.data(), r.Tk, rowMax.data());
  std::vector<float> s2(cells), w2(cells), m2(static_cast<std::size_t>(r.nq));
  kernels::scoreProducts(q.data(), k.data(), pk, r.nq, r.Tk, r.dk, r.keys.data(), s2.data(), r.Tk);
  kernels::scaleMaskRows(s2.data(), 0.25f, r.keys.data(), r.nq, r.Tk, r.Tk, w2.data(), m2.data());
  EXPECT_TRUE(sameBits(scores.data(), s2.data(), cells));
  EXPECT_TRUE(sameBits(weights.data(), w2.data(), cells));
  EXPECT_TRUE(sameBits(rowMax.data(), m2.data(), rowMax.size()));
  // Not recorded: the same weights.
  std::vector<float> w3(cells), m3(static_cast<std::size_t>(r.nq));
  kernels::scaledMaskedScores(q.data(), k.data(), pk, r.nq, r.Tk, r.dk, 0.25f, r.keys.data(), nullptr, w3.data(), r.Tk,
                              m3.data());
  EXPECT_TRUE(sameBits(weights.data(), w3.data(), cells));
  // And the numbers themselves.
  for (std::int64_t i = 0; i < r.nq; ++i) {
    for (std::int64_t j = 0; j < r.Tk; ++j) {
      double s = 0;
      for (std::int64_t c = 0; c < r.dk; ++c) s += double(q[static_cast<std::size_t>(i * r.dk + c)]) * k[static_cast<std::size_t>(j * r.dk + c)];
      const float got = weights[static_cast<std::size_t>(i * r.Tk + j)];
      if (r.keys[static_cast<std::size_t>(i)].at(j)) EXPECT_EQ(got, -kInf) << i << " " << j;
      else ASSERT_NEAR(got, 0.25 * s, 1e-5 + 1e-5 * std::abs(s)) << i << " " << j;
    }
  }
  EXPECT_EQ(rowMax[3], -kInf);  // every key blocked
}

TEST_P(KernelDispatch, WeightedSumMatchesDoubleLoops) {
  const std::int64_t nq = 9, Tk = 53, dk = 20, ldo = 50;
  const auto w = filled(static_cast<std::size_t>(nq * Tk), 23, 0.01f, 0.0f), v = filled(static_cast<std::size_t>(Tk * dk), 13, 0.1f, 0.6f);
  std::vector<float> out(static_cast<std::size_t>(nq * ldo), 7.0f);
  kernels::weightedSum(w.data(), Tk, v.data(), nq, Tk, dk, out.data(), ldo);
  for (std::int64_t i = 0; i < nq; ++i) {
    for (std::int64_t c = 0; c < ldo; ++c) {
      if (c >= dk) {
        EXPECT_EQ(out[static_cast<std::size_t>(i * ldo + c)], 7.0f) << "wrote past d_k";
        continue;
      }
      double o = 0;
      for (std::int64_t j = 0; j < Tk; ++j) o += double(w[static_cast<std::size_t>(i * Tk + j)]) * v[static_cast<std::size_t>(j * dk + c)];
      ASSERT_NEAR(out[static_cast<std::size_t>(i * ldo + c)], o, 1e-5 + 1e-5 * std::abs(o));
    }
  }
}

TEST(RowKernels, ARunOfBlockedKeysGivesTheBitsOfTheSameKeysAsBytes) {
  const std::int64_t n = 45;
  const auto s = filled(static_cast<std::size_t>(n), 9, 1.5f, 4.0f);
  for (std::int64_t from : {0L, 1L, 16L, 44L, 45L}) {
    std::vector<std::uint8_t> bytes(static_cast<std::size_t>(n), 0);
    for (std::int64_t j = from; j < n; ++j) bytes[static_cast<std::size_t>(j)] = 1;
    std::vector<float> a(static_cast<std::size_t>(n)), b(a.size());
    const float ma = scaleMaskRow(s.data(), 0.3f, bytes.data(), a.data(), a.data(), n);
    const float mb = scaleMaskRow(s.data(), 0.3f, from < n ? BlockedKeys{nullptr, from} : BlockedKeys{}, b.data(), b.data(), n);
    EXPECT_TRUE(sameBits(a.data(), b.data(), a.size())) << from;
    EXPECT_TRUE(sameBits(&ma, &mb, 1)) << from;
  }
}

// The path's name says which kernels run, in one of three forms (what `mhascope bench` prints on
// its `kernels:` line), and follows the switch.
TEST_P(KernelDispatch, ThePathSaysWhichKernelsRun) {
  const kernels::KernelPath path = kernels::kernelPath();
  const std::string name = kernels::kernelPathName(path);
  EXPECT_TRUE(std::regex_match(name, std::regex(R"(general \(GEMM \+ row kernels\)|AVX2 \+ FMA head kernels|AVX-512 head kernels)")))
      << name;
  EXPECT_EQ(kernels::headKernels(path), headKernelsEnabled());
  switch (GetParam()) {
    case HeadKernelIsa::Avx512:
      EXPECT_EQ(path, kernels::KernelPath::Avx512HeadKernels);
      EXPECT_EQ(name, "AVX-512 head kernels");
      break;
    case HeadKernelIsa::Avx2Fma:
      EXPECT_EQ(path, kernels::KernelPath::Avx2HeadKernels);
      EXPECT_EQ(name, "AVX2 + FMA head kernels");
      break;
    default:
      EXPECT_EQ(path, kernels::KernelPath::General);
      EXPECT_EQ(name, "general (GEMM + row kernels)");
      break;
  }
}

// Left alone, the dispatch takes the widest head kernels this CPU runs, else the general path.
TEST(KernelDispatchDefault, TheWidestKernelsThisCpuRuns) {
  const HeadKernelIsa before = headKernelIsa();
  ASSERT_EQ(setHeadKernels(true), headKernelsAvailable());
  const kernels::KernelPath expect = bestHeadKernelIsa() == HeadKernelIsa::Avx512    ? kernels::KernelPath::Avx512HeadKernels
                                     : bestHeadKernelIsa() == HeadKernelIsa::Avx2Fma ? kernels::KernelPath::Avx2HeadKernels
                                                                                     : kernels::KernelPath::General;
  EXPECT_EQ(kernels::kernelPath(), expect) << kernels::kernelPathName(kernels::kernelPath());
  ASSERT_TRUE(setHeadKernels(false));
  EXPECT_EQ(kernels::kernelPath(), kernels::KernelPath::General);
  setHeadKernelIsa(before);
}

}  // namespace
}  // namespace mhascope
