// The attention's per-block products (see head_kernels.hpp): plain loops for any CPU, and the
// AVX-512 register-tiled versions the engine runs on a CPU that has AVX-512. With GCC on x86-64
// they are compiled for AVX-512 by a target pragma whatever -march says (setup.sh may pick
// x86-64-v3, the package always does) and used when the CPU reports AVX-512 F/BW/VL at run time.
// The scores kernel, the product kernel and their packing share the tile constants, the lane masks
// and the one AVX-512 target region.
//
// [SECTION] the switch and the plain loops
// [SECTION] AVX-512: register tiles (finishScores, scoresTile, sumTile)
// [SECTION] AVX-512: packing and whole blocks (packKeys, scoresBlockFor, packStrip, productBlockAvx512)
// [SECTION] entry points and packing
#include "kernels/head_kernels.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <new>

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
#define MHASCOPE_HEAD_KERNELS_AVX512 1  // the whole build targets AVX-512
#elif defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define MHASCOPE_HEAD_KERNELS_AVX512 1
#define MHASCOPE_HEAD_KERNELS_TARGET 1  // only these functions do; the CPU is asked at run time
#endif
#ifdef MHASCOPE_HEAD_KERNELS_AVX512
#include <immintrin.h>
#endif

namespace mhascope {
// ---------------------------------------------------------------------------------------------
// [SECTION] the switch and the plain loops
// ---------------------------------------------------------------------------------------------
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

bool cpuRunsKernels() {
#if defined(MHASCOPE_HEAD_KERNELS_TARGET)
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vl");
  return has;
#elif defined(MHASCOPE_HEAD_KERNELS_AVX512)
  return true;
#else
  return false;
#endif
}

std::atomic<bool>& enabledFlag() {
  static std::atomic<bool> enabled{cpuRunsKernels()};  // process-wide, like the GEMM backend's choice
  return enabled;
}

}  // namespace

bool headKernelsAvailable() { return cpuRunsKernels(); }
bool headKernelsEnabled() { return enabledFlag().load(std::memory_order_relaxed); }
bool setHeadKernels(bool enabled) {
  if (enabled && !cpuRunsKernels()) return false;
  enabledFlag().store(enabled, std::memory_order_relaxed);
  return true;
}

void scoresBlockPortable(const float* q, const float* k, std::int64_t nq, std::int64_t Tk, std::int64_t dk,
                         float factor, const BlockedKeys* blocked, float* scores, float* weights,
                         std::int64_t ld, float* rowMax) {
  for (std::int64_t i = 0; i < nq; ++i) {
    float m = kNegInf;
    for (std::int64_t j = 0; j < Tk; ++j) {
      float s = 0.0f;
      for (std::int64_t c = 0; c < dk; ++c) s += q[i * dk + c] * k[j * dk + c];
      if (scores) scores[i * ld + j] = s;
      if (!weights) continue;
      const float x = blocked[i].at(j) ? kNegInf : s * factor;
      weights[i * ld + j] = x;
      m = std::max(m, x);
    }
    if (weights) rowMax[i] = m;
  }
}

void productBlockPortable(const float* a, std::int64_t lda, const float* b, std::int64_t ldb, std::int64_t m,
                          std::int64_t k, std::int64_t n, float* c, std::int64_t ldc, const float* start) {
  for (std::int64_t i = 0; i < m; ++i) {
    float* o = c + i * ldc;
    if (start) std::copy(start, start + n, o);
    else std::fill(o, o + n, 0.0f);
    for (std::int64_t j = 0; j < k; ++j) {
      const float x = a[i * lda + j];
      for (std::int64_t col = 0; col < n; ++col) o[col] += x * b[j * ldb + col];
    }
  }
}

