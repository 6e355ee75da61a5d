// SGEMM dispatch: Eigen, or OpenBLAS (loaded with dlopen) when MHASCOPE_GEMM asks for it.
#include "kernels/gemm.hpp"

#include <dlfcn.h>

#include <Eigen/Core>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

namespace mhascope {
namespace {

// cblas_sgemm's signature with the CBLAS enum values as ints (101 = row-major, 111/112 = no/trans),
// so no BLAS header is needed at build time.
using CblasSgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*,
                            int);
using SetThreads = void (*)(int);
using GetConfig = const char* (*)();

struct OpenBlas {
  CblasSgemm sgemm = nullptr;
  std::string path, config;
};

// Debian's alternatives link first (whichever variant the system chose), then each variant's own
// path. The engine runs OpenBLAS on one thread per call: its threads would fight the engine's own.
const OpenBlas& openBlas() {
  static const OpenBlas lib = [] {
    OpenBlas o;
    const char* candidates[] = {"libopenblas.so.0", "/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0",
                                "/usr/lib/x86_64-linux-gnu/openblas-serial/libopenblas.so.0",
                                "/usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0"};
    for (const char* c : candidates) {
      void* h = dlopen(c, RTLD_NOW | RTLD_LOCAL);
      if (!h) continue;
      auto f = reinterpret_cast<CblasSgemm>(dlsym(h, "cblas_sgemm"));
      if (!f) {
        dlclose(h);
        continue;
      }
      if (auto set = reinterpret_cast<SetThreads>(dlsym(h, "openblas_set_num_threads"))) set(1);
      if (auto cfg = reinterpret_cast<GetConfig>(dlsym(h, "openblas_get_config"))) o.config = cfg();
      o.sgemm = f;
      o.path = c;
      Dl_info info{};
      if (dladdr(reinterpret_cast<void*>(f), &info) && info.dli_fname) o.path = info.dli_fname;
      break;
    }
    return o;
  }();
  return lib;
}

using Stride = Eigen::OuterStride<>;
using ConstMap = Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>, 0, Stride>;
using Map = Eigen::Map<Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>, 0, Stride>;

void eigenGemm(bool transA, bool transB, std::int64_t M, std::int64_t N, std::int64_t K, const float* A,
               std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C, std::int64_t ldc) {
  Map c(C, M, N, Stride(ldc));
  const ConstMap a(A, transA ? K : M, transA ? M : K, Stride(lda));
  const ConstMap b(B, transB ? N : K, transB ? K : N, Stride(ldb));
  // Four branches so that Eigen sees each product's storage order at compile time.
  auto run = [&](const auto& x, const auto& y) {
    if (beta == 0.0f) c.noalias() = x * y;
    else c.noalias() += x * y;
  };
  if (!transA && !transB) run(a, b);
  else if (!transA && transB) run(a, b.transpose());
  else if (transA && !transB) run(a.transpose(), b);
  else run(a.transpose(), b.transpose());
}

// One timing: a projection-sized and a head-sized product (the engine's two kinds of GEMM), the best
// of `rounds`.
double measureGflops(GemmBackend backend, int rounds) {
  struct Shape {
    std::int64_t m, n, k;
  };
  const Shape shapes[] = {{256, 256, 256}, {128, 128, 64}};
  double flops = 0;
  for (const Shape& s : shapes) flops += 2.0 * static_cast<double>(s.m * s.n * s.k);
  std::vector<float> a(256 * 256, 0.5f), b(256 * 256, 0.25f), c(256 * 256);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i % 17) * 0.01f;
  double best = 1e30;
  for (int r = 0; r < rounds; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (const Shape& s : shapes) {
      sgemmWith(backend, false, false, s.m, s.n, s.k, a.data(), s.k, b.data(), s.n, 0.0f, c.data(), s.n);
    }
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return flops / best / 1e9;
}

std::atomic<int> forced{-1};  // setGemmBackend: -1 none, else the backend

// Eigen allocates its packing buffers (hundreds of KiB) on every product. glibc starts out serving
// such a request from a fresh mapping (mmap threshold 128 KiB) and giving a free heap top over
// 128 KiB back to the kernel, so every product faulted its buffers in afresh: a 256³ product ran
// at 31-37 GFLOP/s against ~150 once the buffers stay. glibc raises both thresholds — to the size of a freed
// mapping, and twice that — the first time a mapping is freed, which a process with big tensors
// soon does anyway; one 16 MiB block allocated and freed does it before the first product.
// (Where the thresholds were set explicitly, as the window does, this changes nothing.)
void settleAllocator() {
  void* volatile block = std::malloc(std::size_t{16} << 20);  // volatile: the pair is not elided
  std::free(block);
}

GemmChoice decide() {
  // Eigen allocates its packing buffers on every product: settle the allocator's thresholds before
  // the first one (see settleAllocator).
  settleAllocator();
  GemmChoice g;
  g.openblasPath = openBlas().path;
  g.how = "the default";
  const char* env = std::getenv("MHASCOPE_GEMM");
  if (env && std::strcmp(env, "eigen") == 0) {
    g.how = "MHASCOPE_GEMM=eigen";
  } else if (env && std::strcmp(env, "openblas") == 0) {
    if (openBlas().sgemm) {
      g.backend = GemmBackend::OpenBlas;
      g.how = "MHASCOPE_GEMM=openblas";
    } else {
      g.how = "MHASCOPE_GEMM=openblas, but no OpenBLAS found (install libopenblas0-pthread)";
    }
  }
  return g;
}

GemmChoice& choiceStorage() {
  static GemmChoice c = decide();
  return c;
}
std::mutex choiceMutex;

}  // namespace

