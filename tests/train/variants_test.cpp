// The attention variants in training: RoPE, ALiBi and grouped K/V heads (GQA/MQA). Finite
// differences through each backward (as gradient_test.cpp does for the plain model), checkpoints
// with the separate-projection names and the variant's metadata, the checks that refuse a bad
// combination, and a checkpoint layer in the pipeline running the same variant.
#include <gtest/gtest.h>

#include <cmath>

#include "attention/random.hpp"
#include "io/safetensors.hpp"
#include "train/checkpoint.hpp"
#include "train/layer_model.hpp"
#include "train/model.hpp"
#include "train/trainer.hpp"

using namespace mhascope;
using namespace mhascope::train;

namespace {

GptConfig variant(int heads, int layers, bool mlp, TrainPositions positions, int kvHeads, float ropeBase = 10000.0f) {
  GptConfig c{7, 6, 8, heads, layers, mlp};
  c.positions = positions;
  c.kvHeads = kvHeads;
  c.ropeBase = ropeBase;
  return c;
}

Batch randomBatch(int B, int T, int V, std::uint64_t seed) {
  SplitMix64 rng(seed);
  Batch b{B, T, {}, {}};
  for (int i = 0; i < B * T; ++i) {
    b.tokens.push_back(static_cast<int>(rng.next() % static_cast<std::uint64_t>(V)));
    b.targets.push_back(i % 3 == 0 ? -1 : static_cast<int>(rng.next() % static_cast<std::uint64_t>(V)));
  }
  return b;
}

// Central differences (step 1e-2) of the float forward's loss against backward(), for up to 12
// entries of every parameter tensor; every entry of the attention's projections when `allQkv`.
void checkGradients(const GptConfig& cfg, bool allQkv = false) {
  ASSERT_TRUE(validateConfig(cfg).ok()) << validateConfig(cfg).error().message;
  GptParams p = initParams(cfg, 7);
  SplitMix64 rng(99);
  for (auto& np : p.list()) {  // non-trivial biases and LayerNorm parameters
    if (np.isVector) {
      for (Eigen::Index i = 0; i < np.value->size(); ++i) np.value->data()[i] += rng.uniform(-0.3f, 0.3f);
    }
  }
  const Batch b = randomBatch(2, cfg.seqLen, cfg.vocab, 3);
  ForwardCache cache;
  ASSERT_TRUE(forward(p, b, cache).ok());
  GptParams g = zeroParams(cfg);
  backward(p, b, cache, g);
  auto params = p.list();
  auto grads = g.list();
  const float h = 1e-2f;
  int checked = 0;
  for (std::size_t t = 0; t < params.size(); ++t) {
    RowMatrix& v = *params[t].value;
    const bool qkv = params[t].name.find("in_proj") != std::string::npos;
    const Eigen::Index n = v.size(), stride = allQkv && qkv ? 1 : std::max<Eigen::Index>(1, n / 12);
    for (Eigen::Index i = 0; i < n; i += stride) {
      const float old = v.data()[i];
      v.data()[i] = old + h;
      const double lp = forward(p, b, cache)->loss;
      v.data()[i] = old - h;
      const double lm = forward(p, b, cache)->loss;
      v.data()[i] = old;
      const double fd = (lp - lm) / (2.0 * h);
      const double an = grads[t].value->data()[i];
      EXPECT_NEAR(an, fd, 2e-3 + 3e-2 * std::abs(fd)) << params[t].name << "[" << i << "]";
      ++checked;
    }
  }
  EXPECT_GT(checked, 50);
}

}  // namespace

