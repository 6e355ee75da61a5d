// Checkpoints: PyTorch state_dict names, metadata, round trip, and one error listing every
// problem of a bad file.
#include <gtest/gtest.h>

#include "io/safetensors.hpp"
#include "train/checkpoint.hpp"

using namespace mhascope;
using namespace mhascope::train;

namespace {
Checkpoint sample(bool mlp) {
  Checkpoint c;
  c.params = initParams({11, 8, 8, 2, 2, mlp}, 5);
  c.task = {TaskKind::Induction, 11, 8, 2, 4, ""};
  c.step = 42;
  c.seed = 5;
  return c;
}
}  // namespace

TEST(TrainCheckpoint, NamesAreThePyTorchStateDict) {
  auto c = sample(true);
  auto parsed = parseSafetensorsWithMetadata(encodeCheckpoint(c), "ckpt");
  ASSERT_TRUE(parsed.ok());
  std::vector<std::string> names;
  for (const auto& [n, t] : parsed->tensors) names.push_back(n);
  for (const char* want : {"emb.weight", "pos.weight", "blocks.0.ln1.weight", "blocks.0.ln1.bias",
                           "blocks.1.attn.in_proj_weight", "blocks.1.attn.in_proj_bias",
                           "blocks.1.attn.out_proj.weight", "blocks.1.attn.out_proj.bias", "blocks.0.ln2.weight",
                           "blocks.0.mlp.0.weight", "blocks.0.mlp.0.bias", "blocks.1.mlp.2.weight",
                           "blocks.1.mlp.2.bias", "lnf.weight", "lnf.bias", "out.weight", "out.bias"}) {
    EXPECT_TRUE(parsed->tensors.count(want)) << want;
  }
  EXPECT_EQ(names.size(), 2u + 2 * 12 + 4);
  EXPECT_EQ(parsed->tensors.at("blocks.0.attn.in_proj_weight").shape, (Shape{24, 8}));
  EXPECT_EQ(parsed->tensors.at("blocks.0.attn.in_proj_bias").shape, (Shape{24}));
  EXPECT_EQ(parsed->tensors.at("blocks.0.mlp.0.weight").shape, (Shape{32, 8}));
  EXPECT_EQ(parsed->metadata.at("task"), "induction");
  EXPECT_EQ(parsed->metadata.at("d_model"), "8");
  EXPECT_EQ(parsed->metadata.at("mlp"), "1");
}

TEST(TrainCheckpoint, RoundTrip) {
  auto c = sample(false);
  auto back = decodeCheckpoint(encodeCheckpoint(c), "ckpt");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->step, 42);
  EXPECT_EQ(back->task.periodMax, 4);
  auto a = c.params.list(), b = back->params.list();
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(*a[i].value, *b[i].value) << a[i].name;
}

TEST(TrainCheckpoint, EveryProblemInOneMessage) {
  auto c = sample(false);
  auto parsed = parseSafetensorsWithMetadata(encodeCheckpoint(c), "ckpt");
  ASSERT_TRUE(parsed.ok());
  TensorMap t = parsed->tensors;
  t.erase("lnf.bias");
  t["out.weight"] = Tensor({3, 3}, {});
  t["extra.weight"] = Tensor({2}, {});
  auto bad = decodeCheckpoint(encodeSafetensors(t, parsed->metadata), "m.safetensors");
  ASSERT_FALSE(bad.ok());
  const std::string& m = bad.error().message;
  EXPECT_NE(m.find("m.safetensors is not a usable mhascope checkpoint"), std::string::npos) << m;
  EXPECT_NE(m.find("missing tensor 'lnf.bias' (8,)"), std::string::npos) << m;
  EXPECT_NE(m.find("'out.weight' has shape (3, 3), expected (11, 8)"), std::string::npos) << m;
  EXPECT_NE(m.find("unexpected tensor 'extra.weight'"), std::string::npos) << m;

  auto meta = parsed->metadata;
  meta.erase("heads");
  meta["layers"] = "seven";
  meta["task"] = "copy";
  auto badMeta = decodeCheckpoint(encodeSafetensors(parsed->tensors, meta), "m.safetensors");
  ASSERT_FALSE(badMeta.ok());
  const std::string& mm = badMeta.error().message;
  EXPECT_NE(mm.find("metadata 'heads' is missing"), std::string::npos) << mm;
  EXPECT_NE(mm.find("metadata 'layers' is 'seven'"), std::string::npos) << mm;
  EXPECT_NE(mm.find("metadata 'task' is 'copy'"), std::string::npos) << mm;
}
