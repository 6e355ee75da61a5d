// The pipeline's trace job (app/shell/compute_worker.cpp) driven as the window drives it, from
// one "UI" thread: requests submitted faster than they finish, results taken and released, the
// progress read while a job runs. The newest request's result always arrives, equal to the
// forward computed directly, and no older one arrives after it. Here, in the threaded code's
// binary, so that ThreadSanitizer watches the buffers handed back and forth.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <unistd.h>
#include <optional>
#include <string>
#include <thread>

#include "../app/model_folder_copy.hpp"  // modelFolderCopy
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


// A DeepSeek layer (latent attention) on the worker: its pass is the model forward's record, copied into the job's
// buffers (the record itself stays with no one), with the reason the lessons that re-run the layer cannot; the
// newest of two requests wins, and its trace is, bit for bit, the direct one's.
TEST(ComputeWorker, ALatentLayersPassIsTheForwardsRecord) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("mhascope_latent_worker_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string folder = modelFolderCopy(dir, "deepseek_v3");
  auto request = [&](int layer) {
    ComputeRequest r;
    r.source.config.text = "the latent cat";
    r.source.files.model = folder;
    r.source.files.layer = layer;
    r.source.use = MemoryUse::app();
    r.source.recordedLatentLayer = true;  // as the window's scheduler asks
    return r;
  };
  ComputeWorker worker;
  worker.submit(request(0), 1);
  worker.submit(request(2), 2);
  Trace shown;
  std::optional<ComputeOutcome> out;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < end) {
    if (auto o = worker.take(shown)) {
      if (o->requestId == 2) {
        out = std::move(o);
        break;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(out) << "the newest request's result never came";
  ASSERT_TRUE(out->ok) << out->error;
  EXPECT_EQ(shown.layer, 2);
  EXPECT_EQ(shown.weights, nullptr) << "a latent layer has no W_q, W_k, W_v to show";
  EXPECT_NE(out->rerunRefusal.find("layer 2 is multi-head latent attention"), std::string::npos) << out->rerunRefusal;
  Trace direct;
  const ComputeOutcome again = computeTrace(request(2), 3, direct);
  ASSERT_TRUE(again.ok) << again.error;
  EXPECT_TRUE(sameBits(shown, direct)) << "the worker's record differs from the direct one";
  EXPECT_EQ(direct.generation, 1u);
  // Without asking for the record the layer is refused with the same reason (no engine re-run of it).
  ComputeRequest refused = request(2);
  refused.source.recordedLatentLayer = false;
  Trace none;
  const ComputeOutcome no = computeTrace(refused, 4, none);
  EXPECT_FALSE(no.ok);
  EXPECT_EQ(no.error, out->rerunRefusal);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace mhascope::app