// RoPE: q and k turned by their positions; the backward turns their gradients back. A base of 10
// turns every pair noticeably within T = 6, so a missing inverse rotation cannot hide.
TEST(TrainVariants, FiniteDifferenceRope) { checkGradients(variant(2, 1, false, TrainPositions::Rope, 0, 10.0f), true); }
TEST(TrainVariants, FiniteDifferenceRopeTwoLayersDefaultBase) {
  checkGradients(variant(2, 2, false, TrainPositions::Rope, 0));
}
// ALiBi: a fixed bias on the scores, no parameters; h = 4 gives four different slopes.
TEST(TrainVariants, FiniteDifferenceAlibi) { checkGradients(variant(4, 2, false, TrainPositions::Alibi, 0)); }
// GQA: K/V projected to N heads; a shared head's gradient sums over its query heads.
TEST(TrainVariants, FiniteDifferenceGroupedKvHeads) {
  checkGradients(variant(4, 1, false, TrainPositions::Learned, 2), true);
}
TEST(TrainVariants, FiniteDifferenceMultiQuery) { checkGradients(variant(4, 2, false, TrainPositions::Learned, 1)); }
// All three together, with the MLP: RoPE on 2 K/V heads shared by 4 query heads (d_k = 2).
TEST(TrainVariants, FiniteDifferenceRopeWithGroupsAndMlp) {
  checkGradients(variant(4, 2, true, TrainPositions::Rope, 2, 10.0f), true);
}
TEST(TrainVariants, FiniteDifferenceAlibiWithMultiQuery) {
  checkGradients(variant(2, 1, false, TrainPositions::Alibi, 1), true);
}

// RoPE and ALiBi models have no position table: positions act inside attention only.
TEST(TrainVariants, NoPositionTableWithRopeOrAlibi) {
  for (TrainPositions pos : {TrainPositions::Rope, TrainPositions::Alibi}) {
    GptParams p = initParams(variant(2, 1, false, pos, 0), 1);
    EXPECT_EQ(p.pos.size(), 0);
    for (const auto& np : p.list()) EXPECT_NE(np.name, "pos.weight");
    EXPECT_EQ(p.count(), paramCount(p.cfg));
  }
  GptParams g = initParams(variant(4, 1, false, TrainPositions::Learned, 1), 1);
  EXPECT_EQ(g.blocks[0].inW.rows(), 8 + 2 * 1 * 2);  // W_q (d rows) + W_k, W_v (N d_k rows each)
  EXPECT_EQ(g.count(), paramCount(g.cfg));
}

TEST(TrainVariants, BadCombinationsAreRefusedWithTheirValues) {
  auto odd = validateConfig(variant(4, 1, false, TrainPositions::Rope, 0));  // d_k = 8 / 4 = 2: fine
  EXPECT_TRUE(odd.ok());
  GptConfig c = variant(2, 1, false, TrainPositions::Rope, 0);
  c.dModel = 6;  // d_k = 3
  auto s = validateConfig(c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("d_k = d_model / h = 3 must be even"), std::string::npos) << s.error().message;
  auto kv = validateConfig(variant(4, 1, false, TrainPositions::Learned, 3));
  ASSERT_FALSE(kv.ok());
  EXPECT_NE(kv.error().message.find("kv-heads N (3) must divide heads (h = 4)"), std::string::npos)
      << kv.error().message;
  auto base = validateConfig(variant(2, 1, false, TrainPositions::Rope, 0, -1.0f));
  ASSERT_FALSE(base.ok());
  EXPECT_NE(base.error().message.find("RoPE base must be a finite number > 0, got -1"), std::string::npos);
  EXPECT_FALSE(trainPositionsFromName("sinusoidal").ok());
  EXPECT_EQ(*trainPositionsFromName("alibi"), TrainPositions::Alibi);
}

namespace {
Checkpoint sampleCheckpoint(const GptConfig& cfg) {
  Checkpoint c;
  GptConfig g = cfg;
  g.vocab = 11;
  g.seqLen = 8;
  c.params = initParams(g, 5);
  c.task = {TaskKind::Induction, 11, 8, 2, 4, ""};
  c.step = 3;
  c.seed = 5;
  return c;
}
}  // namespace

