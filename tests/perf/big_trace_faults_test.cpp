// Machine internals, not behaviour: how many page faults a big trace costs depends on the kernel's
// transparent huge pages and the allocator, so this test carries the CTest label `perf` and stays
// out of the default run (`ctest --test-dir build -L perf` runs it).
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <fstream>
#include <iterator>
#include <string>

#include "attention/engine.hpp"
#include "attention/model.hpp"

namespace mhascope {
namespace {

#if defined(__SANITIZE_ADDRESS__)
#define MHASCOPE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MHASCOPE_ASAN 1
#endif
#endif

TEST(BigTraces, AreFaultedInLargePagesWhereTheKernelAllows) {
#ifdef MHASCOPE_ASAN
  GTEST_SKIP() << "AddressSanitizer's allocator and shadow memory fault pages of their own";
#endif
  std::ifstream thp("/sys/kernel/mm/transparent_hugepage/enabled");
  const std::string mode((std::istreambuf_iterator<char>(thp)), std::istreambuf_iterator<char>());
  ModelConfig c;
  c.tokens = 1024;
  c.dModel = 64;
  c.heads = 16;  // 4 score tables of 64 MiB: 65536 pages of 4 KiB
  c.mask = MaskKind::None;
  c.memoryBudgetBytes = std::uint64_t{4} << 30;
  auto m = buildModel(c);
  ASSERT_TRUE(m.ok()) << m.error().message;
  Trace t;
  rusage before{}, after{};
  getrusage(RUSAGE_SELF, &before);
  ASSERT_TRUE(forward(m->inputs, m->weights, m->options, t).ok());
  getrusage(RUSAGE_SELF, &after);
  if (mode.empty() || mode.find("[never]") != std::string::npos) GTEST_SKIP() << "no transparent huge pages here";
  // With 2 MiB pages about 130 faults for the tables; without, 65536. A quarter is a lenient line.
  EXPECT_LT(after.ru_minflt - before.ru_minflt, 16384) << "page faults for a 256 MiB trace";
}

}  // namespace
}  // namespace mhascope
