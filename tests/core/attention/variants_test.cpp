// Attention as today's models run it, in the engine: N K/V heads (grouped-query, multi-query),
// RoPE (both pairings), ALiBi, the sliding window with sinks — each a step or a mask rule, recorded
// as a stage when used. The KV-cache decoder must give the full causal forward's output for every
// variant and their combinations; bad combinations get one clear message. (The numbers against
// PyTorch: torch_fixtures_test.cpp.)
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "attention/decode.hpp"
#include "attention/engine.hpp"
#include "attention/model.hpp"
#include "io/presets.hpp"
#include "kernels/head_kernels.hpp"

namespace mhascope {
namespace {

struct Variant {
  const char* name;
  int heads = 4, kvHeads = 0;
  AttnPositions positions = AttnPositions::None;
  RopeStyle style = RopeStyle::Half;
  int window = 0, sinks = 0;
  bool padding = false;  // a batch of two with uneven lengths (<pad> keys) and the last key padded
  int headDim = 0;       // d_k set (h·d_k ≠ d_model, as Qwen3 and Gemma have it); 0: d_model / h
};

const Variant kVariants[] = {
    {"mha"},
    {"gqa", 4, 2},
    {"mqa", 4, 1},
    {"rope_half", 4, 0, AttnPositions::Rope},
    {"rope_interleaved", 4, 0, AttnPositions::Rope, RopeStyle::Interleaved},
    {"alibi", 4, 0, AttnPositions::Alibi},
    {"alibi_h3", 3, 0, AttnPositions::Alibi},  // slopes of a non-power of two
    {"window", 4, 0, AttnPositions::None, RopeStyle::Half, 3},
    {"window_sinks", 4, 0, AttnPositions::None, RopeStyle::Half, 3, 2},
    {"padding_batch", 4, 0, AttnPositions::None, RopeStyle::Half, 0, 0, true},
    {"gqa_rope_window_sinks_padding", 4, 2, AttnPositions::Rope, RopeStyle::Half, 3, 1, true},
    {"mqa_alibi_window_padding", 4, 1, AttnPositions::Alibi, RopeStyle::Half, 2, 1, true},
    {"wide_heads", 4, 0, AttnPositions::None, RopeStyle::Half, 0, 0, false, 12},
    {"wide_gqa_rope_window_padding", 4, 2, AttnPositions::Rope, RopeStyle::Half, 3, 0, true, 10},
    {"narrow_mqa_rope", 4, 1, AttnPositions::Rope, RopeStyle::Interleaved, 0, 0, false, 2},
};

ModelConfig variantConfig(const Variant& v, MaskKind mask = MaskKind::Causal) {
  ModelConfig cfg;
  cfg.text = v.padding ? "the cat sat on the mat today | a dog ran" : "the cat sat on the mat and then it slept";
  cfg.dModel = 24;  // d_k = 6 for h = 4 (even, for RoPE), 8 for h = 3
  cfg.heads = v.heads;
  cfg.kvHeads = v.kvHeads;
  cfg.headDim = v.headDim;
  cfg.attnPositions = v.positions;
  cfg.positions = v.positions == AttnPositions::None;  // sinusoidal codes unless positions act inside
  cfg.ropeStyle = v.style;
  cfg.window = v.window;
  cfg.sinks = v.sinks;
  cfg.padLastKeys = v.padding ? 1 : 0;
  cfg.mask = mask;
  cfg.bias = true;
  return cfg;
}

double maxDiff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape, b.shape);
  double m = 0;
  for (std::size_t i = 0; i < a.data.size() && i < b.data.size(); ++i) m = std::max(m, std::abs(double(a.data[i]) - b.data[i]));
  return m;
}

class VariantTest : public ::testing::TestWithParam<Variant> {};

