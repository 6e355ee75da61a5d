// parallelFor's pool (core/util/thread_pool): every index once, handed out to whichever thread is
// free, exceptions passed on, many small calls, nested calls and callers on several threads at once
// (the window's compute worker and the trainer may both be inside it).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "util/thread_pool.hpp"

namespace mhascope {
namespace {

using namespace std::chrono_literals;

// Spins until `flag` reaches `value` or 10 s pass; false on the timeout.
bool waitFor(const std::atomic<int>& flag, int value) {
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (flag.load() < value) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::yield();
  }
  return true;
}

// Index 0 waits for 1, 2 and 3: with contiguous ranges per thread (0 and 1 on one thread) it
// would wait forever; handed out one at a time, the other thread does 1, 2 and 3.
TEST(ThreadPool, AStalledIndexDoesNotHoldTheOthersBack) {
  for (int round = 0; round < 20; ++round) {
    std::atomic<int> done{0};
    std::atomic<bool> timedOut{false};
    parallelFor(2, 4, [&](std::int64_t i) {
      if (i == 0 && !waitFor(done, 3)) timedOut = true;
      if (i != 0) done++;
    });
    ASSERT_FALSE(timedOut) << "round " << round;
  }
}

TEST(ThreadPool, ManySmallCallsRunEveryIndexOnceOnAFewLastingThreads) {
  std::vector<std::atomic<int>> hits(5);
  for (int call = 0; call < 20000; ++call) {
    parallelFor(2 + call % 3, 5, [&](std::int64_t i) { hits[static_cast<std::size_t>(i)]++; });
  }
  for (const auto& h : hits) EXPECT_EQ(h.load(), 20000);
  EXPECT_LE(poolThreads(), 63);  // started once, kept: not one per call
  const int before = poolThreads();
  for (int call = 0; call < 100; ++call) parallelFor(4, 5, [](std::int64_t) {});
  EXPECT_EQ(poolThreads(), before);
}

TEST(ThreadPool, RethrowsTheLowestIndexsExceptionAndStaysUsable) {
  for (int threads : {1, 2, 3, 8}) {
    try {
      parallelFor(threads, 40, [](std::int64_t i) {
        if (i == 3 || i == 30) throw std::runtime_error("index " + std::to_string(i));
      });
      ADD_FAILURE() << "no exception on " << threads << " threads";
    } catch (const std::runtime_error& e) {
      // 3 is handed out before 30, and the handing out stops at the first exception.
      EXPECT_EQ(std::string(e.what()), "index 3") << threads << " threads";
    }
    std::atomic<int> sum{0};
    parallelFor(threads, 100, [&](std::int64_t i) { sum += static_cast<int>(i); });
    EXPECT_EQ(sum.load(), 4950);
  }
}

TEST(ThreadPool, NestedCallsAndCallersOnSeveralThreadsAtOnce) {
  std::atomic<long> total{0};
  auto caller = [&total] {
    for (int call = 0; call < 300; ++call) {
      parallelFor(2, 6, [&total](std::int64_t i) {
        parallelFor(3, 4, [&total, i](std::int64_t j) { total += i * 4 + j; });  // nested: never waits for a free thread
      });
    }
  };
  std::thread a(caller), b(caller);
  caller();
  a.join();
  b.join();
  EXPECT_EQ(total.load(), 3L * 300 * (23 * 24 / 2));
}

}  // namespace
}  // namespace mhascope
