// Runs a test once per head-kernel variant: the test's parameter is the variant (None: the plain
// loops, and the general path for the dispatch), chosen for the test and the previous choice
// restored after it. A variant this CPU lacks skips with a message, so the tests pass on any
// x86-64 CPU and test every variant the CPU runs. Also what every kernel test shares: kInf and a
// guard that restores the kernel choice.
#pragma once

#include <gtest/gtest.h>

#include <limits>
#include <ostream>
#include <string>

#include "kernels/head_kernels.hpp"

namespace mhascope {

inline constexpr float kInf = std::numeric_limits<float>::infinity();

// Restores the process-wide kernel choice after a test changes it.
struct KeepHeadKernels {
  bool before = headKernelsEnabled();
  ~KeepHeadKernels() { setHeadKernels(before); }
};

inline void PrintTo(HeadKernelIsa isa, std::ostream* os) { *os << headKernelIsaName(isa); }

class KernelVariantTest : public ::testing::TestWithParam<HeadKernelIsa> {
 protected:
  void SetUp() override {
    if (!headKernelIsaAvailable(GetParam())) {
      GTEST_SKIP() << "this CPU does not run the " << headKernelIsaName(GetParam())
                   << " head kernels (they are tested on one that does)";
    }
    ASSERT_TRUE(setHeadKernelIsa(GetParam()));
  }
  void TearDown() override { setHeadKernelIsa(before_); }
  // The vector variants read packed keys and strips; the plain loops read k and b themselves.
  bool vector() const { return GetParam() != HeadKernelIsa::None; }

 private:
  HeadKernelIsa before_ = headKernelIsa();
};

inline auto everyKernelVariant() {
  return ::testing::Values(HeadKernelIsa::None, HeadKernelIsa::Avx2Fma, HeadKernelIsa::Avx512);
}

// Test names: .../General, .../Avx2Fma, .../Avx512.
inline std::string kernelVariantName(const ::testing::TestParamInfo<HeadKernelIsa>& info) {
  switch (info.param) {
    case HeadKernelIsa::Avx512: return "Avx512";
    case HeadKernelIsa::Avx2Fma: return "Avx2Fma";
    default: return "General";
  }
}

}  // namespace mhascope
