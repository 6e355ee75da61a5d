// Comparing our numbers with a PyTorch reference's, for the training module's tests.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>

namespace mhascope::train_testing {

// max |a - b| / (atol + rtol |b|) <= 1 over all entries, reporting the worst.
inline void expectClose(const float* a, const float* b, std::int64_t n, double atol, double rtol,
                        const std::string& what) {
  double worst = 0;
  std::int64_t at = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const double r = std::abs(static_cast<double>(a[i]) - b[i]) / (atol + rtol * std::abs(static_cast<double>(b[i])));
    if (!(r <= worst)) {
      worst = r;
      at = i;
    }
  }
  EXPECT_LE(worst, 1.0) << what << "[" << at << "]: ours " << a[at] << " torch " << b[at];
}

}  // namespace mhascope::train_testing
