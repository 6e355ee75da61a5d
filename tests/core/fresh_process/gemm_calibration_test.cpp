// The GEMM's first use as the first thing a process does, in its own executable: in the core
// tests' process earlier tests have long since moved glibc's allocation thresholds.
//
// Eigen allocates its packing buffers on every product. In a fresh process those buffers were
// each a fresh mapping, faulted in again for every product (a 256³ product at 31-37 GFLOP/s
// against ~150 in steady state). The GEMM's first use now settles the allocator first
// (settleAllocator in core/attention/gemm.cpp); this checks that a buffer of a product's size then
// comes from the heap, not from a mapping of its own — glibc's behaviour on every x86-64 machine.
#include <gtest/gtest.h>
#include <malloc.h>

#include <cstdlib>

#include "kernels/gemm.hpp"

namespace mhascope {
namespace {

TEST(GemmCalibrationFirst, LeavesProductSizedBuffersOnTheHeap) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer has its own allocator";
#else
  gemmChoice();  // what the first product of a process does: settle the allocator, read MHASCOPE_GEMM
  // 1 MiB: more than glibc's starting mmap threshold (128 KiB), the size of Eigen's packing
  // buffers for the engine's projections.
  const auto mapped = [] { return mallinfo2().hblks; };
  const auto before = mapped();
  void* volatile block = std::malloc(std::size_t{1} << 20);
  const auto during = mapped();
  std::free(block);
  EXPECT_EQ(during, before) << "a 1 MiB buffer got a mapping of its own: every GEMM would fault its buffers in";
#endif
}

}  // namespace
}  // namespace mhascope
