// The head kernels for AVX2 + FMA (x86-64-v3: Haswell, Zen and later): the vector type the shared
// tiles (head_kernels_tiles.hpp) are compiled with here, 8 lanes in 16 ymm registers, and the
// variant's entry points. With GCC the whole file is compiled for AVX2 + FMA by a target pragma
// whatever -march says, so a default x86-64 build carries it too; head_kernels.cpp calls it only on
// a CPU that reports AVX2 and FMA at run time (and no AVX-512, unless asked: tests run both).
//
// AVX2 has no lane-mask registers: a Mask is a vector whose lanes are all ones (taken) or all
// zeros, and masked loads and stores are vmaskmovps, slow on Zen for stores, so tiles store whole
// vectors wherever they can.
#include "kernels/head_kernels_simd.hpp"

#ifdef MHASCOPE_KERNELS_AVX2
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>

#include <immintrin.h>

#include "kernels/head_kernels.hpp"

#pragma GCC diagnostic push
#ifndef __clang__
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#pragma GCC diagnostic ignored "-Wuninitialized"
#ifdef MHASCOPE_KERNELS_BY_PRAGMA
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#endif

namespace mhascope {
namespace simd {
namespace {

struct Vec256 {
  using Vec = __m256;
  using Mask = __m256i;
  static constexpr int kLanes = 8;
  static constexpr int kTileVectors = 2;  // 6 x 2 accumulators + 2 keys + 1 broadcast of 16 registers

  static Vec zero() { return _mm256_setzero_ps(); }
  static Vec set1(float x) { return _mm256_set1_ps(x); }
  static Vec load(const float* p) { return _mm256_load_ps(p); }
  static Vec loadu(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, Vec v) { _mm256_store_ps(p, v); }
  static void storeu(float* p, Vec v) { _mm256_storeu_ps(p, v); }
  static Vec fmadd(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
  static Vec mul(Vec a, Vec b) { return _mm256_mul_ps(a, b); }
  static Vec max(Vec a, Vec b) { return _mm256_max_ps(a, b); }

  static Mask lanesBelow(std::int64_t n) {
    const int below = static_cast<int>(std::min<std::int64_t>(std::max<std::int64_t>(n, 0), kLanes));
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(below), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static bool isAll(Mask m) { return _mm256_movemask_ps(_mm256_castsi256_ps(m)) == 0xFF; }
  static Vec maskLoad(Mask m, const float* p) { return _mm256_maskload_ps(p, m); }
  static void maskStore(float* p, Mask m, Vec v) { _mm256_maskstore_ps(p, m, v); }
  static Vec blend(Vec a, Vec b, Mask m) { return _mm256_blendv_ps(a, b, _mm256_castsi256_ps(m)); }
  static Vec maskMax(Vec m, Mask valid, Vec y) { return blend(m, _mm256_max_ps(m, y), valid); }
  // valid is a run of lanes from the first (lanesBelow): only its bytes are read.
  static Mask blockedLanes(const std::uint8_t* bytes, Mask valid) {
    std::uint64_t eight = 0;
    const int n = __builtin_popcount(static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(valid))));
    std::memcpy(&eight, bytes, static_cast<std::size_t>(n));
    const __m256i b = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<long long>(eight)));
    return _mm256_xor_si256(_mm256_cmpeq_epi32(b, _mm256_setzero_si256()), _mm256_set1_epi32(-1));
  }
  // The largest of the 8 lanes.
  static float maxOfLanes(Vec m) {
    __m128 x = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    x = _mm_max_ps(x, _mm_shuffle_ps(x, x, _MM_SHUFFLE(1, 0, 3, 2)));
    x = _mm_max_ps(x, _mm_shuffle_ps(x, x, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtss_f32(x);
  }
  static void stream(float* p, Vec v) { _mm256_stream_ps(p, v); }
  static void streamQuarters(float* p, Vec v) {
    _mm_stream_ps(p, _mm256_castps256_ps128(v));
    _mm_stream_ps(p + 4, _mm256_extractf128_ps(v, 1));
  }

  // The 8 x 8 floats at src (row stride lds) transposed into dst (row stride ldd, 32-byte aligned):
  // dst[c * ldd + r] = src[r * lds + c]. Pairs of floats, then of pairs, then 128-bit halves.
  static void transpose(const float* src, std::int64_t lds, float* dst, std::int64_t ldd) {
    __m256 a[8], b[8];
    #pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) a[i] = _mm256_loadu_ps(src + i * lds);
    #pragma GCC unroll 4
    for (int i = 0; i < 8; i += 2) {  // b[i]: rows i, i+1 of columns 0,1 | 4,5; b[i+1]: 2,3 | 6,7
      b[i] = _mm256_unpacklo_ps(a[i], a[i + 1]);
      b[i + 1] = _mm256_unpackhi_ps(a[i], a[i + 1]);
    }
    #pragma GCC unroll 2
    for (int i = 0; i < 8; i += 4) {  // a[i + m]: rows i..i+3 of columns m | m + 4
      a[i] = _mm256_shuffle_ps(b[i], b[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
      a[i + 1] = _mm256_shuffle_ps(b[i], b[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
      a[i + 2] = _mm256_shuffle_ps(b[i + 1], b[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
      a[i + 3] = _mm256_shuffle_ps(b[i + 1], b[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    #pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {  // whole columns c (low halves) and c + 4 (high halves)
      _mm256_store_ps(dst + c * ldd, _mm256_permute2f128_ps(a[c], a[c + 4], 0x20));
      _mm256_store_ps(dst + (c + 4) * ldd, _mm256_permute2f128_ps(a[c], a[c + 4], 0x31));
    }
  }
};

}  // namespace
}  // namespace simd
}  // namespace mhascope

#include "kernels/head_kernels_tiles.hpp"

namespace mhascope {
namespace simd {

void scoresBlockAvx2(const float* q, const float* k, std::int64_t nq, std::int64_t Tk, std::int64_t dk, float factor,
                     const BlockedKeys* blocked, float* scores, float* weights, std::int64_t ld, float* rowMax,
                     const float* packedKeys) {
  scoresBlockOf<Vec256>(q, k, nq, Tk, dk, factor, blocked, scores, weights, ld, rowMax, packedKeys);
}

void productBlockAvx2(const float* a, std::int64_t lda, const float* b, std::int64_t ldb, std::int64_t m,
                      std::int64_t k, std::int64_t n, float* c, std::int64_t ldc, const float* start,
                      const float* packed) {
  productBlockFor<Vec256>(a, lda, b, ldb, m, k, n, c, ldc, start, packed);
}

void packKeyChunksAvx2(const float* k, std::int64_t Tk, std::int64_t dk, std::int64_t c0, std::int64_t c1,
                       float* packed) {
  packKeyChunksOf<Vec256>(k, Tk, dk, c0, c1, packed);
}

}  // namespace simd
}  // namespace mhascope

#ifdef MHASCOPE_KERNELS_BY_PRAGMA
#pragma GCC pop_options
#endif
#pragma GCC diagnostic pop
#endif  // MHASCOPE_KERNELS_AVX2
