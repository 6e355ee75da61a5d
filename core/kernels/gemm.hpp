// One SGEMM for the engine and the trainer: Eigen's by default, or OpenBLAS's when asked for
// (MHASCOPE_GEMM=openblas; loaded at run time with dlopen of libopenblas.so.0, Debian's
// libopenblas0-pthread, so a machine without it still runs, on Eigen).
// The choice is never made by timing: the two backends sum in different orders, so their results
// differ in the last bits, and a choice measured at start-up flipped between processes on a busy
// machine where the two run at the same speed (an AVX2 Zen 3: 68 against 65 GFLOP/s) — the same
// command then gave other numbers. Given the backend, results are deterministic; `mhascope bench`
// measures both (measureGemmBackends) and says which is faster here.
#pragma once

#include <cstdint>
#include <string>

#include "util/thread_pool.hpp"  // parallelFor, which the engine and the trainer use beside sgemm

namespace mhascope {

enum class GemmBackend { Eigen, OpenBlas };

struct GemmChoice {
  GemmBackend backend = GemmBackend::Eigen;
  std::string openblasPath;   // the library loaded, empty when none
  std::string how;            // "the default", "MHASCOPE_GEMM=openblas", "set by the program", ...
};

// The backend in use (decided on the first call from MHASCOPE_GEMM, never by timing; thread-safe).
const GemmChoice& gemmChoice();

// Both backends' speed on this machine, one thread, best of interleaved rounds of a projection-sized
// and a head-sized product (a few ms). openblas is 0 when OpenBLAS is missing. Changes no choice.
struct GemmSpeeds {
  double eigenGflops = 0, openblasGflops = 0;
};
GemmSpeeds measureGemmBackends();
// "OpenBLAS 0.3.21 (/usr/lib/…/libopenblas.so.0)" or "Eigen 3.4.0".
std::string gemmName(GemmBackend backend);
bool openBlasAvailable();
// Forces a backend for the rest of the process (tests compare the two; bench may pin one).
// Returns false, changing nothing, when OpenBLAS is asked for but missing.
bool setGemmBackend(GemmBackend backend);

// C = op(A) op(B) + beta C, all row-major with leading dimensions (elements per row):
// op(A) is (M, K), op(B) is (K, N), C is (M, N); transA/transB read A/B as stored transposed.
// beta is 0 (overwrite) or 1 (accumulate). Runs on the calling thread only.
void sgemm(bool transA, bool transB, std::int64_t M, std::int64_t N, std::int64_t K, const float* A,
           std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C, std::int64_t ldc);

// The same on the given backend (tests, measureGemmBackends).
void sgemmWith(GemmBackend backend, bool transA, bool transB, std::int64_t M, std::int64_t N, std::int64_t K,
               const float* A, std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C,
               std::int64_t ldc);

}  // namespace mhascope