// ---------------------------------------------------------------------------------------------
// [SECTION] AVX-512: register tiles (finishScores, scoresTile, sumTile)
// ---------------------------------------------------------------------------------------------
#ifdef MHASCOPE_HEAD_KERNELS_AVX512
// GCC 12's intrinsics initialise their "undefined" operand with itself (__m512 __Y = __Y), which
// -Wmaybe-uninitialized and -Wuninitialized report at every shuffle, permute and max below: a
// false alarm in the compiler's own header.
#pragma GCC diagnostic push
#ifndef __clang__
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#pragma GCC diagnostic ignored "-Wuninitialized"
#ifdef MHASCOPE_HEAD_KERNELS_TARGET
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl")
#endif
namespace {

constexpr int kRows = 6;           // productBlock: rows per register tile, 6 x 4 accumulators of 16 lanes
constexpr int kScoreRows = 6;      // scoresBlock: 6 x 4 (the scale, mask and store are out of line: finishScores)
constexpr std::int64_t kMaxRowsPerPass = 128;  // scoresBlock: rows whose running maxima stay in vectors
constexpr std::int64_t kKeys = 64;  // keys (score columns) per tile: 4 vectors
// productBlock: k per pass, so b's rows stay in cache (a strip of 1024 rows of 64 floats is 256 KiB;
// fewer passes than 512 rows, and the sums are the same either way).
constexpr std::int64_t kKeyChunk = 1024;

__mmask16 lanesBelow(std::int64_t n) {
  if (n <= 0) return 0;
  return n >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << n) - 1u);
}

// The largest of the 16 lanes.
float maxOfLanes(__m512 m) {
  m = _mm512_max_ps(m, _mm512_shuffle_f32x4(m, m, _MM_SHUFFLE(1, 0, 3, 2)));
  m = _mm512_max_ps(m, _mm512_shuffle_f32x4(m, m, _MM_SHUFFLE(2, 3, 0, 1)));
  m = _mm512_max_ps(m, _mm512_permute_ps(m, _MM_SHUFFLE(1, 0, 3, 2)));
  m = _mm512_max_ps(m, _mm512_permute_ps(m, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm512_cvtss_f32(m);
}

// 16 scores into a table that is a record only: computed beside the weights, the forward never
// reads them again. Streaming (non-temporal) stores send them to memory without first reading the
// lines into the cache and without pushing the weights the softmax and A V read next out of it.
// The whole-line store needs 64-byte alignment: a trace's tables start on a line (FloatBuffer),
// so every 64-key chunk of a row does when T_k is a multiple of 16. Four 16-byte stores need 16
// (T_k a multiple of 4); a row of any other T_k gets ordinary stores. The caller fences.
void storeRecord(float* d, __m512 s) {
  const auto at = reinterpret_cast<std::uintptr_t>(d);
  if ((at & 63) == 0) {
    _mm512_stream_ps(d, s);
  } else if ((at & 15) == 0) {
    _mm_stream_ps(d, _mm512_extractf32x4_ps(s, 0));
    _mm_stream_ps(d + 4, _mm512_extractf32x4_ps(s, 1));
    _mm_stream_ps(d + 8, _mm512_extractf32x4_ps(s, 2));
    _mm_stream_ps(d + 12, _mm512_extractf32x4_ps(s, 3));
  } else {
    _mm512_storeu_ps(d, s);
  }
}

// Scores of rows x (up to) 64 keys, from tile (rows x 64) into scores and weights, and the rows'
// running maxima, kept as 16 lanes each (rowMax[r]) until the last chunk of keys. Kept out of line: inlined into scoresTile, the values it needs (pointers, masks,
// constants) stayed live across the product loop there, and GCC 12 then spilled the keys'
// vectors to the stack inside it (a store-to-load round trip per product: half the speed).
[[gnu::noinline]] void finishScores(const float* tile, std::int64_t rows, const __mmask16 (&valid)[4],
                                    std::int64_t j0, float factor, const BlockedKeys* blocked, float* scores,
                                    float* weights, std::int64_t ld, __m512* rowMax) {
  const __m512 f = _mm512_set1_ps(factor), negInf = _mm512_set1_ps(kNegInf);
  const bool full = valid[3] == 0xFFFF;
  for (std::int64_t r = 0; r < rows; ++r) {
    __m512 m = weights ? rowMax[r] : negInf;
    for (int x = 0; x < 4; ++x) {
      const std::int64_t at = r * ld + j0 + 16 * x;
      const __m512 s = _mm512_load_ps(tile + r * kKeys + 16 * x);
      if (full && scores && weights) storeRecord(scores + at, s);
      else if (full && scores) _mm512_storeu_ps(scores + at, s);  // masked stores are slower on Zen
      else if (scores) _mm512_mask_storeu_ps(scores + at, valid[x], s);
      if (!weights) continue;
      __m512 y = _mm512_mul_ps(s, f);
      if (blocked[r].bytes) {
        const __m128i b = _mm_maskz_loadu_epi8(valid[x], blocked[r].bytes + j0 + 16 * x);
        y = _mm512_mask_mov_ps(y, _mm_test_epi8_mask(b, b), negInf);
      }
      const std::int64_t before = blocked[r].from - (j0 + 16 * x);  // lanes before the blocked run
      if (before < 16) y = _mm512_mask_mov_ps(negInf, lanesBelow(before), y);
      if (full) {
        _mm512_storeu_ps(weights + at, y);
        m = _mm512_max_ps(m, y);
      } else {
        _mm512_mask_storeu_ps(weights + at, valid[x], y);
        m = _mm512_mask_max_ps(m, valid[x], m, y);
      }
    }
    if (weights) rowMax[r] = m;
  }
}

// R query rows x 64 keys of dot products from the packed keys kt (dk x 64), in registers
// (c = 0 .. dk-1 in order), into tile (R x 64).
template <int R, int DK>
void scoresTile(const float* q, std::int64_t dkRuntime, const float* kt, float* tile) {
  const std::int64_t dk = DK > 0 ? DK : dkRuntime;
  __m512 acc[R][4];
  #pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    #pragma GCC unroll 8
    for (int x = 0; x < 4; ++x) acc[r][x] = _mm512_setzero_ps();
  }
  for (std::int64_t c = 0; c < dk; ++c) {
    const float* kc = kt + c * kKeys;
    const __m512 k0 = _mm512_load_ps(kc), k1 = _mm512_load_ps(kc + 16), k2 = _mm512_load_ps(kc + 32),
                 k3 = _mm512_load_ps(kc + 48);
    #pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512 a = _mm512_set1_ps(q[r * dk + c]);
      acc[r][0] = _mm512_fmadd_ps(a, k0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(a, k1, acc[r][1]);
      acc[r][2] = _mm512_fmadd_ps(a, k2, acc[r][2]);
      acc[r][3] = _mm512_fmadd_ps(a, k3, acc[r][3]);
    }
  }
  #pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    #pragma GCC unroll 8
    for (int x = 0; x < 4; ++x) _mm512_store_ps(tile + r * kKeys + 16 * x, acc[r][x]);
  }
}