TEST_P(VariantTest, DecodeThroughTheCacheEqualsTheCausalForward) {
  auto m = buildModel(variantConfig(GetParam()));
  ASSERT_TRUE(m.ok()) << m.error().message;
  Trace full;
  ASSERT_TRUE(forward(m->inputs, m->weights, m->options, full).ok());
  const std::int64_t T = m->inputs.query.dim(1);
  for (std::int64_t prefill : {std::int64_t{1}, std::int64_t{3}, T}) {
    auto d = decode(m->inputs, m->weights, m->options, prefill);
    ASSERT_TRUE(d.ok()) << d.error().message;
    EXPECT_LT(maxDiff(d->output, full.tensor(StageId::Output)), 1e-5) << "prefill " << prefill;
    // The cache holds the keys as the attention read them: after RoPE.
    const bool rope = GetParam().positions == AttnPositions::Rope;
    EXPECT_LT(maxDiff(d->kCache, full.tensor(rope ? StageId::KRotated : StageId::KHeads)), 1e-5);
    EXPECT_LT(maxDiff(d->vCache, full.tensor(StageId::VHeads)), 1e-5);
    ASSERT_EQ(d->steps.size(), static_cast<std::size_t>(T - prefill + 1));
    const int n = kvHeadsOf(m->options);
    EXPECT_EQ(d->steps.back().cacheBytes, 2.0 * full.batch * n * T * full.dk * 4);
    if (d->steps.size() > 1) EXPECT_LT(d->steps.back().flops, d->steps.back().recomputeFlops);
  }
}

// What forward() records is what attentionHead() computes for one head (the window's first
// picture): the K/V head it reads, the rotation, the bias and the window included.
TEST_P(VariantTest, OneHeadAloneEqualsTheForwardsSlice) {
  for (MaskKind mask : {MaskKind::Causal, MaskKind::None}) {
    auto m = buildModel(variantConfig(GetParam(), mask));
    ASSERT_TRUE(m.ok()) << m.error().message;
    Trace full;
    ASSERT_TRUE(forward(m->inputs, m->weights, m->options, full).ok());
    for (StageId stage : {StageId::Weights, StageId::MaskedScores}) {
      for (int head = 0; head < m->options.heads; ++head) {
        auto one = attentionHead(m->inputs, m->weights, m->options, stage, full.batch - 1, head);
        ASSERT_TRUE(one.ok()) << one.error().message;
        auto a = sliceStage(full, stage, full.batch - 1, head);
        auto b = sliceStage(*one, stage, 0, 0);
        ASSERT_TRUE(a.ok() && b.ok());
        for (int i = 0; i < a->rows * a->cols; ++i) {
          ASSERT_EQ(a->data[i], b->data[i]) << stageInfo(stage).name << " head " << head << " cell " << i;
        }
      }
    }
  }
}

// The fast kernels (where this CPU has them) and the general path agree for every variant.
TEST_P(VariantTest, KernelPathsAgree) {
  if (!headKernelsAvailable()) GTEST_SKIP() << "this CPU runs the general path only";
  auto m = buildModel(variantConfig(GetParam()));
  ASSERT_TRUE(m.ok());
  Trace fast, general;
  ASSERT_TRUE(forward(m->inputs, m->weights, m->options, fast).ok());
  setHeadKernels(false);
  const Status s = forward(m->inputs, m->weights, m->options, general);
  setHeadKernels(true);
  ASSERT_TRUE(s.ok());
  EXPECT_LT(maxDiff(fast.tensor(StageId::Output), general.tensor(StageId::Output)), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Variants, VariantTest, ::testing::ValuesIn(kVariants),
                         [](const ::testing::TestParamInfo<Variant>& p) { return std::string(p.param.name); });

TEST(Variants, MultiHeadRecordsNoVariantStage) {
  auto m = buildModel(ModelConfig{});
  ASSERT_TRUE(m.ok());
  Trace t;
  ASSERT_TRUE(forward(m->inputs, m->weights, m->options, t).ok());
  int recorded = 0;
  for (int i = 0; i < kStageCount; ++i) recorded += stageRecorded(t, static_cast<StageId>(i));
  EXPECT_EQ(recorded, 16);
  auto s = sliceStage(t, StageId::QRotated, 0, 0);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("not recorded in this configuration"), std::string::npos) << s.error().message;
}

