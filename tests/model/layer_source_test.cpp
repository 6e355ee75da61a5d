// Layer L of a model folder as the engine's inputs (layerAttention): running the engine on them records
// exactly the stages runForward records for its traced layer L, for every architecture the fixtures
// cover; a layer out of range and a cancelled forward are refused.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "io/npy.hpp"
#include "model/layer_source.hpp"
#include "model_fixtures.hpp"

namespace mhascope::model {
namespace {

std::vector<int> tokensOf(const std::string& folder) {
  auto t = loadNpy(kModels + "reference/" + folder + "/s0_tokens.npy");
  if (!t) throw std::runtime_error(t.error().message);
  std::vector<int> ids;
  for (float v : t->data) ids.push_back(static_cast<int>(v));
  return ids;
}

class LayerAttentionOf : public ::testing::TestWithParam<const char*> {};

// Bit for bit: the layers before L run through the same steps, layer L's norm is the same code, and the
// engine gets the same inputs, weights and options, so every stage holds the same floats.
TEST_P(LayerAttentionOf, RecordsWhatTheTracedForwardRecords) {
  const std::string folder = GetParam();
  auto m = ModelFolder::open(kModels + folder);
  ASSERT_TRUE(m.ok()) << m.error().message;
  const std::vector<int> ids = tokensOf(folder);
  for (int layer = 0; layer < m->spec().layers; ++layer) {
    SCOPED_TRACE(folder + " layer " + std::to_string(layer));
    ForwardOptions opt;
    opt.traceLayer = layer;
    auto full = runForward(*m, ids, opt);
    ASSERT_TRUE(full.ok()) << full.error().message;
    auto la = layerAttention(*m, ids, layer, ForwardOptions{});
    ASSERT_TRUE(la.ok()) << la.error().message;
    EXPECT_EQ(la->layer, layer);
    Trace trace;
    ASSERT_TRUE(forward(la->inputs, la->weights, la->options, trace).ok());
    const Trace& ref = full->trace;
    for (const StageInfo& s : allStages()) {
      const Tensor got = trace.copyOf(s.id), want = ref.copyOf(s.id);
      EXPECT_EQ(got.shape, want.shape) << s.name;
      EXPECT_TRUE(got.data == want.data) << s.name << " differs";
    }
    EXPECT_EQ(trace.queryTokens, ref.queryTokens);
    EXPECT_EQ(trace.causal, ref.causal);
    EXPECT_EQ(trace.positions, ref.positions);
    EXPECT_EQ(trace.ropeBase, ref.ropeBase);
    EXPECT_EQ(trace.window, ref.window);
    EXPECT_EQ(trace.kvHeads, ref.kvHeads);
    if (m->spec().rope()) {
      EXPECT_GT(trace.tensor(StageId::QRotated).data.size(), 0u) << "the rotation is one of the stages";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, LayerAttentionOf,
                         ::testing::Values("gpt2", "llama_gqa", "qwen2", "mistral", "llama3_scaled"),
                         [](const auto& info) { return std::string(info.param); });

TEST(LayerAttention, TheArchitectureDecidesTheOptions) {
  auto m = ModelFolder::open(kModels + "mistral");
  ASSERT_TRUE(m.ok()) << m.error().message;
  ForwardOptions opt;
  opt.memoryBudgetBytes = 300ull << 20;
  opt.threads = 2;
  opt.tokenLabels = {};
  auto la = layerAttention(*m, tokensOf("mistral"), 1, opt);
  ASSERT_TRUE(la.ok()) << la.error().message;
  const AttentionOptions& o = la->options;
  EXPECT_EQ(o.heads, m->spec().heads);
  EXPECT_EQ(o.kvHeads, m->spec().kvHeads);
  EXPECT_TRUE(o.causal);
  EXPECT_EQ(o.window, 4);
  EXPECT_EQ(o.positions, AttnPositions::Rope);
  EXPECT_EQ(o.memoryBudgetBytes, 300ull << 20);
  EXPECT_EQ(o.threads, 2);
  EXPECT_TRUE(o.recordEveryStage);
  const std::int64_t T = static_cast<std::int64_t>(tokensOf("mistral").size());
  EXPECT_EQ(la->inputs.query.shape, (Shape{1, T, m->spec().dModel}));
  EXPECT_EQ(la->inputs.key.data, la->inputs.query.data);
  ASSERT_EQ(la->inputs.queryTokens.size(), 1u);
  EXPECT_EQ(la->inputs.queryTokens[0].size(), static_cast<std::size_t>(T));
}

TEST(LayerAttention, ALayerOutOfRangeNamesTheConfigKey) {
  for (const char* folder : {"llama_gqa", "gpt2"}) {
    auto m = ModelFolder::open(kModels + folder);
    ASSERT_TRUE(m.ok()) << m.error().message;
    const std::string key = std::string(folder) == "gpt2" ? "n_layer" : "num_hidden_layers";
    for (int layer : {-1, m->spec().layers}) {
      auto la = layerAttention(*m, tokensOf(folder), layer, ForwardOptions{});
      ASSERT_FALSE(la.ok());
      const std::string& msg = la.error().message;
      EXPECT_NE(msg.find("layer " + std::to_string(layer) + " is outside the model's " +
                         std::to_string(m->spec().layers) + " layers"),
                std::string::npos)
          << msg;
      EXPECT_NE(msg.find(key + " in "), std::string::npos) << msg;
      EXPECT_NE(msg.find("config.json"), std::string::npos) << msg;
    }
  }
}

// progress sees layers 1 .. L (the layers before L); returning false stops with kForwardCancelled.
TEST(LayerAttention, ProgressAndCancel) {
  auto m = ModelFolder::open(kModels + "llama_gqa");
  ASSERT_TRUE(m.ok()) << m.error().message;
  const std::vector<int> ids = tokensOf("llama_gqa");
  std::vector<int> seen;
  ForwardOptions opt;
  opt.progress = [&](int done) {
    seen.push_back(done);
    return true;
  };
  ASSERT_TRUE(layerAttention(*m, ids, 1, opt).ok());
  EXPECT_EQ(seen, std::vector<int>{1});
  seen.clear();
  ASSERT_TRUE(layerAttention(*m, ids, 0, opt).ok());
  EXPECT_TRUE(seen.empty()) << "layer 0 needs no layer before it";
  opt.progress = [](int) { return false; };
  auto cancelled = layerAttention(*m, ids, 1, opt);
  ASSERT_FALSE(cancelled.ok());
  EXPECT_EQ(cancelled.error().message, kForwardCancelled);
}

// The budget is checked before anything runs, as runForward checks it.
TEST(LayerAttention, TheBudgetIsChecked) {
  auto m = ModelFolder::open(kModels + "gpt2");
  ASSERT_TRUE(m.ok()) << m.error().message;
  ForwardOptions opt;
  opt.memoryBudgetBytes = 1024;
  int calls = 0;
  opt.progress = [&](int) { return ++calls > 0; };
  auto la = layerAttention(*m, tokensOf("gpt2"), 1, opt);
  ASSERT_FALSE(la.ok());
  EXPECT_NE(la.error().message.find("more than the memory budget"), std::string::npos) << la.error().message;
  EXPECT_EQ(calls, 0);
}

}  // namespace
}  // namespace mhascope::model