template <int R, int DK>
void scoresRows(const float* q, std::int64_t dk, const float* kt, const __mmask16 (&valid)[4], std::int64_t j0,
                float factor, const BlockedKeys* blocked, float* scores, float* weights, std::int64_t ld,
                __m512* rowMax, std::int64_t i) {
  alignas(64) float tile[R * kKeys];
  scoresTile<R, DK>(q + i * dk, dk, kt, tile);
  finishScores(tile, R, valid, j0, factor, blocked + i, scores ? scores + i * ld : nullptr,
               weights ? weights + i * ld : nullptr, ld, rowMax + i);
}

// R rows x NV vectors of outputs over k in [k0, k1); the first chunk starts from the row `start`
// (zero when null), later ones from the partial sums in out, so every output is one sum in k order.
// pf, pfLines: lines of the next strip to ask into L2, one per k step of the first pfLines (see
// productBlockAvx512).
// Whole: v's rows hold NV whole vectors (a packed strip, zeros past its columns, or columns a
// multiple of 16), read unmasked (a masked load is slower); else the last vector's lanes `last` only.
template <int R, int NV, bool Whole>
void sumTile(const float* w, std::int64_t ldw, const float* v, std::int64_t ldv, std::int64_t k0, std::int64_t k1,
             float* out, std::int64_t ldo, __mmask16 last, const float* start, const float* pf, std::int64_t pfLines) {
  __m512 acc[R][NV];
  #pragma GCC unroll 8
  for (int x = 0; x < NV; ++x) {
    const __mmask16 lanes = x == NV - 1 ? last : static_cast<__mmask16>(0xFFFF);
    #pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      if (k0 > 0) acc[r][x] = _mm512_maskz_loadu_ps(lanes, out + r * ldo + 16 * x);
      else acc[r][x] = start ? _mm512_maskz_loadu_ps(lanes, start + 16 * x) : _mm512_setzero_ps();
    }
  }
  for (std::int64_t j = k0; j < k1; ++j) {
    if (j - k0 < pfLines) _mm_prefetch(reinterpret_cast<const char*>(pf + (j - k0) * 16), _MM_HINT_T1);
    __m512 vj[NV];
    #pragma GCC unroll 8
    for (int x = 0; x < NV; ++x) {
      vj[x] = Whole ? _mm512_loadu_ps(v + j * ldv + 16 * x)
                    : _mm512_maskz_loadu_ps(x == NV - 1 ? last : static_cast<__mmask16>(0xFFFF), v + j * ldv + 16 * x);
    }
    #pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512 a = _mm512_set1_ps(w[r * ldw + j]);
      #pragma GCC unroll 8
      for (int x = 0; x < NV; ++x) acc[r][x] = _mm512_fmadd_ps(a, vj[x], acc[r][x]);
    }
  }
  #pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    #pragma GCC unroll 8
    for (int x = 0; x < NV; ++x) {
      _mm512_mask_storeu_ps(out + r * ldo + 16 * x, x == NV - 1 ? last : static_cast<__mmask16>(0xFFFF), acc[r][x]);
    }
  }
}

