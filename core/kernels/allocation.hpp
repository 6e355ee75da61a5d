// Memory for the big tables: line-aligned buffers, and zeroed allocation that asks for huge pages
// and shares the first touch out among threads.
#pragma once

#include <cstddef>
#include <new>
#include <vector>

namespace mhascope {

// Memory for the trace's tables, aligned to a 64-byte cache line: a vector of 16 floats at the
// start of a line is one load or store instead of two halves (split across lines), and the
// attention kernel's streaming stores write whole lines (see storeRecord in head_kernels.cpp).
template <class T>
struct LineAligned {
  using value_type = T;
  static constexpr std::align_val_t kAlign{64};
  LineAligned() = default;
  template <class U>
  constexpr LineAligned(const LineAligned<U>&) noexcept {}
  T* allocate(std::size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), kAlign)); }
  void deallocate(T* p, std::size_t) noexcept { ::operator delete(p, kAlign); }
  template <class U>
  bool operator==(const LineAligned<U>&) const noexcept { return true; }
};
using FloatBuffer = std::vector<float, LineAligned<float>>;

// data = n zeros. Buffers of 8 MiB and more ask the kernel for 2 MiB pages (madvise) before their
// first touch: 512 times fewer page faults, which cost microseconds each on virtual machines. The
// first touch is shared out among `threads` threads: the kernel clears a fresh page on the CPU
// that faults on it, and clearing is most of a new big trace's time. The old buffer is given back
// first, so two big ones never exist at once.
void allocateZeroed(FloatBuffer& data, std::size_t n, int threads);

}  // namespace mhascope