const GemmChoice& gemmChoice() {
  static std::once_flag once;
  std::call_once(once, [] { choiceStorage(); });
  return choiceStorage();
}

GemmSpeeds measureGemmBackends() {
  gemmChoice();  // the allocator settled first, as for every product
  GemmSpeeds s;
  // Warm both up (first calls page in code and buffers), then interleave the timed rounds.
  const bool openblas = openBlas().sgemm != nullptr;
  measureGflops(GemmBackend::Eigen, 1);
  if (openblas) measureGflops(GemmBackend::OpenBlas, 1);
  for (int i = 0; i < 5; ++i) {
    s.eigenGflops = std::max(s.eigenGflops, measureGflops(GemmBackend::Eigen, 2));
    if (openblas) s.openblasGflops = std::max(s.openblasGflops, measureGflops(GemmBackend::OpenBlas, 2));
  }
  return s;
}

bool openBlasAvailable() { return openBlas().sgemm != nullptr; }

std::string gemmName(GemmBackend backend) {
  if (backend == GemmBackend::Eigen) {
    return "Eigen " + std::to_string(EIGEN_WORLD_VERSION) + "." + std::to_string(EIGEN_MAJOR_VERSION) + "." +
           std::to_string(EIGEN_MINOR_VERSION);
  }
  const OpenBlas& o = openBlas();
  return (o.config.empty() ? std::string("OpenBLAS") : o.config) + " (" + o.path + ")";
}

bool setGemmBackend(GemmBackend backend) {
  if (backend == GemmBackend::OpenBlas && !openBlasAvailable()) return false;
  gemmChoice();
  std::lock_guard<std::mutex> lock(choiceMutex);
  GemmChoice& c = choiceStorage();
  c.backend = backend;
  c.how = "set by the program";
  forced.store(static_cast<int>(backend));
  return true;
}

void sgemmWith(GemmBackend backend, bool transA, bool transB, std::int64_t M, std::int64_t N, std::int64_t K,
               const float* A, std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C,
               std::int64_t ldc) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0) {  // an empty sum: C = beta C
    for (std::int64_t i = 0; i < M; ++i) {
      if (beta == 0.0f) std::fill(C + i * ldc, C + i * ldc + N, 0.0f);
    }
    return;
  }
  if (backend == GemmBackend::OpenBlas && openBlas().sgemm) {
    openBlas().sgemm(101, transA ? 112 : 111, transB ? 112 : 111, static_cast<int>(M), static_cast<int>(N),
                     static_cast<int>(K), 1.0f, A, static_cast<int>(lda), B, static_cast<int>(ldb), beta, C,
                     static_cast<int>(ldc));
    return;
  }
  eigenGemm(transA, transB, M, N, K, A, lda, B, ldb, beta, C, ldc);
}

void sgemm(bool transA, bool transB, std::int64_t M, std::int64_t N, std::int64_t K, const float* A,
           std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C, std::int64_t ldc) {
  const int f = forced.load(std::memory_order_relaxed);
  const GemmBackend backend = f >= 0 ? static_cast<GemmBackend>(f) : gemmChoice().backend;
  sgemmWith(backend, transA, transB, M, N, K, A, lda, B, ldb, beta, C, ldc);
}

}  // namespace mhascope
