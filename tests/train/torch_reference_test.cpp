// Against PyTorch (fixtures by scripts/gen_train_fixtures.py, torch 1.13, float64 autograd):
// the checkpoint loads under its state_dict names, our logits equal scripts/mhascope_model.py's,
// every parameter gradient equals autograd's, and two AdamW steps equal torch.optim.AdamW's; for
// the plain model and for RoPE, ALiBi and grouped K/V heads.
#include <gtest/gtest.h>

#include <cmath>

#include "io/safetensors.hpp"
#include "train/checkpoint.hpp"
#include "expect_close.hpp"
#include "test_support.hpp"
#include "train/model.hpp"
#include "train/optimizer.hpp"

using namespace mhascope;
using namespace mhascope::train;

namespace {

using train_testing::expectClose;

void checkCase(const std::string& name) {
  SCOPED_TRACE(name);
  // Read here, not at namespace scope: kFixtureDir is another file's static, initialised in an
  // order this file cannot rely on.
  const std::string runs = fixtures::kFixtureDir + "train/";
  auto ckpt = loadCheckpoint(runs + name + ".safetensors");
  ASSERT_TRUE(ckpt.ok()) << ckpt.error().message;
  auto ref = loadSafetensors(runs + name + "_ref.safetensors");
  ASSERT_TRUE(ref.ok()) << ref.error().message;
  const TensorMap& r = *ref;
  GptParams& p = ckpt->params;

  Batch b;
  b.batch = static_cast<int>(r.at("tokens").dim(0));
  b.seq = static_cast<int>(r.at("tokens").dim(1));
  for (float v : r.at("tokens").data) b.tokens.push_back(static_cast<int>(v));
  for (float v : r.at("targets").data) b.targets.push_back(static_cast<int>(v));

  ForwardCache cache;
  auto loss = forward(p, b, cache);
  ASSERT_TRUE(loss.ok()) << loss.error().message;
  ASSERT_EQ(cache.logits.size(), r.at("logits").numel());
  expectClose(cache.logits.data(), r.at("logits").ptr(), cache.logits.size(), 1e-5, 1e-5, "logits");
  EXPECT_NEAR(loss->loss, r.at("loss").data[0], 1e-5);

  GptParams g = zeroParams(p.cfg);
  backward(p, b, cache, g);
  // Gradients by the checkpoint's (PyTorch's) names: for the variants q_proj, k_proj, v_proj are
  // row blocks of our stacked in_proj.
  auto block = [](const TensorView& tv) {
    return tv.value->data() + (tv.isVector ? tv.first : tv.first * tv.value->cols());
  };
  auto blockSize = [](const TensorView& tv) { return tv.isVector ? tv.count : tv.count * tv.value->cols(); };
  int tensors = 0;
  for (const auto& tv : checkpointTensors(g)) {
    const Tensor& want = r.at("grad." + tv.name);
    ASSERT_EQ(blockSize(tv), want.numel()) << tv.name;
    expectClose(block(tv), want.ptr(), want.numel(), 2e-6, 1e-4, "grad." + tv.name);
    ++tensors;
  }
  const int learned = p.cfg.learnedPositions() ? 1 : 0, attention = p.cfg.separateProjections() ? 8 : 4;
  EXPECT_EQ(tensors, 5 + learned + (2 + attention + (p.cfg.mlp ? 6 : 0)) * p.cfg.layers);

  // AdamW from the checkpoint with torch's gradients (as float32), then a second step.
  AdamW opt(p.cfg, {1e-2f, 0.9f, 0.999f, 1e-8f, 0.1f});
  for (auto& tv : checkpointTensors(g)) {
    const Tensor& want = r.at("grad." + tv.name);
    std::copy(want.data.begin(), want.data.end(), block(tv));
  }
  GptParams g2 = g;
  for (auto& np : g2.list()) *np.value = (*np.value * -0.5f).array() + 1e-3f;
  opt.step(p, g);
  for (const auto& tv : checkpointTensors(p)) {
    expectClose(block(tv), r.at("adamw1." + tv.name).ptr(), blockSize(tv), 1e-6, 1e-6, "adamw1." + tv.name);
  }
  opt.step(p, g2);
  for (const auto& tv : checkpointTensors(p)) {
    expectClose(block(tv), r.at("adamw2." + tv.name).ptr(), blockSize(tv), 1e-6, 1e-6, "adamw2." + tv.name);
  }
}

}  // namespace

TEST(TrainTorch, OneLayerAttentionOnly) { checkCase("l1"); }
TEST(TrainTorch, TwoLayersAttentionOnly) { checkCase("l2"); }
TEST(TrainTorch, OneLayerWithMlp) { checkCase("l1_mlp"); }
TEST(TrainTorch, TwoLayersWithMlp) { checkCase("l2_mlp"); }
// The attention variants against scripts/mhascope_model.py's own formulas (rotate_half RoPE,
// the paper's ALiBi slopes, repeat_interleave for shared K/V heads) and autograd.
TEST(TrainTorch, RopeTwoLayers) { checkCase("rope"); }
TEST(TrainTorch, AlibiMultiQueryWithMlp) { checkCase("alibi_mqa"); }
TEST(TrainTorch, RopeGroupedKvHeadsWithMlp) { checkCase("rope_gqa_mlp"); }