TEST(Variants, GroupMapWindowMaskAndBiasAreRecorded) {
  Variant v{"all", 4, 2, AttnPositions::Alibi, RopeStyle::Half, 2, 1};
  auto m = buildModel(variantConfig(v));
  ASSERT_TRUE(m.ok());
  Trace t;
  ASSERT_TRUE(forward(m->inputs, m->weights, m->options, t).ok());
  // Query heads 0, 1 read K/V head 0; heads 2, 3 read K/V head 1.
  const Tensor& g = t.tensor(StageId::KvGroups);
  ASSERT_EQ(g.shape, (Shape{1, 4, 2}));
  EXPECT_EQ(std::vector<float>(g.data.begin(), g.data.end()), (std::vector<float>{1, 0, 1, 0, 0, 1, 0, 1}));
  EXPECT_EQ(t.shapeOf(StageId::KHeads), (Shape{1, 2, t.tk, 6}));
  // The window W = 2 with sink 0 under the causal mask: query 4 sees keys 0 (sink), 3, 4.
  const Tensor& w = t.tensor(StageId::WindowMask);
  for (int j = 0; j < t.tk; ++j) {
    EXPECT_EQ(w.data[static_cast<std::size_t>(4 * t.tk + j)], (j >= 1 && j <= 2) ? 1.0f : 0.0f) << j;
    EXPECT_EQ(t.isBlocked(0, 4, j), j >= 1 && j != 3 && j != 4) << j;
  }
  // ALiBi: head 0 (m = 2^-2 for h = 4) at query 4, key 1: -0.25 * 3.
  EXPECT_FLOAT_EQ(t.tensor(StageId::PositionBias).data[static_cast<std::size_t>(4 * t.tk + 1)], -0.75f);
  // The masked scores add it to the scaled scores on visible keys.
  const std::int64_t cell = 4 * t.tk + 3;
  EXPECT_FLOAT_EQ(t.cell(StageId::MaskedScores, cell), t.cell(StageId::ScaledScores, cell) - 0.25f);
}

TEST(Variants, AlibiSlopesFollowThePaper) {
  const std::vector<float> eight = alibiSlopes(8);
  for (int i = 0; i < 8; ++i) EXPECT_FLOAT_EQ(eight[static_cast<std::size_t>(i)], std::pow(2.0f, -(i + 1.0f)));
  // h = 6: the 4 of h = 4, then every other one of h = 8.
  EXPECT_EQ(alibiSlopes(6), (std::vector<float>{0.25f, 0.0625f, 0.015625f, 0.00390625f, 0.5f, 0.125f}));
  EXPECT_FLOAT_EQ(alibiBias(0.5f, true, 5, 2), -1.5f);
  EXPECT_FLOAT_EQ(alibiBias(0.5f, false, 2, 5), -1.5f);
}

// RoPE's point, shown on numbers: shifting every position by the same amount leaves q . k alone.
TEST(Variants, RopeScoresDependOnTheOffsetOnly) {
  for (RopeStyle style : {RopeStyle::Half, RopeStyle::Interleaved}) {
    const float q0[6] = {0.3f, -1.2f, 0.7f, 0.5f, 2.0f, -0.4f}, k0[6] = {1.1f, 0.2f, -0.9f, 0.4f, -0.3f, 0.8f};
    auto score = [&](std::int64_t pq, std::int64_t pk) {
      float q[6], k[6];
      std::copy(q0, q0 + 6, q);
      std::copy(k0, k0 + 6, k);
      rotatePositions(q, 1, 6, pq, 10000.0f, style);
      rotatePositions(k, 1, 6, pk, 10000.0f, style);
      float s = 0;
      for (int i = 0; i < 6; ++i) s += q[i] * k[i];
      return s;
    };
    EXPECT_NEAR(score(5, 2), score(105, 102), 1e-5);
    EXPECT_NEAR(score(0, 0), q0[0] * k0[0] + q0[1] * k0[1] + q0[2] * k0[2] + q0[3] * k0[3] + q0[4] * k0[4] + q0[5] * k0[5], 1e-6);
  }
}

