#include "train_lab/curve_columns.hpp"

#include <cmath>
#include <cstddef>

namespace mhascope::app {

std::vector<ImVec2> m4Columns(const std::vector<ImVec2>& pts) {
  std::vector<ImVec2> out;
  out.reserve(pts.size());
  std::size_t begin = 0;
  while (begin < pts.size()) {
    const float column = std::floor(pts[begin].x);
    std::size_t end = begin + 1;
    while (end < pts.size() && std::floor(pts[end].x) == column) ++end;
    if (end - begin <= 4) {
      out.insert(out.end(), pts.begin() + static_cast<std::ptrdiff_t>(begin), pts.begin() + static_cast<std::ptrdiff_t>(end));
    } else {
      std::size_t lo = begin, hi = begin;  // screen y grows downwards: lo = smallest y
      for (std::size_t i = begin; i < end; ++i) {
        if (pts[i].y < pts[lo].y) lo = i;
        if (pts[i].y > pts[hi].y) hi = i;
      }
      const std::size_t first = begin, last = end - 1;
      const std::size_t a = lo < hi ? lo : hi, b = lo < hi ? hi : lo;  // in order along the curve
      out.push_back(pts[first]);
      if (a != first) out.push_back(pts[a]);
      if (b != a && b != last) out.push_back(pts[b]);
      if (last != first) out.push_back(pts[last]);
    }
    begin = end;
  }
  return out;
}

}  // namespace mhascope::app
