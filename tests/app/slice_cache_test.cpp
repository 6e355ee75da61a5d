// AppState's slice cache: a lazy stage's slice owns a copy of its numbers (64 MiB per head at
// T = 4096), so the cache frees those the last frame did not draw; slices of stored stages point
// into the trace and stay.
#include <gtest/gtest.h>

#include "shell/compute_worker.hpp"
#include "state/app_state.hpp"

namespace mhascope::app {
namespace {

AppState stateWithTrace() {
  ModelConfig c;
  c.text = "the quick brown fox jumps over the lazy dog";
  c.dModel = 16;
  c.heads = 2;
  AppState state;
  ComputeRequest request;
  request.source.config = c;
  const ComputeOutcome out = computeTrace(request, 1, state.shown.trace);
  EXPECT_TRUE(out.ok) << out.error;
  state.shown.traceReplaced();
  return state;
}

TEST(SliceCache, FreesLazySlicesTheLastFrameDidNotDraw) {
  AppState state = stateWithTrace();
  ASSERT_TRUE(state.shown.trace.isLazy(StageId::ScaledScores));
  state.shown.beginFrame();
  ASSERT_NE(state.shown.slice(StageId::ScaledScores, 0, 0), nullptr);
  ASSERT_NE(state.shown.slice(StageId::ScaledScores, 0, 1), nullptr);
  const Slice2D* weights = state.shown.slice(StageId::Weights, 0, 0);  // stored: points into the trace
  ASSERT_NE(weights, nullptr);
  const std::uint64_t perHead = static_cast<std::uint64_t>(state.shown.trace.tq) * state.shown.trace.tk * sizeof(float);
  EXPECT_EQ(state.shown.ownedSliceBytes(), 2 * perHead);

  state.shown.beginFrame();  // the frame above drew both heads: kept
  EXPECT_EQ(state.shown.ownedSliceBytes(), 2 * perHead);
  EXPECT_NE(state.shown.slice(StageId::ScaledScores, 0, 1), nullptr);  // this frame draws head 1 only
  state.shown.beginFrame();
  EXPECT_EQ(state.shown.ownedSliceBytes(), perHead);
  state.shown.beginFrame();  // nothing drawn: every owned slice freed
  EXPECT_EQ(state.shown.ownedSliceBytes(), 0u);
  EXPECT_EQ(state.shown.slice(StageId::Weights, 0, 0), weights);  // the stored stage's slice stayed
  // A freed slice comes back with the same numbers.
  const Slice2D* again = state.shown.slice(StageId::ScaledScores, 0, 1);
  ASSERT_NE(again, nullptr);
  EXPECT_FLOAT_EQ(again->at(2, 1), state.shown.trace.tensor(StageId::Scores).data[static_cast<std::size_t>(
                                       (1 * state.shown.trace.tq + 2) * state.shown.trace.tk + 1)] * state.shown.trace.scaleFactor);
}

}  // namespace
}  // namespace mhascope::app
