// The attention's per-block products (kernels/head_kernels.hpp), every vector variant this CPU runs
// (AVX-512, AVX2 + FMA; a variant the CPU lacks skips with a message) and the plain loops alike,
// against double-precision loops: odd row, key and d_k counts (vector tails, the 64-key tiles, the
// 1024-row chunks of productBlock), scattered and fully blocked rows, overflowing scores; and the
// forward with the kernels against the general path is in tests/core/attention/engine_paths_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "kernels/head_kernels.hpp"
#include "kernel_variants.hpp"
#include "attention/tensor.hpp"  // FloatBuffer: 64-byte aligned, as the packed keys must be

namespace mhascope {
namespace {

using ScoresFn = void (*)(const float*, const float*, std::int64_t, std::int64_t, std::int64_t, float,
                          const BlockedKeys*, float*, float*, std::int64_t, float*);
using SumFn = void (*)(const float*, std::int64_t, const float*, std::int64_t, std::int64_t, std::int64_t, float*,
                       std::int64_t);

void scoresBlockOwnKeys(const float* q, const float* k, std::int64_t nq, std::int64_t Tk, std::int64_t dk, float factor,
                        const BlockedKeys* blocked, float* scores, float* weights, std::int64_t ld, float* rowMax) {
  scoresBlock(q, k, nq, Tk, dk, factor, blocked, scores, weights, ld, rowMax);
}
// The keys packed first by packKeyChunks (what the forward keeps in its Engine's scratch), which the
// kernel then reads instead of transposing them itself; the packing in two calls, as the engine's
// threads share it out.
void scoresBlockPackedKeys(const float* q, const float* k, std::int64_t nq, std::int64_t Tk, std::int64_t dk,
                           float factor, const BlockedKeys* blocked, float* scores, float* weights, std::int64_t ld,
                           float* rowMax) {
  FloatBuffer packed(static_cast<std::size_t>(packedKeysFloats(Tk, dk)));
  std::fill(packed.begin(), packed.end(), -1.0f);
  const std::int64_t chunks = (Tk + 63) / 64;
  packKeyChunks(k, Tk, dk, 0, chunks / 2, packed.data());
  packKeyChunks(k, Tk, dk, chunks / 2, chunks, packed.data());
  scoresBlock(q, k, nq, Tk, dk, factor, blocked, scores, weights, ld, rowMax, packed.data());
}

struct Impl {
  const char* name;
  ScoresFn scores;
  SumFn sum;
};
const Impl kImpls[] = {{"dispatched", scoresBlockOwnKeys, weightedSumBlock},
                       {"packed keys", scoresBlockPackedKeys, weightedSumBlock},
                       {"portable", scoresBlockPortable, weightedSumBlockPortable}};

using HeadKernels = KernelVariantTest;
INSTANTIATE_TEST_SUITE_P(Isa, HeadKernels, everyKernelVariant(), kernelVariantName);

std::vector<float> randomValues(std::size_t n, std::mt19937& rng, float scale) {
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// Blocked keys per row: 0 none (null row), 1 scattered, 2 causal-like (keys after the row), 3 all.
std::vector<std::vector<std::uint8_t>> blockedRows(std::int64_t nq, std::int64_t Tk, std::mt19937& rng) {
  std::vector<std::vector<std::uint8_t>> rows(static_cast<std::size_t>(nq));
  for (std::int64_t i = 0; i < nq; ++i) {
    const int kind = static_cast<int>(i % 4);
    if (kind == 0) continue;
    auto& r = rows[static_cast<std::size_t>(i)];
    r.assign(static_cast<std::size_t>(Tk), 0);
    for (std::int64_t j = 0; j < Tk; ++j) {
      r[static_cast<std::size_t>(j)] = kind == 3 || (kind == 2 && j > i) || (kind == 1 && rng() % 3 == 0);
    }
  }
  return rows;
}

// Runs one implementation on one case and checks every output against double loops.
void checkScores(const Impl& impl, std::int64_t nq, std::int64_t Tk, std::int64_t dk, float scale, bool recordScores,
                 std::mt19937& rng) {
  const std::string what = std::string(impl.name) + " nq=" + std::to_string(nq) + " Tk=" + std::to_string(Tk) +
                           " dk=" + std::to_string(dk) + " scale=" + std::to_string(scale);
  const auto q = randomValues(static_cast<std::size_t>(nq * dk), rng, scale);
  const auto k = randomValues(static_cast<std::size_t>(Tk * dk), rng, scale);
  const auto rows = blockedRows(nq, Tk, rng);
  // Every fifth row gives its blocked keys as a run to the row's end (what the engine passes for
  // the causal mask and padding of the last keys), from the row's own index, which may be past
  // T_k (nothing blocked), inside a 64-key tile, or 0 (all); the others as bytes.
  std::vector<BlockedKeys> blocked;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (i % 5 == 4) blocked.push_back(BlockedKeys{nullptr, static_cast<std::int64_t>(i * 7 % 131)});
    else blocked.push_back(BlockedKeys{rows[i].empty() ? nullptr : rows[i].data()});
  }
  const std::int64_t ld = Tk + 3;  // a row stride wider than the row: the gap must stay untouched
  const float factor = 1.0f / std::sqrt(static_cast<float>(dk));
  std::vector<float> scores(static_cast<std::size_t>(nq * ld), 7.0f), weights(scores.size(), 7.0f);
  std::vector<float> rowMax(static_cast<std::size_t>(nq), 7.0f);
  impl.scores(q.data(), k.data(), nq, Tk, dk, factor, blocked.data(), recordScores ? scores.data() : nullptr,
              weights.data(), ld, rowMax.data());
  if (recordScores) {  // scores only (what hand-set scores start from): the same bits, nothing else
    std::vector<float> only(scores.size(), 7.0f), untouched(rowMax.size(), 5.0f);
    impl.scores(q.data(), k.data(), nq, Tk, dk, factor, blocked.data(), only.data(), nullptr, ld, untouched.data());
    ASSERT_EQ(std::memcmp(only.data(), scores.data(), only.size() * sizeof(float)), 0) << what;
    for (float x : untouched) ASSERT_EQ(x, 5.0f) << what;
  }
  for (std::int64_t i = 0; i < nq; ++i) {
    float m = -kInf;
    bool anyNaN = false;  // a NaN score leaves the maximum to the order of comparisons
    for (std::int64_t j = 0; j < Tk; ++j) {
      double s = 0;
      for (std::int64_t c = 0; c < dk; ++c) s += double(q[static_cast<std::size_t>(i * dk + c)]) * k[static_cast<std::size_t>(j * dk + c)];
      const float got = scores[static_cast<std::size_t>(i * ld + j)], w = weights[static_cast<std::size_t>(i * ld + j)];
      const bool isBlocked = blocked[static_cast<std::size_t>(i)].at(j);
      if (recordScores) {
        double bound = 0;  // rounding of a dk-term float sum: dk ulps of the largest partial terms
        for (std::int64_t c = 0; c < dk; ++c) bound += std::abs(double(q[static_cast<std::size_t>(i * dk + c)]) * k[static_cast<std::size_t>(j * dk + c)]);
        if (bound > 3e38) {  // a partial sum may overflow (+-inf, or NaN from inf - inf) in float
          anyNaN = anyNaN || std::isnan(got);
          if (std::isfinite(got)) ASSERT_NEAR(got, s, 1e-6 * bound) << what << " i=" << i << " j=" << j;
        } else {
          ASSERT_NEAR(got, s, 1e-6 * bound + 1e-30) << what << " i=" << i << " j=" << j;
        }
        // The weights' row is the recorded score times the factor, bit for bit (what the trace
        // computes when the scaled scores are read), or -inf where blocked.
        const float expect = isBlocked ? -kInf : got * factor;
        ASSERT_EQ(std::memcmp(&w, &expect, sizeof w), 0) << what << " i=" << i << " j=" << j << " w=" << w;
      } else if (isBlocked) {
        ASSERT_EQ(w, -kInf) << what;
      }
      m = std::max(m, w);
    }
    if (!anyNaN) EXPECT_EQ(rowMax[static_cast<std::size_t>(i)], m) << what << " i=" << i;
    for (std::int64_t j = Tk; j < ld; ++j) {
      EXPECT_EQ(weights[static_cast<std::size_t>(i * ld + j)], 7.0f) << what << " wrote past the row";
      EXPECT_EQ(scores[static_cast<std::size_t>(i * ld + j)], 7.0f) << what << " wrote past the row";
    }
  }
}

TEST_P(HeadKernels, ScoresScaleMaskAndRowMaxMatchDoubleLoops) {
  std::mt19937 rng(7);
  for (const Impl& impl : kImpls) {
    for (std::int64_t nq : {1, 4, 5, 6, 11, 13}) {  // 6-row tiles, then 5 or 1 rows left
      for (std::int64_t Tk : {1, 15, 16, 17, 40, 63, 64, 65, 130}) {  // whole 64-key chunks (transposed by blocks) and parts
        for (std::int64_t dk : {1, 3, 16, 64, 80, 128}) checkScores(impl, nq, Tk, dk, 1.0f, true, rng);
      }
    }
    checkScores(impl, 7, 100, 64, 1.0f, false, rng);  // scores not recorded (the trainer's forward)
    checkScores(impl, 131, 70, 64, 1.0f, true, rng);   // more rows than one pass keeps maxima for
  }
}

// The recorded scores beside the weights go out by streaming stores: whole 64-byte lines where the
// row is 64-byte aligned, 16-byte pieces where it is 16-byte aligned, ordinary stores otherwise.
// Every start offset within a line gives the bits of the scores-only call (ordinary stores) and
// leaves the floats before and after the table alone.
TEST_P(HeadKernels, RecordedScoresAreTheSameAtEveryAlignment) {
  std::mt19937 rng(11);
  const std::int64_t nq = 13, dk = 64;
  for (std::int64_t Tk : {128, 130, 192}) {
    const auto q = randomValues(static_cast<std::size_t>(nq * dk), rng, 1.0f);
    const auto k = randomValues(static_cast<std::size_t>(Tk * dk), rng, 1.0f);
    std::vector<BlockedKeys> blocked(static_cast<std::size_t>(nq));
    std::vector<float> expect(static_cast<std::size_t>(nq * Tk)), unused(static_cast<std::size_t>(nq));
    scoresBlock(q.data(), k.data(), nq, Tk, dk, 0.125f, blocked.data(), expect.data(), nullptr, Tk, unused.data());
    const std::size_t n = expect.size();
    std::vector<float> buffer(n + 64, 7.0f), weights(n), rowMax(static_cast<std::size_t>(nq));
    float* aligned = buffer.data();
    while ((reinterpret_cast<std::uintptr_t>(aligned) & 63) != 0) ++aligned;  // floats are 4-aligned
    for (int offset = 0; offset < 16; ++offset) {
      std::fill(buffer.begin(), buffer.end(), 7.0f);
      float* scores = aligned + offset;
      scoresBlock(q.data(), k.data(), nq, Tk, dk, 0.125f, blocked.data(), scores, weights.data(), Tk, rowMax.data());
      ASSERT_EQ(std::memcmp(scores, expect.data(), n * sizeof(float)), 0) << "Tk=" << Tk << " offset=" << offset;
      for (float* p = buffer.data(); p < scores; ++p) ASSERT_EQ(*p, 7.0f) << "wrote before the table";
      for (float* p = scores + n; p < buffer.data() + buffer.size(); ++p) ASSERT_EQ(*p, 7.0f) << "wrote past the table";
    }
  }
}

TEST_P(HeadKernels, ScoresThatOverflowStayNonFinite) {
  std::mt19937 rng(11);
  for (const Impl& impl : kImpls) {
    for (std::int64_t Tk : {17, 64, 70}) checkScores(impl, 7, Tk, 64, 1e19f, true, rng);  // products past 3.4e38
  }
}

TEST_P(HeadKernels, AFullyBlockedRowHasMaximumMinusInfinity) {
  for (const Impl& impl : kImpls) {
    const std::int64_t nq = 3, Tk = 70, dk = 64;
    std::vector<float> q(nq * dk, 1.0f), k(Tk * dk, 0.5f), s(nq * Tk), w(nq * Tk), m(nq);
    std::vector<std::uint8_t> all(Tk, 1);
    const BlockedKeys blocked[nq] = {{}, {all.data()}, {nullptr, 0}};  // bytes, or a run from key 0
    impl.scores(q.data(), k.data(), nq, Tk, dk, 0.125f, blocked, s.data(), w.data(), Tk, m.data());
    EXPECT_EQ(m[1], -kInf) << impl.name;
    EXPECT_EQ(m[2], -kInf) << impl.name;
    EXPECT_EQ(m[0], 32.0f * 0.125f) << impl.name;
    for (std::int64_t j = 0; j < Tk; ++j) EXPECT_EQ(w[static_cast<std::size_t>(Tk + j)], -kInf) << impl.name;
  }
}

TEST_P(HeadKernels, WeightedSumMatchesDoubleLoops) {
  // The two sums (the dispatched one and the plain loops) on each case's inputs, with the
  // double-loop reference computed once for both (the test's long part under the sanitizers).
  const std::pair<const char*, SumFn> sums[] = {{"dispatched", weightedSumBlock}, {"portable", weightedSumBlockPortable}};
  std::mt19937 rng(5);
  for (std::int64_t nq : {1, 5, 6, 7, 13}) {
    for (std::int64_t Tk : {1, 17, 64, 513, 1100}) {  // 1100: more than one chunk of keys
      for (std::int64_t dk : {1, 5, 16, 17, 64, 65, 100}) {
        const std::int64_t ldw = Tk + 1, ldo = dk + 2;
        const auto w = randomValues(static_cast<std::size_t>(nq * ldw), rng, 1.0f);
        const auto v = randomValues(static_cast<std::size_t>(Tk * dk), rng, 1.0f);
        std::vector<double> want(static_cast<std::size_t>(nq * dk)), tolerance(want.size());
        for (std::int64_t i = 0; i < nq; ++i) {
          for (std::int64_t c = 0; c < dk; ++c) {
            double o = 0, bound = 0;
            for (std::int64_t j = 0; j < Tk; ++j) {
              const double t = double(w[static_cast<std::size_t>(i * ldw + j)]) * v[static_cast<std::size_t>(j * dk + c)];
              o += t;
              bound += std::abs(t);
            }
            want[static_cast<std::size_t>(i * dk + c)] = o;
            tolerance[static_cast<std::size_t>(i * dk + c)] = 2e-6 * bound * std::sqrt(double(Tk)) + 1e-30;
          }
        }
        for (const auto& [name, sum] : sums) {
          std::vector<float> out(static_cast<std::size_t>(nq * ldo), 7.0f);
          sum(w.data(), ldw, v.data(), nq, Tk, dk, out.data(), ldo);
          for (std::int64_t i = 0; i < nq; ++i) {
            for (std::int64_t c = 0; c < dk; ++c) {
              const std::size_t ref = static_cast<std::size_t>(i * dk + c);
              ASSERT_NEAR(out[static_cast<std::size_t>(i * ldo + c)], want[ref], tolerance[ref])
                  << name << " nq=" << nq << " Tk=" << Tk << " dk=" << dk << " i=" << i << " c=" << c;
            }
            for (std::int64_t c = dk; c < ldo; ++c) {
              EXPECT_EQ(out[static_cast<std::size_t>(i * ldo + c)], 7.0f) << name << " wrote past the row";
            }
          }
        }
      }
    }
  }
}

// The product behind A V and the projections, with row strides wider than the rows (a column
// block of a wider matrix, as the projections' W is) and each sum started from a row (the bias).
// Row counts past whole 6-row tiles: 7 and 8 left go as 4 + 3 and 4 + 4.
TEST_P(HeadKernels, ProductBlockMatchesDoubleLoopsWithStridesAndAStartRow) {
  using ProductFn = void (*)(const float*, std::int64_t, const float*, std::int64_t, std::int64_t, std::int64_t,
                             std::int64_t, float*, std::int64_t, const float*);
  // "prepacked": b packed by packStrips first (the engine's kept copy of the weights), which the
  // kernel then reads instead of packing its strips itself.
  const ProductFn dispatched = [](const float* a, std::int64_t lda, const float* b, std::int64_t ldb, std::int64_t m,
                                  std::int64_t k, std::int64_t n, float* c, std::int64_t ldc, const float* start) {
    productBlock(a, lda, b, ldb, m, k, n, c, ldc, start);
  };
  const ProductFn prepacked = [](const float* a, std::int64_t lda, const float* b, std::int64_t ldb, std::int64_t m,
                                 std::int64_t k, std::int64_t n, float* c, std::int64_t ldc, const float* start) {
    std::vector<float> packed(static_cast<std::size_t>(packedStripsFloats(k, n)), -1.0f);
    packStrips(b, ldb, k, n, 0, (n + 63) / 64, packed.data());
    productBlock(a, lda, b, ldb, m, k, n, c, ldc, start, packed.data());
  };
  const std::pair<const char*, ProductFn> impls[] = {
      {"dispatched", dispatched}, {"prepacked", prepacked}, {"portable", productBlockPortable}};
  // Each case's inputs and double-loop reference once, for the three (the reference is the test's
  // long part: test code is unoptimised under the sanitizers).
  std::mt19937 rng(11);
  for (bool withStart : {false, true}) {
    for (std::int64_t m : {1, 6, 7, 8, 13, 14}) {
      for (std::int64_t k : {0, 1, 17, 513, 1100}) {
        for (std::int64_t n : {1, 12, 24, 40, 64, 70, 130}) {  // 16-column register tiles of AVX2 in a strip, and parts
          const std::int64_t lda = k + 3, ldb = n + 5, ldc = n + 2;
          const auto a = randomValues(static_cast<std::size_t>(m * lda), rng, 1.0f);
          const auto b = randomValues(static_cast<std::size_t>(std::max<std::int64_t>(k, 1) * ldb), rng, 1.0f);
          const auto start = randomValues(static_cast<std::size_t>(n), rng, 1.0f);
          const auto before = randomValues(static_cast<std::size_t>(m * ldc), rng, 1.0f);
          std::vector<double> want(static_cast<std::size_t>(m * n)), tolerance(want.size());
          for (std::int64_t i = 0; i < m; ++i) {
            for (std::int64_t col = 0; col < n; ++col) {
              double o = withStart ? start[static_cast<std::size_t>(col)] : 0.0, bound = std::abs(o);
              for (std::int64_t j = 0; j < k; ++j) {
                const double t = double(a[static_cast<std::size_t>(i * lda + j)]) * b[static_cast<std::size_t>(j * ldb + col)];
                o += t;
                bound += std::abs(t);
              }
              want[static_cast<std::size_t>(i * n + col)] = o;
              tolerance[static_cast<std::size_t>(i * n + col)] = 2e-6 * bound * std::sqrt(double(k + 1)) + 1e-30;
            }
          }
          for (const auto& [name, product] : impls) {
            auto c = before;
            product(a.data(), lda, b.data(), ldb, m, k, n, c.data(), ldc, withStart ? start.data() : nullptr);
            for (std::int64_t i = 0; i < m; ++i) {
              for (std::int64_t col = 0; col < n; ++col) {
                const std::size_t at = static_cast<std::size_t>(i * ldc + col), ref = static_cast<std::size_t>(i * n + col);
                ASSERT_NEAR(c[at], want[ref], tolerance[ref])
                    << name << " start=" << withStart << " m=" << m << " k=" << k << " n=" << n << " i=" << i;
              }
              for (std::int64_t col = n; col < ldc; ++col) {
                const std::size_t at = static_cast<std::size_t>(i * ldc + col);
                ASSERT_EQ(c[at], before[at]) << name << " wrote past the row";
              }
            }
          }
        }
      }
    }
  }
}

// Given packed strips, the vector kernel reads them, not b: strips of another matrix give that
// matrix's product, bit for bit, and packStrips leaves zeros past the last column of a strip.
TEST_P(HeadKernels, ProductBlockReadsThePackedStripsWhenGiven) {
  if (!vector()) GTEST_SKIP() << "the plain loops read b itself";
  std::mt19937 rng(5);
  const std::int64_t m = 13, k = 1100, n = 150, ld = n + 9;  // k over one chunk, n over two strips and a part
  const auto a = randomValues(static_cast<std::size_t>(m * k), rng, 1.0f);
  const auto b = randomValues(static_cast<std::size_t>(k * ld), rng, 1.0f);
  const auto other = randomValues(static_cast<std::size_t>(k * ld), rng, 1.0f);
  std::vector<float> packed(static_cast<std::size_t>(packedStripsFloats(k, n)), -1.0f);
  ASSERT_EQ(packed.size(), static_cast<std::size_t>(3 * k * 64));
  packStrips(other.data(), ld, k, n, 0, 3, packed.data());
  for (std::int64_t j = 0; j < k; ++j) {
    for (std::int64_t col = n; col < 192; ++col) {
      ASSERT_EQ(packed[static_cast<std::size_t>((2 * k + j) * 64 + col - 128)], 0.0f) << "j " << j << " col " << col;
    }
  }
  std::vector<float> viaPacked(static_cast<std::size_t>(m * n)), direct(static_cast<std::size_t>(m * n));
  productBlock(a.data(), k, b.data(), ld, m, k, n, viaPacked.data(), n, nullptr, packed.data());
  productBlock(a.data(), k, other.data(), ld, m, k, n, direct.data(), n, nullptr);
  EXPECT_EQ(std::memcmp(viaPacked.data(), direct.data(), direct.size() * sizeof(float)), 0);
}

// Given packed keys, the vector kernel reads them, not k: the keys of another matrix give that
// matrix's scores, bit for bit, and packKeyChunks leaves zeros past the last key of a chunk.
TEST_P(HeadKernels, ScoresBlockReadsThePackedKeysWhenGiven) {
  if (!vector()) GTEST_SKIP() << "the plain loops read k itself";
  std::mt19937 rng(9);
  for (std::int64_t dk : {64, 24}) {  // the kernel for d_k 64 and the one for any d_k
    const std::int64_t nq = 13, Tk = 150;  // two whole chunks of keys and a part
    const auto q = randomValues(static_cast<std::size_t>(nq * dk), rng, 1.0f);
    const auto k = randomValues(static_cast<std::size_t>(Tk * dk), rng, 1.0f);
    const auto other = randomValues(static_cast<std::size_t>(Tk * dk), rng, 1.0f);
    FloatBuffer packed(static_cast<std::size_t>(packedKeysFloats(Tk, dk)));
    ASSERT_EQ(packed.size(), static_cast<std::size_t>(3 * 64 * dk));
    std::fill(packed.begin(), packed.end(), -1.0f);
    packKeyChunks(other.data(), Tk, dk, 0, 3, packed.data());
    for (std::int64_t c = 0; c < dk; ++c) {
      for (std::int64_t j = Tk; j < 192; ++j) {
        ASSERT_EQ(packed[static_cast<std::size_t>((2 * dk + c) * 64 + j - 128)], 0.0f) << "c " << c << " key " << j;
      }
      ASSERT_EQ(packed[static_cast<std::size_t>(c * 64 + 5)], other[static_cast<std::size_t>(5 * dk + c)]);
    }
    std::vector<BlockedKeys> none(static_cast<std::size_t>(nq));
    std::vector<float> viaPacked(static_cast<std::size_t>(nq * Tk)), direct(viaPacked.size());
    std::vector<float> w1(viaPacked.size()), w2(viaPacked.size()), m1(static_cast<std::size_t>(nq)), m2(m1.size());
    scoresBlock(q.data(), k.data(), nq, Tk, dk, 0.5f, none.data(), viaPacked.data(), w1.data(), Tk, m1.data(),
                packed.data());
    scoresBlock(q.data(), other.data(), nq, Tk, dk, 0.5f, none.data(), direct.data(), w2.data(), Tk, m2.data());
    EXPECT_EQ(std::memcmp(viaPacked.data(), direct.data(), direct.size() * sizeof(float)), 0) << "dk " << dk;
    EXPECT_EQ(std::memcmp(w1.data(), w2.data(), w2.size() * sizeof(float)), 0) << "dk " << dk;
    EXPECT_EQ(std::memcmp(m1.data(), m2.data(), m2.size() * sizeof(float)), 0) << "dk " << dk;
  }
}

// The switch: a variant this CPU lacks is refused and changes nothing; the plain loops are always
// there; the default is the widest variant available.
TEST(HeadKernelSwitch, OnlyVariantsThisCpuRunsCanBeChosen) {
  const HeadKernelIsa before = headKernelIsa();
  EXPECT_TRUE(headKernelIsaAvailable(HeadKernelIsa::None));
  if (headKernelIsaAvailable(HeadKernelIsa::Avx512)) EXPECT_EQ(bestHeadKernelIsa(), HeadKernelIsa::Avx512);
  else if (headKernelIsaAvailable(HeadKernelIsa::Avx2Fma)) EXPECT_EQ(bestHeadKernelIsa(), HeadKernelIsa::Avx2Fma);
  else EXPECT_EQ(bestHeadKernelIsa(), HeadKernelIsa::None);
  EXPECT_EQ(headKernelsAvailable(), bestHeadKernelIsa() != HeadKernelIsa::None);
  for (HeadKernelIsa isa : {HeadKernelIsa::None, HeadKernelIsa::Avx2Fma, HeadKernelIsa::Avx512}) {
    ASSERT_TRUE(setHeadKernelIsa(HeadKernelIsa::None));
    EXPECT_EQ(setHeadKernelIsa(isa), headKernelIsaAvailable(isa)) << headKernelIsaName(isa);
    EXPECT_EQ(headKernelIsa(), headKernelIsaAvailable(isa) ? isa : HeadKernelIsa::None) << headKernelIsaName(isa);
    EXPECT_EQ(headKernelsEnabled(), headKernelIsa() != HeadKernelIsa::None);
  }
  EXPECT_EQ(setHeadKernels(true), headKernelsAvailable());
  EXPECT_EQ(headKernelIsa(), bestHeadKernelIsa());
  setHeadKernelIsa(before);
}

// AVX-512 and AVX2 sum every output in the same order with the same fused multiply-adds: the same
// scores, weights and products, bit for bit, whichever runs (needs a CPU with both).
TEST(HeadKernelSwitch, Avx512AndAvx2GiveTheSameBits) {
  if (!headKernelIsaAvailable(HeadKernelIsa::Avx512) || !headKernelIsaAvailable(HeadKernelIsa::Avx2Fma)) {
    GTEST_SKIP() << "needs a CPU that runs both the AVX-512 and the AVX2 + FMA head kernels";
  }
  const HeadKernelIsa before = headKernelIsa();
  std::mt19937 rng(3);
  const std::int64_t nq = 13, Tk = 150, dk = 64, n = 150, k = 1100;
  const auto q = randomValues(static_cast<std::size_t>(nq * dk), rng, 1.0f);
  const auto keys = randomValues(static_cast<std::size_t>(Tk * dk), rng, 1.0f);
  const auto a = randomValues(static_cast<std::size_t>(nq * k), rng, 1.0f);
  const auto b = randomValues(static_cast<std::size_t>(k * n), rng, 1.0f);
  const auto start = randomValues(static_cast<std::size_t>(n), rng, 1.0f);
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(Tk));
  for (std::size_t j = 0; j < bytes.size(); ++j) bytes[j] = rng() % 3 == 0;
  std::vector<BlockedKeys> blocked(static_cast<std::size_t>(nq));
  blocked[1] = BlockedKeys{bytes.data()};
  blocked[2] = BlockedKeys{nullptr, 70};
  std::vector<float> out[2][4];
  const HeadKernelIsa isas[2] = {HeadKernelIsa::Avx512, HeadKernelIsa::Avx2Fma};
  for (int v = 0; v < 2; ++v) {
    ASSERT_TRUE(setHeadKernelIsa(isas[v]));
    auto& [scores, weights, rowMax, product] = out[v];
    scores.assign(static_cast<std::size_t>(nq * Tk), 0.0f);
    weights = scores;
    rowMax.assign(static_cast<std::size_t>(nq), 0.0f);
    product.assign(static_cast<std::size_t>(nq * n), 0.0f);
    scoresBlock(q.data(), keys.data(), nq, Tk, dk, 0.125f, blocked.data(), scores.data(), weights.data(), Tk,
                rowMax.data());
    productBlock(a.data(), k, b.data(), n, nq, k, n, product.data(), n, start.data());
  }
  setHeadKernelIsa(before);
  for (int t = 0; t < 4; ++t) {
    ASSERT_EQ(out[0][t].size(), out[1][t].size());
    EXPECT_EQ(std::memcmp(out[0][t].data(), out[1][t].data(), out[0][t].size() * sizeof(float)), 0) << "table " << t;
  }
}

}  // namespace
}  // namespace mhascope
