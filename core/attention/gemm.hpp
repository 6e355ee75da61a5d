// One SGEMM for the engine and the trainer: Eigen's, or OpenBLAS's when the machine has it and it
// is faster there. The choice is measured once per process (a short calibration on the first
// call, a few milliseconds), not assumed: on one CPU OpenBLAS's own kernels beat Eigen's, on
// another Eigen with -march=native may win. Given the choice, results are deterministic.
// OpenBLAS is loaded at run time (dlopen of libopenblas.so.0, Debian's libopenblas0-pthread), so a
// machine without it still runs, on Eigen. MHASCOPE_GEMM=eigen|openblas skips the measurement.
#pragma once

#include <cstdint>
#include <string>

#include "util/thread_pool.hpp"  // parallelFor, which the engine and the trainer use beside sgemm

namespace mhascope {

enum class GemmBackend { Eigen, OpenBlas };

struct GemmChoice {
  GemmBackend backend = GemmBackend::Eigen;
  double eigenGflops = 0;     // measured in the calibration (0 when it was skipped)
  double openblasGflops = 0;  // 0 when OpenBLAS is missing or the calibration was skipped
  std::string openblasPath;   // the library loaded, empty when none
  std::string how;            // "measured", "MHASCOPE_GEMM=eigen", "no OpenBLAS", "set by the program"
};

// The backend in use (calibrates on the first call; thread-safe).
const GemmChoice& gemmChoice();
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

// The same on the given backend (tests, calibration).
void sgemmWith(GemmBackend backend, bool transA, bool transB, std::int64_t M, std::int64_t N, std::int64_t K,
               const float* A, std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C,
               std::int64_t ldc);

}  // namespace mhascope
