#include "shell/heap_reserve.hpp"

#include <malloc.h>

#include <cstdlib>
#include <cstring>
#include <vector>

namespace mhascope::app {

bool keepHeapPages() {
  const bool trim = mallopt(M_TRIM_THRESHOLD, static_cast<int>(HeapReserve::kTrimThresholdBytes)) == 1;
  const bool mmap = mallopt(M_MMAP_THRESHOLD, static_cast<int>(HeapReserve::kMmapThresholdBytes)) == 1;
  return trim && mmap;
}

std::size_t warmHeap() {
  constexpr std::size_t kBlock = std::size_t{64} << 10;
  std::vector<void*> blocks;
  blocks.reserve(HeapReserve::kWarmBytes / kBlock);
  std::size_t touched = 0;
  for (std::size_t i = 0; i < HeapReserve::kWarmBytes / kBlock; ++i) {
    void* b = std::malloc(kBlock);
    if (!b) break;
    std::memset(b, 0xA5, kBlock);  // not 0: malloc + memset(0) may become calloc, which skips fresh pages
    blocks.push_back(b);
    touched += kBlock;
  }
  for (void* b : blocks) std::free(b);
  return touched;
}

}  // namespace mhascope::app
