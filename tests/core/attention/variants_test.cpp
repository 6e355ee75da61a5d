// Attention as today's models run it, in the engine: N K/V heads (grouped-query, multi-query),
// RoPE (both pairings), ALiBi, the sliding window with sinks — each a step or a mask rule, recorded
// as a stage when used. The KV-cache decoder must give the full causal forward's output for every
// variant and their combinations; bad combinations get one clear message. (The numbers against
// PyTorch: torch_fixtures_test.cpp.)
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
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
  int qkNorm = 0;        // the q/k norm: 1 per head (Qwen3), 2 over the whole projection (OLMo 2); 0: none
  float softcap = 0;     // Gemma 2's softcap c (with a given scale, as Gemma's query_pre_attn_scalar); 0: none
  bool learnedSink = false;  // gpt-oss's learned sink: a logit per head (learnedSinks), the last one -inf (none)
};

// Learned sink logits that differ per head, one of them -inf (that head has none).
std::vector<float> learnedSinks(int heads) {
  const float given[] = {0.8f, -1.5f, 2.0f, -std::numeric_limits<float>::infinity()};
  std::vector<float> s(static_cast<std::size_t>(heads));
  for (int i = 0; i < heads; ++i) s[static_cast<std::size_t>(i)] = given[i % 4];
  return s;
}

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
    {"qk_norm", 4, 0, AttnPositions::None, RopeStyle::Half, 0, 0, false, 0, 1},
    {"wide_gqa_qk_norm_rope_window_padding", 4, 2, AttnPositions::Rope, RopeStyle::Half, 3, 0, true, 10, 1},
    {"gqa_whole_qk_norm_rope", 4, 2, AttnPositions::Rope, RopeStyle::Half, 0, 0, false, 0, 2},
    {"softcap", 4, 0, AttnPositions::None, RopeStyle::Half, 0, 0, false, 0, 0, 0.3f},
    {"gqa_softcap_qk_norm_rope_window_padding", 4, 2, AttnPositions::Rope, RopeStyle::Half, 3, 0, true, 10, 1, 0.5f},
    {"softcap_alibi_window_sinks", 4, 0, AttnPositions::Alibi, RopeStyle::Half, 3, 1, false, 0, 0, 0.4f},
    {"learned_sink", 4, 0, AttnPositions::None, RopeStyle::Half, 0, 0, false, 0, 0, 0, true},
    {"gqa_learned_sink_rope_window_padding", 4, 2, AttnPositions::Rope, RopeStyle::Half, 3, 0, true, 10, 0, 0, true},
    {"learned_sink_softcap_alibi_window_sinks_h3", 3, 0, AttnPositions::Alibi, RopeStyle::Half, 3, 1, false, 0, 0, 0.4f, true},
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

// The variant's random-weights model, with the q/k norm's gains set when the variant has it (gains that differ
// per feature, so a slip of one feature or one head shows).
Result<Model> variantModel(const Variant& v, MaskKind mask = MaskKind::Causal) {
  auto m = buildModel(variantConfig(v, mask));
  if (!m) return m;
  if (v.softcap > 0) {  // a cap low enough that it bends these random weights' scores
    m->options.scale = ScaleKind::Given;
    m->options.scaleFactor = 0.7f;
    m->options.softcap = v.softcap;
  }
  if (v.learnedSink) m->options.sinkLogits = learnedSinks(v.heads);
  if (v.qkNorm == 0) return m;
  const std::int64_t dk = headDimOf(m->options, m->inputs.query.dim(2)), h = v.heads, n = kvHeadsOf(m->options);
  auto gains = [](std::int64_t count, float phase) {
    std::vector<float> g(static_cast<std::size_t>(count));
    for (std::size_t i = 0; i < g.size(); ++i) g[i] = 0.6f + 0.5f * std::sin(phase + 0.9f * static_cast<float>(i));
    return g;
  };
  m->options.qNorm = gains(v.qkNorm == 1 ? dk : h * dk, 0.3f);
  m->options.kNorm = gains(v.qkNorm == 1 ? dk : n * dk, 1.7f);
  m->options.qkNormEps = 1e-6f;
  return m;
}

double maxDiff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape, b.shape);
  double m = 0;
  for (std::size_t i = 0; i < a.data.size() && i < b.data.size(); ++i) m = std::max(m, std::abs(double(a.data[i]) - b.data[i]));
  return m;
}

class VariantTest : public ::testing::TestWithParam<Variant> {};

