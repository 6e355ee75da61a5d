// The window's compute (app/shell/compute_worker.cpp): its forward uses every core of the
// machine, and its trace is, number for number, what the CLI's one-thread forward records.
#include <gtest/gtest.h>

#include <memory>
#include <thread>

#include "attention/engine.hpp"
#include "shell/compute_worker.hpp"

namespace mhascope::app {
namespace {

TEST(WindowCompute, UsesTheMachinesCoresAndEqualsTheOneThreadForward) {
  ModelConfig c;
  c.text = "the quick brown fox jumps over the lazy dog | a second batch item";
  c.tokens = 96;  // big enough that the engine shares out the heads (threadsFor: ≥ 4 MFLOP)
  c.dModel = 64;
  c.heads = 4;
  c.mask = MaskKind::Causal;
  Trace window;
  ComputeRequest request;
  request.source.config = c;
  const ComputeOutcome out = computeTrace(request, 1, window);
  ASSERT_TRUE(out.ok) << out.error;
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  EXPECT_EQ(out.threads, cores < 1 ? 1 : std::min(cores, 64));
  EXPECT_EQ(out.threads, computeThreads());

  // The CLI: the same builder, the engine's default of one thread.
  auto model = buildModel(c);
  ASSERT_TRUE(model) << model.error().message;
  ASSERT_EQ(model->options.threads, 1);
  Trace cli;
  ASSERT_TRUE(forward(model->inputs, model->weights, model->options, cli));
  ASSERT_EQ(window.stages.size(), cli.stages.size());
  for (std::size_t i = 0; i < cli.stages.size(); ++i) {
    const Tensor& a = window.copyOf(cli.stages[i].id);  // lazy stages: their whole table
    const Tensor& b = cli.copyOf(cli.stages[i].id);
    EXPECT_EQ(a.shape, b.shape) << stageInfo(cli.stages[i].id).name;
    // Bit for bit (NaN-free here, so == on the floats is the bits' equality).
    EXPECT_TRUE(a.data == b.data) << stageInfo(cli.stages[i].id).name << " differs from the CLI's";
  }
  EXPECT_EQ(window.blocked, cli.blocked);
}

// The window's trace shares its model's weights (no copy). A trace the window replaces becomes
// buffers for the next job and must let go of them: it would keep the replaced model (its inputs
// too) alive.
TEST(WindowCompute, TheTraceSharesTheModelsWeightsAndLetsGoWhenReplaced) {
  ModelConfig c;
  c.text = "a b c d e f";
  c.dModel = 16;
  c.heads = 2;
  Trace window;
  ComputeRequest request;
  request.source.config = c;
  ComputeOutcome out = computeTrace(request, 1, window);
  ASSERT_TRUE(out.ok) << out.error;
  ASSERT_NE(out.model, nullptr);
  EXPECT_EQ(window.weights.get(), &out.model->weights) << "the model's own weights, not a copy";
  const std::weak_ptr<const Model> model = out.model;
  out.model.reset();
  EXPECT_FALSE(model.expired()) << "the trace keeps what it shows";
  ComputeWorker worker;
  worker.releaseLater(window);  // small: stays as buffers, without the weights
  EXPECT_EQ(window.weights, nullptr);
  EXPECT_TRUE(model.expired());
}

}  // namespace
}  // namespace mhascope::app
