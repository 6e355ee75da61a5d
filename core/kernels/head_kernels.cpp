// The attention's per-block products (see head_kernels.hpp): which variant runs, the plain loops
// for any CPU, and the entry points that hand each call to the variant chosen. The vector variants
// live in head_kernels_avx512.cpp and head_kernels_avx2.cpp (one source for both:
// head_kernels_tiles.hpp); this file holds no vector code, so it runs on any x86-64.
//
// [SECTION] the switch
// [SECTION] the plain loops
// [SECTION] entry points and packing
#include "kernels/head_kernels.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <new>

#include "kernels/head_kernels_simd.hpp"

namespace mhascope {
// ---------------------------------------------------------------------------------------------
// [SECTION] the switch
// ---------------------------------------------------------------------------------------------
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// What this CPU runs of what the build has, asked once (the answer cannot change).
struct CpuKernels {
  bool avx512 = false, avx2 = false;
  CpuKernels() {
#if defined(__x86_64__) && (defined(MHASCOPE_KERNELS_AVX512) || defined(MHASCOPE_KERNELS_AVX2))
    __builtin_cpu_init();
#endif
#ifdef MHASCOPE_KERNELS_AVX512
    avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl");
#endif
#ifdef MHASCOPE_KERNELS_AVX2
    avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
  }
};

const CpuKernels& cpuKernels() {
  static const CpuKernels cpu;
  return cpu;
}

std::atomic<HeadKernelIsa>& chosenIsa() {
  static std::atomic<HeadKernelIsa> chosen{bestHeadKernelIsa()};  // process-wide, like the GEMM backend's choice
  return chosen;
}

}  // namespace

bool headKernelIsaAvailable(HeadKernelIsa isa) {
  switch (isa) {
    case HeadKernelIsa::Avx512: return cpuKernels().avx512;
    case HeadKernelIsa::Avx2Fma: return cpuKernels().avx2;
    default: return true;
  }
}
HeadKernelIsa bestHeadKernelIsa() {
  if (cpuKernels().avx512) return HeadKernelIsa::Avx512;
  return cpuKernels().avx2 ? HeadKernelIsa::Avx2Fma : HeadKernelIsa::None;
}
HeadKernelIsa headKernelIsa() { return chosenIsa().load(std::memory_order_relaxed); }
bool setHeadKernelIsa(HeadKernelIsa isa) {
  if (!headKernelIsaAvailable(isa)) return false;
  chosenIsa().store(isa, std::memory_order_relaxed);
  return true;
}
const char* headKernelIsaName(HeadKernelIsa isa) {
  switch (isa) {
    case HeadKernelIsa::Avx512: return "AVX-512";
    case HeadKernelIsa::Avx2Fma: return "AVX2 + FMA";
    default: return "none";
  }
}

bool headKernelsAvailable() { return bestHeadKernelIsa() != HeadKernelIsa::None; }
bool headKernelsEnabled() { return headKernelIsa() != HeadKernelIsa::None; }
bool setHeadKernels(bool enabled) {
  if (enabled && !headKernelsAvailable()) return false;
  return setHeadKernelIsa(enabled ? bestHeadKernelIsa() : HeadKernelIsa::None);
}

// ---------------------------------------------------------------------------------------------
// [SECTION] the plain loops
// ---------------------------------------------------------------------------------------------
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
// [SECTION] entry points and packing
// ---------------------------------------------------------------------------------------------

float* simd::stripScratch() {
  struct Scratch {
    float* p = static_cast<float*>(::operator new(sizeof(float) * kKeyChunk * 64, std::align_val_t{64}));
    ~Scratch() { ::operator delete(p, std::align_val_t{64}); }
  };
  thread_local Scratch s;
  return s.p;
}

void scoresBlock(const float* q, const float* k, std::int64_t nq, std::int64_t Tk, std::int64_t dk, float factor,
                 const BlockedKeys* blocked, float* scores, float* weights, std::int64_t ld, float* rowMax,
                 const float* packedKeys) {
  if (dk >= 1 && dk <= kScoresBlockMaxDk) {
    switch (headKernelIsa()) {
#ifdef MHASCOPE_KERNELS_AVX512
      case HeadKernelIsa::Avx512:
        return simd::scoresBlockAvx512(q, k, nq, Tk, dk, factor, blocked, scores, weights, ld, rowMax, packedKeys);
#endif
#ifdef MHASCOPE_KERNELS_AVX2
      case HeadKernelIsa::Avx2Fma:
        return simd::scoresBlockAvx2(q, k, nq, Tk, dk, factor, blocked, scores, weights, ld, rowMax, packedKeys);
#endif
      default: break;
    }
  }
  scoresBlockPortable(q, k, nq, Tk, dk, factor, blocked, scores, weights, ld, rowMax);  // reads k itself
}

void productBlock(const float* a, std::int64_t lda, const float* b, std::int64_t ldb, std::int64_t m, std::int64_t k,
                  std::int64_t n, float* c, std::int64_t ldc, const float* start, const float* packed) {
  switch (headKernelIsa()) {
#ifdef MHASCOPE_KERNELS_AVX512
    case HeadKernelIsa::Avx512: return simd::productBlockAvx512(a, lda, b, ldb, m, k, n, c, ldc, start, packed);
#endif
#ifdef MHASCOPE_KERNELS_AVX2
    case HeadKernelIsa::Avx2Fma: return simd::productBlockAvx2(a, lda, b, ldb, m, k, n, c, ldc, start, packed);
#endif
    default: break;
  }
  productBlockPortable(a, lda, b, ldb, m, k, n, c, ldc, start);  // reads b itself
}

std::int64_t packedKeysFloats(std::int64_t Tk, std::int64_t dk) { return (Tk + 63) / 64 * 64 * dk; }

void packKeyChunks(const float* k, std::int64_t Tk, std::int64_t dk, std::int64_t c0, std::int64_t c1, float* packed) {
  switch (headKernelIsa()) {
#ifdef MHASCOPE_KERNELS_AVX512
    case HeadKernelIsa::Avx512: return simd::packKeyChunksAvx512(k, Tk, dk, c0, c1, packed);
#endif
#ifdef MHASCOPE_KERNELS_AVX2
    case HeadKernelIsa::Avx2Fma: return simd::packKeyChunksAvx2(k, Tk, dk, c0, c1, packed);
#endif
    default: break;
  }
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
