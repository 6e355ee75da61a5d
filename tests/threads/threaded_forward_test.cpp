// The threaded forward gives the single-thread forward's exact bits, also where the projections'
// row blocks straddle batch items. Here, in the threaded code's binary, so that ThreadSanitizer
// runs the engine's parallel sections too.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "attention/engine.hpp"
#include "attention/model.hpp"
#include "../core/attention/test_model.hpp"

namespace mhascope {
namespace {

using mhascope::testing::testModel;

TEST(ThreadedForward, GivesTheOneThreadBitsExactly) {
  for (MaskKind mask : {MaskKind::None, MaskKind::Causal}) {
  for (bool sink : {false, true}) {  // with a learned sink too: its share is written per row, by the row's thread
    // Big enough that threads are used (> 4 MFLOP), several projection row blocks, odd T.
    Model m = testModel(301, 64, 8, 2, mask);
    if (sink) m.options.sinkLogits = {0.5f, -1.0f, 2.0f, 0.0f, 1.0f, -0.5f, 3.0f, -2.0f};
    AttentionOptions one = m.options, two = m.options;
    one.threads = 1;
    two.threads = 2;
    Trace t1, t2;
    ASSERT_TRUE(forward(m.inputs, m.weights, one, t1).ok());
    ASSERT_TRUE(forward(m.inputs, m.weights, two, t2).ok());
    for (int i = 0; i < kStageCount; ++i) {
      const auto& a = t1.copyOf(static_cast<StageId>(i)).data;
      const auto& b = t2.copyOf(static_cast<StageId>(i)).data;
      ASSERT_EQ(a.size(), b.size());
      EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin(), [](float x, float y) {
        return std::memcmp(&x, &y, sizeof x) == 0;
      })) << std::string(stageInfo(static_cast<StageId>(i)).name);
    }
    EXPECT_EQ(t1.fullyMasked, t2.fullyMasked);
  }
  }
}

// The projections' row blocks (256, 512 or 1024 of the B*T rows) also record the inputs, split
// into heads and merge the heads: with blocks that straddle batch items, every regrouped stage is
// exactly its source's numbers in the new layout, on 1, 2 or 3 threads alike.
TEST(ThreadedForward, RegroupsHeadsExactlyInRowBlocksThatStraddleBatchItems) {
  // 600 rows: blocks 0-255, 256-511, 512-599; 1050 rows (from 1024 on, blocks of 512): 0-511,
  // 512-1023, 1024-1049; 2250 rows (from 2048 on, blocks of 1024): 0-1023, 1024-2047, 2048-2249.
  for (std::int64_t T : {200, 350, 750}) {
  const Model m = testModel(static_cast<int>(T), 48, 6, 3, MaskKind::Causal);
  const std::int64_t B = 3, h = 6, dk = 8, d = 48;
  Trace first;
  for (int threads : {1, 2, 3}) {
    AttentionOptions o = m.options;
    o.threads = threads;
    Trace t;
    ASSERT_TRUE(forward(m.inputs, m.weights, o, t).ok());
    EXPECT_TRUE(std::equal(m.inputs.key.data.begin(), m.inputs.key.data.end(), t.tensor(StageId::Key).data.begin()));
    for (std::int64_t b = 0; b < B; ++b) {
      for (std::int64_t i = 0; i < h; ++i) {
        for (std::int64_t tok = 0; tok < T; ++tok) {
          for (std::int64_t c = 0; c < dk; ++c) {
            const std::int64_t row = (b * T + tok) * d + i * dk + c, head = ((b * h + i) * T + tok) * dk + c;
            ASSERT_EQ(t.tensor(StageId::QHeads).ptr()[head], t.tensor(StageId::QProj).ptr()[row]);
            ASSERT_EQ(t.tensor(StageId::VHeads).ptr()[head], t.tensor(StageId::VProj).ptr()[row]);
            ASSERT_EQ(t.tensor(StageId::Concat).ptr()[row], t.tensor(StageId::HeadOutputs).ptr()[head]);
          }
        }
      }
    }
    if (threads == 1) {
      first = t;
      continue;
    }
    for (int i = 0; i < kStageCount; ++i) {
      EXPECT_TRUE(std::equal(t.stages[static_cast<std::size_t>(i)].tensor.data.begin(),
                             t.stages[static_cast<std::size_t>(i)].tensor.data.end(),
                             first.stages[static_cast<std::size_t>(i)].tensor.data.begin(),
                             first.stages[static_cast<std::size_t>(i)].tensor.data.end(),
                             [](float x, float y) { return std::memcmp(&x, &y, sizeof x) == 0; }))
          << "T=" << T << ", " << threads << " threads: " << stageInfo(static_cast<StageId>(i)).name;
    }
  }
  }
}

}  // namespace
}  // namespace mhascope
