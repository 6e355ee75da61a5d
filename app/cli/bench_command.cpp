// `mhascope bench`: median forward time, GFLOP/s, and the ratio to the engine's own GEMM.
#include "bench_command.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "attention/engine.hpp"
#include "attention/gemm.hpp"

namespace mhascope::cli {
namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double secondsOf(const std::chrono::steady_clock::time_point& a, const std::chrono::steady_clock::time_point& b) {
  return std::chrono::duration<double>(b - a).count();
}

void printGemmChoice() {
  const GemmChoice& g = gemmChoice();
  std::printf("gemm: %s", gemmName(g.backend).c_str());
  if (g.how == "measured") {
    std::printf(" (measured at start-up, one thread: Eigen %.1f GFLOP/s, OpenBLAS %.1f GFLOP/s)\n", g.eigenGflops,
                g.openblasGflops);
  } else {
    std::printf(" (%s)\n", g.how.c_str());
  }
}

}  // namespace

Status cmdBench(const ModelOptions& mo, const BenchArgs& a) {
  using Clock = std::chrono::steady_clock;
  if (a.repeat < 1) return makeError("--repeat must be at least 1, got " + std::to_string(a.repeat));
  if (a.threads < 1 || a.threads > 64) return makeError("--threads must be 1 to 64, got " + std::to_string(a.threads));
  if (!a.gemm.empty() && a.gemm != "eigen" && a.gemm != "openblas") {
    return makeError("--gemm must be eigen or openblas, got '" + a.gemm + "'");
  }
  if (a.gemm == "openblas" && !setGemmBackend(GemmBackend::OpenBlas)) {
    return makeError("--gemm openblas: no OpenBLAS library found (Debian: libopenblas0-pthread)");
  }
  if (a.gemm == "eigen") setGemmBackend(GemmBackend::Eigen);
  auto r = resolveModel(mo);
  if (!r) return r.error();
  const Model& m = r->model;
  AttentionOptions many = m.options, one = m.options;
  many.threads = a.threads;
  one.threads = 1;
  const auto B = m.inputs.query.dim(0), Tq = m.inputs.query.dim(1), Tk = m.inputs.key.dim(1),
             d = m.inputs.query.dim(2);
  const FlopCount f = countFlops(B, Tq, Tk, d, m.options.heads);
  // The reference: one GEMM (M x K) * (K x N) on the engine's backend, M = B*T_q, K = d_model and N
  // chosen so that it does the same number of FLOPs as one forward.
  const std::int64_t M = B * Tq, K = d;
  const std::int64_t N = std::max<std::int64_t>(
      1, static_cast<std::int64_t>(f.total() / (2.0 * static_cast<double>(M) * static_cast<double>(K)) + 0.5));
  std::vector<float> ga(static_cast<std::size_t>(M * K)), gb(static_cast<std::size_t>(K * N)),
      gc(static_cast<std::size_t>(M * N));
  for (std::size_t i = 0; i < ga.size(); ++i) ga[i] = static_cast<float>(i % 13) * 0.1f - 0.6f;
  for (std::size_t i = 0; i < gb.size(); ++i) gb[i] = static_cast<float>(i % 7) * 0.1f - 0.3f;
  auto gemm = [&] { sgemm(false, false, M, N, K, ga.data(), K, gb.data(), N, 0.0f, gc.data(), N); };
  Trace trace, trace1;
  if (auto s = forward(m.inputs, m.weights, many, trace); !s) return s;  // warm-up
  if (a.threads > 1) (void)forward(m.inputs, m.weights, one, trace1);
  gemm();
  std::vector<double> tf, t1, tg;
  for (int i = 0; i < a.repeat; ++i) {  // interleaved, so all see the same machine load
    const auto c0 = Clock::now();
    (void)forward(m.inputs, m.weights, many, trace);
    const auto c1 = Clock::now();
    gemm();
    const auto c2 = Clock::now();
    tf.push_back(secondsOf(c0, c1));
    tg.push_back(secondsOf(c1, c2));
    if (a.threads > 1) {
      const auto c3 = Clock::now();
      (void)forward(m.inputs, m.weights, one, trace1);
      t1.push_back(secondsOf(c3, Clock::now()));
    }
  }
  const double mf = median(tf), mg = median(tg);
  const double gemmFlops = 2.0 * static_cast<double>(M) * static_cast<double>(K) * static_cast<double>(N);
  std::printf("config: %s (threads: %d)\n", describe(*r, trace).c_str(), a.threads);
  printGemmChoice();
  std::printf("flops per forward: %.3f GFLOP (projections %.3f, attention %.3f)\n", f.total() / 1e9,
              f.projections / 1e9, f.attention / 1e9);
  std::printf("forward with full recording: median %.3f ms over %d runs -> %.1f GFLOP/s\n", mf * 1e3, a.repeat,
              f.total() / mf / 1e9);
  if (a.threads > 1) {
    const double m1 = median(t1);
    std::printf("forward on 1 thread: median %.3f ms -> %d threads are %.2fx faster\n", m1 * 1e3, a.threads, m1 / mf);
  }
  std::printf("%s gemm %lldx%lld * %lldx%lld (same FLOPs, one thread): median %.3f ms -> %.1f GFLOP/s\n",
              gemmChoice().backend == GemmBackend::OpenBlas ? "openblas" : "eigen", static_cast<long long>(M),
              static_cast<long long>(K), static_cast<long long>(K), static_cast<long long>(N), mg * 1e3,
              gemmFlops / mg / 1e9);
  std::printf("ratio-to-gemm: %.3f\n", (f.total() / mf) / (gemmFlops / mg));
  return Ok{};
}

}  // namespace mhascope::cli
