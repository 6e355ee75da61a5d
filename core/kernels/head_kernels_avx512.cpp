// The head kernels for AVX-512 (F, BW and VL): the vector type the shared tiles
// (head_kernels_tiles.hpp) are compiled with here, 16 lanes in 32 zmm registers, and the variant's
// entry points. With GCC the whole file is compiled for AVX-512 by a target pragma whatever -march
// says (the package's x86-64-v3 build carries it); head_kernels.cpp calls it only on a CPU that
// reports AVX-512 F/BW/VL at run time. The only object file of the build that may hold zmm code
// (scripts/package.sh checks).
#include "kernels/head_kernels_simd.hpp"

#ifdef MHASCOPE_KERNELS_AVX512
#include <algorithm>
#include <cstdint>
#include <limits>

#include <immintrin.h>

#include "kernels/head_kernels.hpp"

// GCC 12's intrinsics initialise their "undefined" operand with itself (__m512 __Y = __Y), which
// -Wmaybe-uninitialized and -Wuninitialized report at every shuffle, permute and max below: a
// false alarm in the compiler's own header.
#pragma GCC diagnostic push
#ifndef __clang__
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#pragma GCC diagnostic ignored "-Wuninitialized"
#ifdef MHASCOPE_KERNELS_BY_PRAGMA
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl")
#endif

namespace mhascope {
namespace simd {
namespace {

struct Vec512 {
  using Vec = __m512;
  using Mask = __mmask16;
  static constexpr int kLanes = 16;
  static constexpr int kTileVectors = 4;  // 6 x 4 accumulators + 4 keys + 1 broadcast of 32 registers