// Separate projections: q_proj (h d_k, d), k_proj and v_proj (N d_k, d), o_proj, as the engine's
// --weights reads them; the metadata records the variant; the round trip is exact.
TEST(TrainVariants, CheckpointUsesSeparateProjectionNamesAndRoundTrips) {
  const Checkpoint c = sampleCheckpoint(variant(4, 2, false, TrainPositions::Rope, 2, 500.0f));
  auto parsed = parseSafetensorsWithMetadata(encodeCheckpoint(c), "ckpt");
  ASSERT_TRUE(parsed.ok());
  const auto& t = parsed->tensors;
  EXPECT_EQ(t.at("blocks.1.attn.q_proj.weight").shape, (Shape{8, 8}));
  EXPECT_EQ(t.at("blocks.1.attn.k_proj.weight").shape, (Shape{4, 8}));  // N d_k = 2 * 2
  EXPECT_EQ(t.at("blocks.1.attn.v_proj.bias").shape, (Shape{4}));
  EXPECT_EQ(t.at("blocks.0.attn.o_proj.weight").shape, (Shape{8, 8}));
  EXPECT_EQ(t.count("blocks.0.attn.in_proj_weight"), 0u);
  EXPECT_EQ(t.count("pos.weight"), 0u);
  // k_proj is the middle block of the stacked rows, unchanged.
  EXPECT_EQ(t.at("blocks.0.attn.k_proj.weight").data[1 * 8 + 3], c.params.blocks[0].inW(8 + 1, 3));
  EXPECT_EQ(t.at("blocks.0.attn.v_proj.bias").data[2], c.params.blocks[0].inB(0, 8 + 4 + 2));
  EXPECT_EQ(parsed->metadata.at("positions"), "rope");
  EXPECT_EQ(parsed->metadata.at("kv_heads"), "2");
  EXPECT_EQ(parsed->metadata.at("rope_base"), "500");

  auto back = decodeCheckpoint(encodeCheckpoint(c), "ckpt");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->params.cfg.positions, TrainPositions::Rope);
  EXPECT_EQ(back->params.cfg.kv(), 2);
  EXPECT_EQ(back->params.cfg.ropeBase, 500.0f);
  Checkpoint copy = c;
  auto a = copy.params.list(), b = back->params.list();
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(*a[i].value, *b[i].value) << a[i].name;

  // ALiBi with N = h: separate names too (any variant does), no rope_base.
  auto alibi = parseSafetensorsWithMetadata(encodeCheckpoint(sampleCheckpoint(variant(2, 1, false, TrainPositions::Alibi, 0))), "a");
  ASSERT_TRUE(alibi.ok());
  EXPECT_EQ(alibi->metadata.at("positions"), "alibi");
  EXPECT_EQ(alibi->metadata.at("kv_heads"), "2");
  EXPECT_EQ(alibi->metadata.count("rope_base"), 0u);
  EXPECT_EQ(alibi->tensors.count("blocks.0.attn.q_proj.weight"), 1u);
}

// A plain model's checkpoint is what it always was: in_proj names, no variant keys.
TEST(TrainVariants, PlainCheckpointIsUnchanged) {
  auto parsed = parseSafetensorsWithMetadata(encodeCheckpoint(sampleCheckpoint(variant(2, 1, false, TrainPositions::Learned, 0))), "p");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->tensors.count("blocks.0.attn.in_proj_weight"), 1u);
  EXPECT_EQ(parsed->tensors.count("pos.weight"), 1u);
  for (const char* key : {"positions", "kv_heads", "rope_base"}) EXPECT_EQ(parsed->metadata.count(key), 0u) << key;
  // kv_heads = h written explicitly is the same model: still in_proj names.
  auto same = parseSafetensorsWithMetadata(encodeCheckpoint(sampleCheckpoint(variant(2, 1, false, TrainPositions::Learned, 2))), "p");
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->tensors.count("blocks.0.attn.in_proj_weight"), 1u);
}

