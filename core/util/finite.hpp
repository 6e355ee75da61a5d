// How many of n floats are NaN or ±Inf: one branch-free pass (it vectorizes; NaN fails the
// comparison too), for the checks that look for detail only when something is wrong.
#pragma once

#include <cfloat>
#include <cmath>
#include <cstddef>

namespace mhascope {

inline std::size_t countNonFinite(const float* v, std::size_t n) {
  std::size_t bad = 0;
  for (std::size_t i = 0; i < n; ++i) bad += !(std::fabs(v[i]) <= FLT_MAX);
  return bad;
}

}  // namespace mhascope