TEST_P(VariantTest, DecodeThroughTheCacheEqualsTheCausalForward) {
  auto m = variantModel(GetParam());
  ASSERT_TRUE(m.ok()) << m.error().message;
  Trace full;
  ASSERT_TRUE(forward(m->inputs, m->weights, m->options, full).ok());
  const std::int64_t T = m->inputs.query.dim(1);
  for (std::int64_t prefill : {std::int64_t{1}, std::int64_t{3}, T}) {
    auto d = decode(m->inputs, m->weights, m->options, prefill);
    ASSERT_TRUE(d.ok()) << d.error().message;
    EXPECT_LT(maxDiff(d->output, full.tensor(StageId::Output)), 1e-5) << "prefill " << prefill;
    // The cache holds the keys as the attention read them: after the q/k norm and RoPE.
    const bool rope = GetParam().positions == AttnPositions::Rope, normed = GetParam().qkNorm != 0;
    const StageId read = rope ? StageId::KRotated : normed ? StageId::KNormed : StageId::KHeads;
    EXPECT_LT(maxDiff(d->kCache, full.tensor(read)), 1e-5);
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
    auto m = variantModel(GetParam(), mask);
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
  auto m = variantModel(GetParam());
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

// The q/k norm's stages: per head, each head's row divided by its gains has root mean square 1; over the whole
// projection only the token's whole row does (one head's alone does not), and the rotation reads the normed heads.
TEST(Variants, QkNormStagesAreUnitRmsTimesTheGains) {
  for (int kind : {1, 2}) {
    SCOPED_TRACE(kind == 1 ? "per head" : "whole projection");
    Variant v{"qk", 4, 2, AttnPositions::Rope, RopeStyle::Half, 0, 0, false, 0, kind};
    auto m = variantModel(v);
    ASSERT_TRUE(m.ok()) << m.error().message;
    Trace t;
    ASSERT_TRUE(forward(m->inputs, m->weights, m->options, t).ok());
    ASSERT_TRUE(stageRecorded(t, StageId::QNormed) && stageRecorded(t, StageId::KNormed));
    for (StageId id : {StageId::QNormed, StageId::KNormed}) {
      const Tensor& x = t.tensor(id);  // (1, n, T, d_k)
      const std::vector<float>& g = id == StageId::QNormed ? m->options.qNorm : m->options.kNorm;
      const std::int64_t n = x.dim(1), T = x.dim(2), dk = x.dim(3);
      for (std::int64_t tok = 0; tok < T; ++tok) {
        double whole = 0, head0 = 0;
        for (std::int64_t i = 0; i < n; ++i) {
          for (std::int64_t c = 0; c < dk; ++c) {
            const double y = x.data[static_cast<std::size_t>((i * T + tok) * dk + c)] /
                             g[static_cast<std::size_t>(kind == 1 ? c : i * dk + c)];
            whole += y * y;
            if (i == 0) head0 += y * y;
          }
        }
        if (kind == 1) EXPECT_NEAR(head0 / static_cast<double>(dk), 1.0, 1e-4);
        EXPECT_NEAR(whole / static_cast<double>(n * dk), 1.0, 1e-4);
        if (kind == 2) EXPECT_GT(std::abs(head0 / static_cast<double>(dk) - 1.0), 1e-3) << "one head alone is not unit RMS";
      }
    }
    // RoPE turns the normed heads: position 0 is not turned, so q_rotated's first row is q_normed's.
    const Tensor &qn = t.tensor(StageId::QNormed), &qr = t.tensor(StageId::QRotated);
    for (std::int64_t c = 0; c < qn.dim(3); ++c) EXPECT_EQ(qr.data[static_cast<std::size_t>(c)], qn.data[static_cast<std::size_t>(c)]);
  }
  // Gains of the wrong width are refused with the widths that fit.
  auto m = variantModel(Variant{"qk", 4, 2, AttnPositions::None, RopeStyle::Half, 0, 0, false, 0, 1});
  ASSERT_TRUE(m.ok());
  m->options.kNorm.push_back(1.0f);
  Trace t;
  const Status s = forward(m->inputs, m->weights, m->options, t);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("q/k norm gains"), std::string::npos) << s.error().message;
}

// The learned sink: each row's weights and its share sum to 1; the share is 0 for the head without a sink, which
// gives the plain softmax's bits; a row whose every key is blocked gives the sink everything; sinks at -inf are no
// sink at all, bit for bit, with or without full recording and whatever the threads.
TEST(Variants, LearnedSinkTakesTheRowsMissingShare) {
  auto m = variantModel(Variant{"sink", 4, 2, AttnPositions::Rope, RopeStyle::Half, 3, 0, true, 0, 0, 0, true});
  ASSERT_TRUE(m.ok()) << m.error().message;
  Tensor pad = *m->options.keyPaddingMask;  // key 0 of item 0 padded too: its query row 0 sees nothing
  pad.data[0] = 1.0f;
  m->options.keyPaddingMask = pad;
  Trace t, plain;
  ASSERT_TRUE(forward(m->inputs, m->weights, m->options, t).ok());
  AttentionOptions none = m->options;
  none.sinkLogits.clear();
  ASSERT_TRUE(forward(m->inputs, m->weights, none, plain).ok());
  EXPECT_FALSE(stageRecorded(plain, StageId::SinkShare));
  ASSERT_TRUE(stageRecorded(t, StageId::SinkShare));
  const Tensor &w = t.tensor(StageId::Weights), &share = t.tensor(StageId::SinkShare);
  ASSERT_EQ(share.shape, (Shape{t.batch, 4, t.tq, 1}));
  ASSERT_TRUE(t.isFullyMasked(0, 0));
  double most = 0;
  for (int b = 0; b < t.batch; ++b) {
    for (int i = 0; i < 4; ++i) {
      for (int q = 0; q < t.tq; ++q) {
        const std::size_t r = (static_cast<std::size_t>(b) * 4 + i) * t.tq + q;
        double sum = 0;
        for (int k = 0; k < t.tk; ++k) sum += w.data[r * t.tk + k];
        const float s = share.data[r];
        if (t.isFullyMasked(b, q)) {
          EXPECT_EQ(sum, 0.0);
          EXPECT_EQ(s, i == 3 ? 0.0f : 1.0f) << "head " << i;  // head 3 has no sink: nothing at all
          continue;
        }
        EXPECT_NEAR(sum + s, 1.0, 1e-6) << b << " " << i << " " << q;
        if (i == 3) {
          EXPECT_EQ(s, 0.0f);
          for (int k = 0; k < t.tk; ++k) ASSERT_EQ(w.data[r * t.tk + k], plain.tensor(StageId::Weights).data[r * t.tk + k]);
        }
        most = std::max(most, static_cast<double>(s));
      }
    }
  }
  EXPECT_GT(most, 0.3) << "the sinks never took a visible share";
  EXPECT_NE(configSummary(t, variantConfig(Variant{"sink"}), true).find("  learned sinks"), std::string::npos);
  EXPECT_EQ(configSummary(plain, variantConfig(Variant{"sink"}), true).find("sink"), std::string::npos);
  // Sinks at -inf: the forward without a sink, bit for bit, on one thread and on two, recorded fully or not.
  AttentionOptions gone = m->options;
  gone.sinkLogits.assign(4, -std::numeric_limits<float>::infinity());
  for (int threads : {1, 2}) {
    for (bool all : {true, false}) {
      gone.threads = threads;
      gone.recordEveryStage = all;
      Trace g;
      ASSERT_TRUE(forward(m->inputs, m->weights, gone, g).ok());
      const Tensor &a = g.tensor(StageId::Weights), &o = g.tensor(StageId::Output);
      for (std::size_t c = 0; c < a.data.size(); ++c) ASSERT_EQ(a.data[c], plain.tensor(StageId::Weights).data[c]) << c;
      for (std::size_t c = 0; c < o.data.size(); ++c) ASSERT_EQ(o.data[c], plain.tensor(StageId::Output).data[c]) << c;
    }
  }
  // One logit for each head, and not NaN or +inf.
  for (std::vector<float> bad : {std::vector<float>{1.0f, 2.0f}, std::vector<float>{0, 0, std::nanf(""), 0},
                                 std::vector<float>{0, std::numeric_limits<float>::infinity(), 0, 0}}) {
    AttentionOptions o = m->options;
    o.sinkLogits = bad;
    Trace x;
    const Status s = forward(m->inputs, m->weights, o, x);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.error().message.find("sink"), std::string::npos) << s.error().message;
  }
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
  EXPECT_FALSE(back->learnedSink);
  cfg.learnedSink = true;  // the learned sink's logit, every head's: its options give each head that logit
  cfg.sinkLogit = -0.75f;
  back = parsePresetJson(presetToJson(cfg), "test");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_TRUE(back->learnedSink);
  EXPECT_EQ(back->sinkLogit, -0.75f);
  auto sunk = buildModel(*back);
  ASSERT_TRUE(sunk.ok()) << sunk.error().message;
  EXPECT_EQ(sunk->options.sinkLogits, std::vector<float>(4, -0.75f));
  Trace sunkTrace;
  ASSERT_TRUE(forward(sunk->inputs, sunk->weights, sunk->options, sunkTrace).ok());
  EXPECT_NE(configSummary(sunkTrace, *back, true).find("  sink=-0.75"), std::string::npos) << configSummary(sunkTrace, *back, true);
  const std::string plain = presetToJson(ModelConfig{});
  EXPECT_EQ(plain.find("kv_heads"), std::string::npos);
  EXPECT_EQ(plain.find("window"), std::string::npos);
  EXPECT_EQ(plain.find("sink\""), std::string::npos);
  auto bad = parsePresetJson(R"({"version": 1, "text": "a b", "d_model": 8, "heads": 2, "attention_positions": "xpos"})",
                             "p.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("/attention_positions: unknown 'xpos'"), std::string::npos) << bad.error().message;
}

}  // namespace
}  // namespace mhascope