TEST(Variants, BadCombinationsGetOneClearLine) {
  struct Bad {
    const char* what;
    ModelConfig cfg;
    const char* message;
  };
  std::vector<Bad> bad;
  auto with = [](auto change) {
    ModelConfig c;
    c.dModel = 12;
    c.heads = 4;
    change(c);
    return c;
  };
  bad.push_back({"N does not divide h", with([](ModelConfig& c) { c.kvHeads = 3; }),
                 "kv heads (N = 3) must divide heads (h = 4) so every K/V head serves h/N query heads; valid N: 1, 2 or 4"});
  bad.push_back({"N > h", with([](ModelConfig& c) { c.kvHeads = 8; }), "kv heads (N = 8) must divide heads (h = 4)"});
  bad.push_back({"RoPE with odd d_k", with([](ModelConfig& c) { c.heads = 4; c.dModel = 12; c.attnPositions = AttnPositions::Rope; }),
                 "RoPE turns pairs of features, so d_k must be even; d_k = d_model / h = 12 / 4 = 3"});
  bad.push_back({"RoPE base 0", with([](ModelConfig& c) { c.dModel = 8; c.attnPositions = AttnPositions::Rope; c.ropeBase = 0; }),
                 "the RoPE base must be a positive finite number"});
  bad.push_back({"negative window", with([](ModelConfig& c) { c.window = -1; }), "the sliding window W must be at least 1, got -1"});
  bad.push_back({"sinks without a window", with([](ModelConfig& c) { c.sinks = 2; }),
                 "sinks (S = 2) keep keys visible past a sliding window: give a window W as well"});
  bad.push_back({"negative sinks", with([](ModelConfig& c) { c.window = 2; c.sinks = -1; }), "the number of sinks S must be 0 or more"});
  for (const Bad& b : bad) {
    const Status s = validateConfig(b.cfg);
    ASSERT_FALSE(s.ok()) << b.what;
    EXPECT_NE(s.error().message.find(b.message), std::string::npos) << b.what << ": " << s.error().message;
    EXPECT_FALSE(buildModel(b.cfg).ok()) << b.what;
  }
}

TEST(Variants, DecodeRefusals) {
  auto m = buildModel(variantConfig(kVariants[1]));
  ASSERT_TRUE(m.ok());
  for (std::int64_t p : {std::int64_t{0}, std::int64_t{99}}) {
    auto d = decode(m->inputs, m->weights, m->options, p);
    ASSERT_FALSE(d.ok());
    EXPECT_NE(d.error().message.find("the prefill P must be from 1 to T"), std::string::npos) << d.error().message;
  }
  ModelConfig cross = variantConfig(kVariants[0]);
  cross.crossAttention = true;
  cross.kvText = "one two three";
  auto c = buildModel(cross);
  ASSERT_TRUE(c.ok());
  auto d = decode(c->inputs, c->weights, c->options, 1);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message.find("decode runs self-attention"), std::string::npos);
}

// Presets and workspaces keep the new fields; a file without them is multi-head attention.
TEST(Variants, PresetsKeepTheFields) {
  ModelConfig cfg = variantConfig(kVariants[10]);
  cfg.ropeBase = 500.0f;
  cfg.ropeStyle = RopeStyle::Interleaved;
  auto back = parsePresetJson(presetToJson(cfg), "test");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->kvHeads, 2);
  EXPECT_EQ(back->attnPositions, AttnPositions::Rope);
  EXPECT_EQ(back->ropeStyle, RopeStyle::Interleaved);
  EXPECT_EQ(back->ropeBase, 500.0f);
  EXPECT_EQ(back->window, 3);
  EXPECT_EQ(back->sinks, 1);
  const std::string plain = presetToJson(ModelConfig{});
  EXPECT_EQ(plain.find("kv_heads"), std::string::npos);
  EXPECT_EQ(plain.find("window"), std::string::npos);
  auto bad = parsePresetJson(R"({"version": 1, "text": "a b", "d_model": 8, "heads": 2, "attention_positions": "xpos"})",
                             "p.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("/attention_positions: unknown 'xpos'"), std::string::npos) << bad.error().message;
}

}  // namespace
}  // namespace mhascope
