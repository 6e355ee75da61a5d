// Measures single-thread Eigen float GEMM speed for the -march this file was compiled with.
// scripts/setup.sh builds it once per candidate flag and keeps the fastest (measure, don't guess).
#include <Eigen/Core>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

int main() {
  using M = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const int n = 512;
  M a = M::Random(n, n), b = M::Random(n, n), c(n, n);
  c.noalias() = a * b;  // warm-up
  std::vector<double> t;
  for (int i = 0; i < 15; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    c.noalias() = a * b;
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  std::printf("%.1f\n", 2.0 * n * n * n / t[t.size() / 2] / 1e9 + 0 * c(0, 0));
  return 0;
}