TEST(TrainVariants, BadVariantMetadataIsListed) {
  const Checkpoint c = sampleCheckpoint(variant(4, 1, false, TrainPositions::Rope, 2));
  auto parsed = parseSafetensorsWithMetadata(encodeCheckpoint(c), "ckpt");
  ASSERT_TRUE(parsed.ok());
  auto meta = parsed->metadata;
  meta["positions"] = "spiral";
  meta["kv_heads"] = "3";
  auto bad = decodeCheckpoint(encodeSafetensors(parsed->tensors, meta), "m.safetensors");
  ASSERT_FALSE(bad.ok());
  const std::string& m = bad.error().message;
  EXPECT_NE(m.find("metadata 'positions' is 'spiral', expected learned, rope or alibi"), std::string::npos) << m;
  EXPECT_NE(m.find("metadata kv_heads (3) does not divide heads (4)"), std::string::npos) << m;

  meta = parsed->metadata;
  meta.erase("rope_base");
  auto noBase = decodeCheckpoint(encodeSafetensors(parsed->tensors, meta), "m.safetensors");
  ASSERT_FALSE(noBase.ok());
  EXPECT_NE(noBase.error().message.find("metadata 'rope_base' is missing"), std::string::npos);

  // The names must match the variant: in_proj names under rope metadata are refused, listed.
  meta = parsed->metadata;
  meta["kv_heads"] = "4";
  auto wrongNames = decodeCheckpoint(encodeSafetensors(parsed->tensors, meta), "m.safetensors");
  ASSERT_FALSE(wrongNames.ok());
  EXPECT_NE(wrongNames.error().message.find("'blocks.0.attn.k_proj.weight' has shape (4, 8), expected (8, 8)"),
            std::string::npos) << wrongNames.error().message;
}

// A checkpoint layer in the pipeline runs the same variant: the engine's forward on it gives the
// very weights the whole model computed there.
TEST(TrainVariants, CheckpointLayerRunsTheSameVariant) {
  for (TrainPositions pos : {TrainPositions::Rope, TrainPositions::Alibi}) {
    TrainSettings s;
    s.task = {TaskKind::Induction, 16, 12, 3, 5, ""};
    s.model.dModel = 16;
    s.model.heads = 4;
    s.model.kvHeads = 2;
    s.model.layers = 2;
    s.model.positions = pos;
    s.batch = 4;
    auto t = Trainer::make(s);
    ASSERT_TRUE(t.ok()) << t.error().message;
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(t->step().ok());
    auto c = decodeCheckpoint(encodeCheckpoint(t->checkpoint()), "ckpt");
    ASSERT_TRUE(c.ok()) << c.error().message;
    auto probe = checkpointProbe(*c, 2, "");
    ASSERT_TRUE(probe.ok());
    ForwardCache cache;
    ASSERT_TRUE(forward(c->params, probe->batch, cache).ok());
    for (int layer = 0; layer < 2; ++layer) {
      auto m = trainedLayerModel(c->params, probe->batch, layer, probe->labels);
      ASSERT_TRUE(m.ok()) << m.error().message;
      EXPECT_EQ(m->options.kvHeads, 2);
      EXPECT_EQ(m->options.positions, pos == TrainPositions::Rope ? AttnPositions::Rope : AttnPositions::Alibi);
      EXPECT_EQ(m->weights.wk.cols(), 2 * 4);  // N d_k
      Trace tr;
      ASSERT_TRUE(mhascope::forward(m->inputs, m->weights, m->options, tr).ok());
      EXPECT_EQ(tr.tensor(StageId::Weights).data,
                cache.layers[static_cast<std::size_t>(layer)].attn.tensor(StageId::Weights).data);
    }
  }
}

// --init with another variant is refused naming both.
TEST(TrainVariants, InitWithAnotherVariantIsRefused) {
  TrainSettings s;
  s.task = {TaskKind::Induction, 16, 12, 3, 5, ""};
  s.model.dModel = 16;
  s.model.layers = 1;
  s.model.positions = TrainPositions::Rope;
  auto t = Trainer::make(s);
  ASSERT_TRUE(t.ok());
  TrainSettings other = s;
  other.model.positions = TrainPositions::Alibi;
  auto bad = Trainer::make(other, t->checkpoint());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("positions rope (base 10000), kv-heads 2; the settings ask for"),
            std::string::npos) << bad.error().message;
  EXPECT_NE(bad.error().message.find("positions alibi, kv-heads 2"), std::string::npos);
  EXPECT_TRUE(Trainer::make(s, t->checkpoint()).ok());
}