// One chunk of k for rows [i, i + rows) (rows <= kRows) and the column vectors [c0, c0 + 16 nv).
template <int NV, bool Whole>
void sumRows(const float* w, std::int64_t ldw, const float* v, std::int64_t ldv, std::int64_t k0, std::int64_t k1,
             float* out, std::int64_t ldo, __mmask16 last, const float* start, std::int64_t i, std::int64_t rows,
             const float* pf, std::int64_t pfLines) {
  const float* wi = w + i * ldw;
  float* oi = out + i * ldo;
  switch (rows) {
    case 6: return sumTile<6, NV, Whole>(wi, ldw, v, ldv, k0, k1, oi, ldo, last, start, pf, pfLines);
    case 5: return sumTile<5, NV, Whole>(wi, ldw, v, ldv, k0, k1, oi, ldo, last, start, pf, pfLines);
    case 4: return sumTile<4, NV, Whole>(wi, ldw, v, ldv, k0, k1, oi, ldo, last, start, pf, pfLines);
    case 3: return sumTile<3, NV, Whole>(wi, ldw, v, ldv, k0, k1, oi, ldo, last, start, pf, pfLines);
    case 2: return sumTile<2, NV, Whole>(wi, ldw, v, ldv, k0, k1, oi, ldo, last, start, pf, pfLines);
    default: return sumTile<1, NV, Whole>(wi, ldw, v, ldv, k0, k1, oi, ldo, last, start, pf, pfLines);
  }
}