  static Vec zero() { return _mm512_setzero_ps(); }
  static Vec set1(float x) { return _mm512_set1_ps(x); }
  static Vec load(const float* p) { return _mm512_load_ps(p); }
  static Vec loadu(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, Vec v) { _mm512_store_ps(p, v); }
  static void storeu(float* p, Vec v) { _mm512_storeu_ps(p, v); }
  static Vec fmadd(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
  static Vec mul(Vec a, Vec b) { return _mm512_mul_ps(a, b); }
  static Vec max(Vec a, Vec b) { return _mm512_max_ps(a, b); }

  static Mask lanesBelow(std::int64_t n) {
    if (n <= 0) return 0;
    return n >= 16 ? static_cast<Mask>(0xFFFF) : static_cast<Mask>((1u << n) - 1u);
  }
  static bool isAll(Mask m) { return m == 0xFFFF; }
  static Vec maskLoad(Mask m, const float* p) { return _mm512_maskz_loadu_ps(m, p); }
  static void maskStore(float* p, Mask m, Vec v) { _mm512_mask_storeu_ps(p, m, v); }
  static Vec blend(Vec a, Vec b, Mask m) { return _mm512_mask_mov_ps(a, m, b); }
  static Vec maskMax(Vec m, Mask valid, Vec y) { return _mm512_mask_max_ps(m, valid, m, y); }
  static Mask blockedLanes(const std::uint8_t* bytes, Mask valid) {
    const __m128i b = _mm_maskz_loadu_epi8(valid, bytes);
    return _mm_test_epi8_mask(b, b);
  }
  // The largest of the 16 lanes.
  static float maxOfLanes(Vec m) {
    m = _mm512_max_ps(m, _mm512_shuffle_f32x4(m, m, _MM_SHUFFLE(1, 0, 3, 2)));
    m = _mm512_max_ps(m, _mm512_shuffle_f32x4(m, m, _MM_SHUFFLE(2, 3, 0, 1)));
    m = _mm512_max_ps(m, _mm512_permute_ps(m, _MM_SHUFFLE(1, 0, 3, 2)));
    m = _mm512_max_ps(m, _mm512_permute_ps(m, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm512_cvtss_f32(m);
  }
  static void stream(float* p, Vec v) { _mm512_stream_ps(p, v); }
  static void streamQuarters(float* p, Vec v) {
    _mm_stream_ps(p, _mm512_extractf32x4_ps(v, 0));
    _mm_stream_ps(p + 4, _mm512_extractf32x4_ps(v, 1));
    _mm_stream_ps(p + 8, _mm512_extractf32x4_ps(v, 2));
    _mm_stream_ps(p + 12, _mm512_extractf32x4_ps(v, 3));
  }

  // The 16 x 16 floats at src (row stride lds) transposed into dst (row stride ldd, 64-byte
  // aligned): dst[c * ldd + r] = src[r * lds + c]. Four rounds of in-register shuffles instead of
  // 256 single loads and stores: pairs of floats, then of pairs, then of 128-bit quarters, twice.
  static void transpose(const float* src, std::int64_t lds, float* dst, std::int64_t ldd) {
    __m512 a[16], b[16];
    #pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) a[i] = _mm512_loadu_ps(src + i * lds);
    #pragma GCC unroll 8
    for (int i = 0; i < 16; i += 2) {  // b[i]: rows i, i+1 interleaved (columns 0,1 | 4,5 | ...), b[i+1]: columns 2,3 | 6,7 | ...
      b[i] = _mm512_unpacklo_ps(a[i], a[i + 1]);
      b[i + 1] = _mm512_unpackhi_ps(a[i], a[i + 1]);
    }
    #pragma GCC unroll 4
    for (int i = 0; i < 16; i += 4) {  // a[i + m]: rows i..i+3 of the columns m, m+4, m+8, m+12 (one per quarter)
      const __m512d lo0 = _mm512_castps_pd(b[i]), hi0 = _mm512_castps_pd(b[i + 2]);
      const __m512d lo1 = _mm512_castps_pd(b[i + 1]), hi1 = _mm512_castps_pd(b[i + 3]);
      a[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(lo0, hi0));
      a[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(lo0, hi0));
      a[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(lo1, hi1));
      a[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(lo1, hi1));
    }
    #pragma GCC unroll 4
    for (int m = 0; m < 4; ++m) {  // rows 0..7 (b[m]: columns m, m+8; b[m+4]: m+4, m+12) and rows 8..15 (b[8+..])
      b[m] = _mm512_shuffle_f32x4(a[m], a[m + 4], 0x88);
      b[m + 4] = _mm512_shuffle_f32x4(a[m], a[m + 4], 0xDD);
      b[m + 8] = _mm512_shuffle_f32x4(a[m + 8], a[m + 12], 0x88);
      b[m + 12] = _mm512_shuffle_f32x4(a[m + 8], a[m + 12], 0xDD);
    }
    #pragma GCC unroll 8
    for (int c = 0; c < 8; ++c) {  // whole columns c and c + 8
      _mm512_store_ps(dst + c * ldd, _mm512_shuffle_f32x4(b[c], b[c + 8], 0x88));
      _mm512_store_ps(dst + (c + 8) * ldd, _mm512_shuffle_f32x4(b[c], b[c + 8], 0xDD));
    }
  }
};

}  // namespace
}  // namespace simd
}  // namespace mhascope

#include "kernels/head_kernels_tiles.hpp"

namespace mhascope {
namespace simd {

void scoresBlockAvx512(const float* q, const float* k, std::int64_t nq, std::int64_t Tk, std::int64_t dk, float factor,
                       const BlockedKeys* blocked, float* scores, float* weights, std::int64_t ld, float* rowMax,
                       const float* packedKeys) {
  scoresBlockOf<Vec512>(q, k, nq, Tk, dk, factor, blocked, scores, weights, ld, rowMax, packedKeys);
}

void productBlockAvx512(const float* a, std::int64_t lda, const float* b, std::int64_t ldb, std::int64_t m,
                        std::int64_t k, std::int64_t n, float* c, std::int64_t ldc, const float* start,
                        const float* packed) {
  productBlockFor<Vec512>(a, lda, b, ldb, m, k, n, c, ldc, start, packed);
}

void packKeyChunksAvx512(const float* k, std::int64_t Tk, std::int64_t dk, std::int64_t c0, std::int64_t c1,
                         float* packed) {
  packKeyChunksOf<Vec512>(k, Tk, dk, c0, c1, packed);
}

}  // namespace simd
}  // namespace mhascope

#ifdef MHASCOPE_KERNELS_BY_PRAGMA
#pragma GCC pop_options
#endif
#pragma GCC diagnostic pop
#endif  // MHASCOPE_KERNELS_AVX512
