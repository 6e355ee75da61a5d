// Zeroed allocation with huge pages (allocation.hpp).
#include "kernels/allocation.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "util/thread_pool.hpp"

namespace mhascope {

void allocateZeroed(FloatBuffer& data, std::size_t n, int threads) {
  constexpr std::size_t kHuge = std::size_t{2} << 20;
  if (n * sizeof(float) < 4 * kHuge) {
    data.assign(n, 0.0f);
    return;
  }
  FloatBuffer().swap(data);  // give the old buffer back first: never two big ones at once
  data.reserve(n);           // allocated, not yet touched
  const auto begin = reinterpret_cast<std::uintptr_t>(data.data());
  const std::uintptr_t first = (begin + kHuge - 1) & ~(kHuge - 1);
  const std::uintptr_t last = (begin + n * sizeof(float)) & ~(kHuge - 1);
  if (last > first) madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);  // a hint; may be refused
  if (threads > 1) {  // fault the pages in, 2 MiB a task; resize below then writes warm memory
    auto* bytes = reinterpret_cast<unsigned char*>(data.data());
    const std::size_t size = n * sizeof(float);
    parallelFor(threads, static_cast<std::int64_t>((size + kHuge - 1) / kHuge), [&](std::int64_t c) {
      const std::size_t at = static_cast<std::size_t>(c) * kHuge;
      std::memset(bytes + at, 0, std::min(kHuge, size - at));
    });
  }
  data.resize(n);  // zeros, faulted in 2 MiB at a time where the kernel agreed
}

}  // namespace mhascope