// ---------------------------------------------------------------------------------------------
// [SECTION] AVX-512: packing and whole blocks (packKeys, scoresBlockFor, packStrip, productBlockAvx512)
// ---------------------------------------------------------------------------------------------
// The 16 x 16 floats at src (row stride lds) transposed into dst (row stride ldd, 64-byte aligned):
// dst[c * ldd + r] = src[r * lds + c]. Four rounds of in-register shuffles instead of 256 single
// loads and stores: pairs of floats, then of pairs, then of 128-bit quarters, twice.
void transpose16(const float* src, std::int64_t lds, float* dst, std::int64_t ldd) {
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

// Keys [j0, j0 + n) of k (rows of dk) into kt (dk rows of 64), zeros past n (computed, never
// stored): by 16 x 16 blocks when they are whole (d_k a multiple of 16, 64 keys), else one by one.
// (One by one, this copy was a fifth of the scores' time at d_k 64.)
template <int DK>
void packKeys(const float* k, std::int64_t dk, std::int64_t j0, std::int64_t n, float* kt) {
  const std::int64_t width = DK > 0 ? DK : dk;
  if (n == kKeys && width % 16 == 0) {  // whole 16 x 16 blocks
    for (std::int64_t jb = 0; jb < kKeys; jb += 16) {
      for (std::int64_t cb = 0; cb < width; cb += 16) transpose16(k + (j0 + jb) * width + cb, width, kt + cb * kKeys + jb, kKeys);
    }
    return;
  }
  if (n == kKeys) {
    for (std::int64_t j = 0; j < kKeys; ++j) {
      for (std::int64_t c = 0; c < width; ++c) kt[c * kKeys + j] = k[(j0 + j) * width + c];
    }
    return;
  }
  for (std::int64_t j = 0; j < kKeys; ++j) {
    for (std::int64_t c = 0; c < width; ++c) kt[c * kKeys + j] = j < n ? k[(j0 + j) * width + c] : 0.0f;
  }
}

template <int DK>
void scoresBlockFor(const float* q, const float* k, std::int64_t nq, std::int64_t Tk, std::int64_t dk, float factor,
                    const BlockedKeys* blocked, float* scores, float* weights, std::int64_t ld,
                    float* rowMax, const float* packedKeys) {
  const std::int64_t width = DK > 0 ? DK : dk;
  if (nq > kMaxRowsPerPass) {  // the engine's blocks are 128 rows; anything longer in passes
    for (std::int64_t i0 = 0; i0 < nq; i0 += kMaxRowsPerPass) {
      scoresBlockFor<DK>(q + i0 * width, k, std::min(kMaxRowsPerPass, nq - i0), Tk, dk, factor, blocked + i0,
                         scores ? scores + i0 * ld : nullptr, weights ? weights + i0 * ld : nullptr, ld,
                         rowMax ? rowMax + i0 : nullptr, packedKeys);
    }
    return;
  }
  // 64 keys transposed (d_k rows of 64): packed here per block of rows, or read from packedKeys.
  // (Packed per block, the transposes were ~6 % of the forward at T = 4096 with 64-row blocks in
  // perf; packed once per forward the forward took ~3 % less.)
  alignas(64) float own[(DK > 0 ? DK : kScoresBlockMaxDk) * kKeys];
  __m512 maxv[kMaxRowsPerPass];  // each row's running maximum, 16 lanes
  for (std::int64_t r = 0; r < nq; ++r) maxv[r] = _mm512_set1_ps(kNegInf);
  for (std::int64_t j0 = 0; j0 < Tk; j0 += kKeys) {
    const std::int64_t n = std::min(kKeys, Tk - j0);
    const float* kt = own;
    if (packedKeys) kt = packedKeys + (j0 / kKeys) * width * kKeys;
    else packKeys<DK>(k, width, j0, n, own);
    const __mmask16 valid[4] = {lanesBelow(n), lanesBelow(n - 16), lanesBelow(n - 32), lanesBelow(n - 48)};
    std::int64_t i = 0;
    for (; i + kScoreRows <= nq; i += kScoreRows) {
      scoresRows<kScoreRows, DK>(q, width, kt, valid, j0, factor, blocked, scores, weights, ld, maxv, i);
    }
    switch (nq - i) {  // the last rows together: one row alone loads the keys for only 4 products
      case 5: scoresRows<5, DK>(q, width, kt, valid, j0, factor, blocked, scores, weights, ld, maxv, i); break;
      case 4: scoresRows<4, DK>(q, width, kt, valid, j0, factor, blocked, scores, weights, ld, maxv, i); break;
      case 3: scoresRows<3, DK>(q, width, kt, valid, j0, factor, blocked, scores, weights, ld, maxv, i); break;
      case 2: scoresRows<2, DK>(q, width, kt, valid, j0, factor, blocked, scores, weights, ld, maxv, i); break;
      case 1: scoresRows<1, DK>(q, width, kt, valid, j0, factor, blocked, scores, weights, ld, maxv, i); break;
      default: break;
    }
  }
  if (weights) for (std::int64_t r = 0; r < nq; ++r) rowMax[r] = maxOfLanes(maxv[r]);
  if (scores && weights) _mm_sfence();  // the streamed scores are in memory before anyone reads them
}

void scoresBlockAvx512(const float* q, const float* k, std::int64_t nq, std::int64_t Tk, std::int64_t dk,
                       float factor, const BlockedKeys* blocked, float* scores, float* weights,
                       std::int64_t ld, float* rowMax, const float* packedKeys) {
  if (dk == 64) {
    return scoresBlockFor<64>(q, k, nq, Tk, dk, factor, blocked, scores, weights, ld, rowMax, packedKeys);
  }
  if (dk > kScoresBlockMaxDk || dk < 1) {
    return scoresBlockPortable(q, k, nq, Tk, dk, factor, blocked, scores, weights, ld, rowMax);
  }
  scoresBlockFor<0>(q, k, nq, Tk, dk, factor, blocked, scores, weights, ld, rowMax, packedKeys);
}

void packKeyChunksAvx512(const float* k, std::int64_t Tk, std::int64_t dk, std::int64_t c0, std::int64_t c1,
                        float* packed) {
  for (std::int64_t c = c0; c < c1; ++c) {
    const std::int64_t j0 = c * kKeys, n = std::min(kKeys, Tk - j0);
    if (dk == 64) packKeys<64>(k, dk, j0, n, packed + c * dk * kKeys);
    else packKeys<0>(k, dk, j0, n, packed + c * dk * kKeys);
  }
}

// A thread's scratch for one packed strip (kKeyChunk rows of 64 floats, 256 KiB), allocated on its
// first product and kept: one allocation per thread, not per call (a fresh 128 KiB block would be a
// fresh mapping for glibc, faulted in every time).
float* stripScratch() {
  struct Scratch {
    float* p = static_cast<float*>(::operator new(sizeof(float) * kKeyChunk * 64, std::align_val_t{64}));
    ~Scratch() { ::operator delete(p, std::align_val_t{64}); }
  };
  thread_local Scratch s;
  return s.p;
}

// Rows [k0, k1) of the strip of nv vectors at b (row stride ldb; the last vector's lanes `last`)
// into packed (rows of 64, zeros past the strip's columns). Read in place at a row stride of
// d_model, each tile row's 256 bytes lie in a 4 KiB page of their own: every row a new page for
// the TLB and the prefetcher, and at 4 KiB strides the same few L1 sets (at d_model 1024 the
// projections ran at half the GEMM's rate).
// Packed, the tiles read the strip in order; it is then reused by every row tile of the block.
void packStrip(const float* b, std::int64_t ldb, std::int64_t k0, std::int64_t k1, std::int64_t nv, __mmask16 last,
               float* packed) {
  for (std::int64_t j = k0; j < k1; ++j) {
    const float* src = b + j * ldb;
    float* dst = packed + (j - k0) * 64;
    for (std::int64_t x = 0; x < nv; ++x) {
      _mm512_store_ps(dst + 16 * x, _mm512_maskz_loadu_ps(x == nv - 1 ? last : static_cast<__mmask16>(0xFFFF), src + 16 * x));
    }
  }
}

void productBlockAvx512(const float* a, std::int64_t lda, const float* b, std::int64_t ldb, std::int64_t m,
                        std::int64_t k, std::int64_t n, float* c, std::int64_t ldc, const float* start,
                        const float* prepacked) {
  if (k <= 0) {
    for (std::int64_t i = 0; i < m; ++i) {
      if (start) std::copy(start, start + n, c + i * ldc);
      else std::fill(c + i * ldc, c + i * ldc + n, 0.0f);
    }
    return;
  }
  // b's rows are read in place when they are at most one strip wide (A V: V's rows of d_k) or
  // packed already (prepacked: packStrips' strips), else each strip of a chunk of k is packed
  // first (packStrip).
  const bool pack = ldb > 64 && !prepacked;
  float* packed = pack ? stripScratch() : nullptr;
  for (std::int64_t k0 = 0; k0 < k; k0 += kKeyChunk) {
    const std::int64_t k1 = std::min(k, k0 + kKeyChunk);
    for (std::int64_t c0 = 0; c0 < n; c0 += 64) {  // 64 output columns (4 vectors) at a time
      const std::int64_t cols = std::min<std::int64_t>(64, n - c0), nv = (cols + 15) / 16;
      const __mmask16 last = lanesBelow(cols - 16 * (nv - 1));
      const float* from = start ? start + c0 : nullptr;
      if (pack) packStrip(b + c0, ldb, k0, k1, nv, last, packed);
      // The strip's row j, whichever way: bs + j * ls.
      const float* bs = pack ? packed - k0 * 64 : prepacked ? prepacked + c0 * k : b + c0;
      const std::int64_t ls = pack || prepacked ? 64 : ldb;
      const bool whole = pack || prepacked || last == 0xFFFF;
      // The next prepacked strip's rows are asked into L2 a share per row tile, one line per k step
      // inside the tile's loop, so that the next strip's first tile does not wait for them. Issued
      // all at once before each tile, the prefetches stall on the full miss queue.
      const float* next = prepacked && c0 + 64 < n ? prepacked + (c0 + 64) * k + k0 * 64 : nullptr;
      const std::int64_t lines = (k1 - k0) * 4, perTile = (lines * kRows + m - 1) / m;
      std::int64_t line = 0;
      for (std::int64_t i = 0; i < m;) {
        const float* pf = next ? next + line * 16 : nullptr;
        const std::int64_t pfLines = next ? std::min(perTile, lines - line) : 0;
        line += pfLines;
        // Tiles of 6 rows; the last 7 or 8 as two of 4 and 3 or 4 (a tile of 1 or 2 rows loads b's
        // vectors for only 4 or 8 products each: the 2 rows left of 128 took 2 % of the forward).
        const std::int64_t left = m - i;
        const std::int64_t rows = left == 7 || left == 8 ? 4 : std::min<std::int64_t>(kRows, left);
        const auto run = [&](auto rowsKernel) {
          rowsKernel(a, lda, bs, ls, k0, k1, c + c0, ldc, last, from, i, rows, pf, pfLines);
        };
        switch (nv) {
          case 4: run(whole ? sumRows<4, true> : sumRows<4, false>); break;
          case 3: run(whole ? sumRows<3, true> : sumRows<3, false>); break;
          case 2: run(whole ? sumRows<2, true> : sumRows<2, false>); break;
          default: run(whole ? sumRows<1, true> : sumRows<1, false>); break;
        }
        i += rows;
      }
    }
  }
}

}  // namespace
#ifdef MHASCOPE_HEAD_KERNELS_TARGET
#pragma GCC pop_options
#endif
#pragma GCC diagnostic pop
#endif

