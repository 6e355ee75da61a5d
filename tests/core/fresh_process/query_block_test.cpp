// The attention's query block rows (core/attention/block_rows.*) as a process first meets them:
// each test runs in a process of its own (ctest runs every discovered test alone), so nothing has
// measured or pinned the choice before it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "kernels/block_rows.hpp"
#include "attention/engine.hpp"
#include "kernels/head_kernels.hpp"
#include "attention/model.hpp"

namespace mhascope {
namespace {

Model modelOf(int tokens, int dModel, int heads) {
  ModelConfig c;
  c.tokens = tokens;
  c.dModel = dModel;
  c.heads = heads;
  c.mask = MaskKind::Causal;
  c.memoryBudgetBytes = std::uint64_t{4} << 30;
  auto m = buildModel(c);
  EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error().message);
  return m.ok() ? *m : Model{};
}

bool fresh() { return queryBlockChoice().how == "not measured yet"; }

void expectSameBits(const Trace& a, const Trace& b) {
  for (int i = 0; i < kStageCount; ++i) {
    const auto id = static_cast<StageId>(i);
    const Tensor x = a.copyOf(id), y = b.copyOf(id);
    ASSERT_EQ(x.shape, y.shape) << stageInfo(id).name;
    EXPECT_EQ(x.data.empty() ? 0 : std::memcmp(x.ptr(), y.ptr(), x.data.size() * sizeof(float)), 0) << stageInfo(id).name;
  }
}

TEST(QueryBlockFirst, SmallTablesAreNotWorthMeasuring) {
  if (!fresh()) GTEST_SKIP() << "needs a process of its own (ctest runs each test alone)";
  const Model m = modelOf(300, 16, 2);  // 2 x 300 x 300 scores: 0.7 MiB a table
  Trace t;
  ASSERT_TRUE(forward(m.inputs, m.weights, m.options, t).ok());
  // Nothing was timed, whatever the CPU: either the tables were too small to be worth it, or this
  // CPU's blocks run on sgemm, where the size is not measured at all.
  const QueryBlockChoice c = queryBlockChoice();
  EXPECT_NE(c.how, "measured");
  EXPECT_EQ(c.rows, 128);
  EXPECT_EQ(c.seconds64, 0.0);
  EXPECT_EQ(c.seconds128, 0.0);
  if (headKernelsEnabled()) EXPECT_EQ(c.how, "not measured yet") << "small tables leave the choice open";
}

TEST(QueryBlockFirst, BigTablesAreMeasuredOnceAndTheRowsChangeNoBit) {
  if (!fresh()) GTEST_SKIP() << "needs a process of its own (ctest runs each test alone)";
  // One head of 3000 x 3000: the scores and the weights 34 MiB each, 68 MiB of scratch between
  // them, enough for the measurement's 64 MiB.
  const Model m = modelOf(3000, 8, 1);
  Trace measured;
  ASSERT_TRUE(forward(m.inputs, m.weights, m.options, measured).ok());
  const QueryBlockChoice c = queryBlockChoice();
  if (!headKernelsEnabled()) {
    EXPECT_EQ(c.how, "general path: no head kernels");
    EXPECT_EQ(c.rows, 128);
  } else {
    EXPECT_EQ(c.how, "measured");
    ASSERT_GT(c.seconds64, 0.0);
    ASSERT_GT(c.seconds128, 0.0);
    EXPECT_EQ(c.rows, c.seconds64 < 0.95 * c.seconds128 ? 64 : 128);
  }
  // Once per process: the next big forward does not measure again.
  Trace again;
  ASSERT_TRUE(forward(m.inputs, m.weights, m.options, again).ok());
  EXPECT_EQ(queryBlockChoice().seconds64, c.seconds64);
  EXPECT_EQ(queryBlockChoice().seconds128, c.seconds128);
  // The measurement wrote over the tables before the forward did: not one cell of that is left.
  // And the other block size gives the very same bits.
  ASSERT_TRUE(setQueryBlockRows(c.rows == 64 ? 128 : 64));
  Trace other;
  ASSERT_TRUE(forward(m.inputs, m.weights, m.options, other).ok());
  expectSameBits(measured, other);
}

TEST(QueryBlockFirst, TheEnvironmentPinsTheRowsWithoutMeasuring) {
  if (!fresh()) GTEST_SKIP() << "needs a process of its own (ctest runs each test alone)";
  ASSERT_EQ(setenv("MHASCOPE_QUERY_BLOCK", "64", 1), 0);
  const Model m = modelOf(3000, 8, 1);
  Trace t;
  ASSERT_TRUE(forward(m.inputs, m.weights, m.options, t).ok());
  unsetenv("MHASCOPE_QUERY_BLOCK");
  const QueryBlockChoice c = queryBlockChoice();
  EXPECT_EQ(c.how, "MHASCOPE_QUERY_BLOCK=64");
  EXPECT_EQ(c.rows, 64);
  EXPECT_EQ(c.seconds64, 0.0);
  EXPECT_FALSE(setQueryBlockRows(96)) << "only 64 or 128";
  EXPECT_EQ(queryBlockRows(), 64);
}

}  // namespace
}  // namespace mhascope
