// The window's heap kept warm. On virtual machines like this project's the first touch of a page
// costs ~15 µs (the host backs it), and a software renderer (llvmpipe) mallocs and frees megabytes
// of vertex and bin memory per frame. With glibc's defaults the heap's free top goes back to the
// kernel after such a frame (trim threshold 128 KiB), so a frame that draws more than any before
// it faults its memory in again: the Train mode's first frame with curves and the probe grid took
// ~530 page faults and 9-13 ms more in ImGui_ImplOpenGL3_RenderDrawData; with the heap kept warm,
// 3 faults and 1.5-2.2 ms (getrusage around the draw, temporary timers, under Xvfb).
#pragma once

#include <cstddef>

namespace mhascope::app {

struct HeapReserve {
  // glibc keeps up to this much free heap at the top instead of trimming it, and allocations
  // from kMmapThresholdBytes on are their own mappings, given back when freed (a long sequence's
  // big tables). These are the values glibc's own dynamic thresholds end at (after the first
  // free of a 32 MiB block); set from the start, frames before that do not lose their pages.
  static constexpr std::size_t kTrimThresholdBytes = std::size_t{64} << 20;
  static constexpr std::size_t kMmapThresholdBytes = std::size_t{32} << 20;
  // touched once after the first frame, then free: later frames' growth up to this is fault-free
  static constexpr std::size_t kWarmBytes = std::size_t{16} << 20;
};

// Sets the two thresholds (once, at start-up; glibc's mallopt). False if glibc refused one.
bool keepHeapPages();
// Allocates kWarmBytes of heap in 64 KiB blocks (under the mmap threshold), touches every page
// and frees them: the heap's top stays that large and resident. Returns the bytes touched.
std::size_t warmHeap();

}  // namespace mhascope::app