// ---------------------------------------------------------------------------------------------
// [SECTION] entry points and packing
// ---------------------------------------------------------------------------------------------

void scoresBlock(const float* q, const float* k, std::int64_t nq, std::int64_t Tk, std::int64_t dk, float factor,
                 const BlockedKeys* blocked, float* scores, float* weights, std::int64_t ld, float* rowMax,
                 const float* packedKeys) {
#ifdef MHASCOPE_HEAD_KERNELS_AVX512
  if (cpuRunsKernels()) {
    return scoresBlockAvx512(q, k, nq, Tk, dk, factor, blocked, scores, weights, ld, rowMax, packedKeys);
  }
#endif
  (void)packedKeys;  // the plain loops read k itself
  scoresBlockPortable(q, k, nq, Tk, dk, factor, blocked, scores, weights, ld, rowMax);
}

void productBlock(const float* a, std::int64_t lda, const float* b, std::int64_t ldb, std::int64_t m, std::int64_t k,
                  std::int64_t n, float* c, std::int64_t ldc, const float* start, const float* packed) {
#ifdef MHASCOPE_HEAD_KERNELS_AVX512
  if (cpuRunsKernels()) return productBlockAvx512(a, lda, b, ldb, m, k, n, c, ldc, start, packed);
#endif
  (void)packed;  // the plain loops read b itself
  productBlockPortable(a, lda, b, ldb, m, k, n, c, ldc, start);
}

