// The pipeline's trace job (app/shell/compute_worker.cpp) driven as the window drives it, from
// one "UI" thread: requests submitted faster than they finish, results taken and released, the
// progress read while a job runs. The newest request's result always arrives, equal to the
// forward computed directly, and no older one arrives after it. Here, in the threaded code's
// binary, so that ThreadSanitizer watches the buffers handed back and forth.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <thread>

#include "shell/compute_worker.hpp"

namespace mhascope::app {
namespace {

ComputeRequest requestOf(int tokens, int dModel, int heads) {
  ComputeRequest r;
  r.source.config.text = "the cat sat on the mat and looked at the dog";
  r.source.config.tokens = tokens;
  r.source.config.dModel = dModel;
  r.source.config.heads = heads;
  r.source.use = MemoryUse::app();
  return r;
}

bool sameBits(const Trace& a, const Trace& b) {
  if (a.stages.size() != b.stages.size()) return false;
  for (std::size_t i = 0; i < a.stages.size(); ++i) {
    const auto& x = a.stages[i].tensor.data;
    const auto& y = b.stages[i].tensor.data;
    if (x.size() != y.size() || (!x.empty() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) != 0)) {
      return false;
    }
  }
  return true;
}

TEST(ComputeWorker, ManyRequestsFromOneThreadEndWithTheNewestOnesExactTrace) {
  ComputeWorker worker;
  std::atomic<int> wakes{0};
  worker.setResultReady([&] { ++wakes; });
  Trace shown, spare;
  std::uint64_t submitted = 0, lastShown = 0;
  int results = 0;
  auto takeOne = [&] {
    if (std::optional<ComputeOutcome> out = worker.take(spare)) {
      EXPECT_TRUE(out->ok) << out->error;
      EXPECT_GT(out->requestId, lastShown) << "an older request's result came after a newer one";
      lastShown = out->requestId;
      std::swap(shown, spare);
      worker.releaseLater(spare);  // the replaced trace goes back, as the scheduler does
      ++results;
    }
    (void)worker.progress();
  };
  for (int i = 0; i < 60; ++i) {
    worker.submit(requestOf(24 + (i % 7) * 9, 32 + (i % 3) * 16, 4), ++submitted);
    takeOne();
    if (i % 5 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (lastShown < submitted && std::chrono::steady_clock::now() < end) {
    takeOne();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(lastShown, submitted) << "the newest request's result never came";
  EXPECT_FALSE(worker.busy());
  EXPECT_GE(wakes.load(), results);
  Trace direct;
  const ComputeOutcome out = computeTrace(requestOf(24 + (59 % 7) * 9, 32 + (59 % 3) * 16, 4), submitted, direct);
  ASSERT_TRUE(out.ok) << out.error;
  EXPECT_TRUE(sameBits(shown, direct)) << "the worker's trace differs from the direct forward";
}

}  // namespace
}  // namespace mhascope::app
