// The window's heap kept warm (app/shell/heap_reserve): after warmHeap() the pages it touched stay
// with the process as free heap at the top, so a later frame that needs them takes no page faults.
// Page faults and mallinfo are machine internals (the allocator, the kernel), so this test carries
// the CTest label `perf` and stays out of the default run.
#include <gtest/gtest.h>
#include <malloc.h>
#include <sys/resource.h>

#include <cstdlib>
#include <cstring>

#include "shell/heap_reserve.hpp"

using namespace mhascope::app;

TEST(HeapReserve, WarmedPagesStayAndAreReusedWithoutFaults) {
  ASSERT_TRUE(keepHeapPages());
  ASSERT_EQ(warmHeap(), HeapReserve::kWarmBytes);
  // glibc's default trim threshold (128 KiB) would have given the top back on the last free
  EXPECT_GE(mallinfo2().keepcost, HeapReserve::kWarmBytes / 2) << "the warmed top was trimmed";
  // Another frame's worth of blocks under the mmap threshold: served from the warm top.
  rusage before{}, after{};
  getrusage(RUSAGE_THREAD, &before);
  constexpr std::size_t kBlock = 64 << 10, kCount = 120;  // 7.5 MiB in llvmpipe's scene block size
  void* blocks[kCount];
  for (void*& b : blocks) {
    b = std::malloc(kBlock);
    ASSERT_NE(b, nullptr);
    std::memset(b, 1, kBlock);
  }
  getrusage(RUSAGE_THREAD, &after);
  for (void* b : blocks) std::free(b);
  EXPECT_LT(after.ru_minflt - before.ru_minflt, 64) << "pages of the warm heap faulted in again";
}