std::int64_t packedKeysFloats(std::int64_t Tk, std::int64_t dk) { return (Tk + 63) / 64 * 64 * dk; }

void packKeyChunks(const float* k, std::int64_t Tk, std::int64_t dk, std::int64_t c0, std::int64_t c1, float* packed) {
#ifdef MHASCOPE_HEAD_KERNELS_AVX512
  if (cpuRunsKernels()) return packKeyChunksAvx512(k, Tk, dk, c0, c1, packed);
#endif
  for (std::int64_t c = c0; c < c1; ++c) {
    for (std::int64_t col = 0; col < dk; ++col) {
      for (std::int64_t j = 0; j < 64; ++j) {
        const std::int64_t key = 64 * c + j;
        packed[(c * dk + col) * 64 + j] = key < Tk ? k[key * dk + col] : 0.0f;
      }
    }
  }
}

std::int64_t packedStripsFloats(std::int64_t k, std::int64_t n) { return (n + 63) / 64 * k * 64; }

void packStrips(const float* b, std::int64_t ldb, std::int64_t k, std::int64_t n, std::int64_t s0, std::int64_t s1,
                float* packed) {
  for (std::int64_t s = s0; s < s1; ++s) {
    const std::int64_t c0 = 64 * s, cols = std::min<std::int64_t>(64, n - c0);
    for (std::int64_t j = 0; j < k; ++j) {
      float* dst = packed + (s * k + j) * 64;
      std::copy_n(b + j * ldb + c0, cols, dst);
      std::fill(dst + cols, dst + 64, 0.0f);
    }
  }
}

}  // namespace mhascope
