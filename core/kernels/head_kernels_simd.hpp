// Inside the head kernels (head_kernels.hpp): which vector variants this compiler builds, their
// entry points (one translation unit each: head_kernels_avx512.cpp, head_kernels_avx2.cpp) and what
// they share with head_kernels.cpp. Only head_kernels*.cpp include this; nothing here checks the
// CPU: head_kernels.cpp calls a variant only after asking the CPU whether it runs it.
#pragma once

#include <cstdint>

#include "kernels/row_kernels.hpp"  // BlockedKeys

// GCC compiles each variant for its instructions by a target pragma whatever -march is, so that a
// default (x86-64) or an x86-64-v3 build carries both. Other compilers build a variant only when
// the whole build targets its instructions already.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define MHASCOPE_KERNELS_BY_PRAGMA 1
#define MHASCOPE_KERNELS_AVX512 1
#define MHASCOPE_KERNELS_AVX2 1
#else
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
#define MHASCOPE_KERNELS_AVX512 1
#endif
#if defined(__AVX2__) && defined(__FMA__)
#define MHASCOPE_KERNELS_AVX2 1
#endif
#endif

namespace mhascope {
namespace simd {

// productBlock: k per pass, so b's rows stay in cache (a strip of 1024 rows of 64 floats is 256 KiB;
// fewer passes than 512 rows, and the sums are the same either way).
constexpr std::int64_t kKeyChunk = 1024;

// A thread's scratch for one packed strip (kKeyChunk rows of 64 floats, 256 KiB, 64-byte aligned),
// allocated on its first product and kept: one allocation per thread, not per call (a fresh
// 256 KiB block would be a fresh mapping for glibc, faulted in every time).
float* stripScratch();

// The contracts of head_kernels.hpp (the scores for d_k in [1, kScoresBlockMaxDk]), per variant.
#ifdef MHASCOPE_KERNELS_AVX512
void scoresBlockAvx512(const float* q, const float* k, std::int64_t nq, std::int64_t Tk, std::int64_t dk, float factor,
                    const BlockedKeys* blocked, float* scores, float* weights, std::int64_t ld, float* rowMax,
                    const float* packedKeys);
void productBlockAvx512(const float* a, std::int64_t lda, const float* b, std::int64_t ldb, std::int64_t m,
                     std::int64_t k, std::int64_t n, float* c, std::int64_t ldc, const float* start,
                     const float* packed);
void packKeyChunksAvx512(const float* k, std::int64_t Tk, std::int64_t dk, std::int64_t c0, std::int64_t c1,
                      float* packed);
#endif
#ifdef MHASCOPE_KERNELS_AVX2
void scoresBlockAvx2(const float* q, const float* k, std::int64_t nq, std::int64_t Tk, std::int64_t dk, float factor,
                    const BlockedKeys* blocked, float* scores, float* weights, std::int64_t ld, float* rowMax,
                    const float* packedKeys);
void productBlockAvx2(const float* a, std::int64_t lda, const float* b, std::int64_t ldb, std::int64_t m,
                     std::int64_t k, std::int64_t n, float* c, std::int64_t ldc, const float* start,
                     const float* packed);
void packKeyChunksAvx2(const float* k, std::int64_t Tk, std::int64_t dk, std::int64_t c0, std::int64_t c1,
                      float* packed);
#endif

}  // namespace simd
}  // namespace mhascope
