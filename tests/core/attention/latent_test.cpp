// Multi-head latent attention against the fixtures script's reference (transformers'
// modeling_deepseek_v3.py's formulas, tests/fixtures/models/latent/): the normed latent, the turned
// shared key, every head's weights and the output; the absorbed form equal to the expanded one; the
// cache's size; and every size or weight that does not fit named.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "attention/latent.hpp"
#include "attention/model.hpp"
#include "lessons/latent.hpp"
#include "../check_tensor.hpp"
#include "io/npy.hpp"

namespace mhascope {
namespace {

namespace fs = std::filesystem;
const fs::path kDir = fs::path(MHASCOPE_FIXTURES_DIR) / "models" / "latent";

Tensor load(const std::string& name) {
  auto t = loadNpy((kDir / (name + ".npy")).string());
  EXPECT_TRUE(t.ok()) << name << ": " << (t.ok() ? "" : t.error().message);
  return t.ok() ? std::move(*t) : Tensor{};
}

// nn.Linear's (out, in) as stored → the (in, out) y = x W layout.
RowMatrix linear(const std::string& name) {
  const Tensor t = load(name);
  return ConstMatrixMap(t.ptr(), t.dim(0), t.dim(1)).transpose();
}

struct Fixture {
  LatentSizes sizes;
  LatentWeights weights;
  RowMatrix x;
};

Fixture fixture() {
  std::ifstream in(kDir / "sizes.json");
  const auto j = nlohmann::json::parse(in);
  Fixture f;
  f.sizes.dModel = j["d_model"];
  f.sizes.heads = j["heads"];
  f.sizes.kvRank = j["kv_lora_rank"];
  f.sizes.ropeDim = j["qk_rope_head_dim"];
  f.sizes.nopeDim = j["qk_nope_head_dim"];
  f.sizes.valueDim = j["v_head_dim"];
  f.sizes.normEps = j["eps"].get<float>();
  f.sizes.ropeBase = j["rope_theta"].get<float>();
  f.weights.wq = linear("q_proj");
  f.weights.wkva = linear("kv_a_proj_with_mqa");
  f.weights.wkvb = linear("kv_b_proj");
  f.weights.wo = linear("o_proj");
  const Tensor g = load("kv_a_layernorm");
  f.weights.kvNorm = Eigen::Map<const RowVector>(g.ptr(), g.dim(0));
  const Tensor x = load("x");
  f.x = ConstMatrixMap(x.ptr(), x.dim(0), x.dim(1));
  return f;
}

TEST(LatentAttention, EqualsTheDeepSeekReference) {
  const Fixture f = fixture();
  auto r = latentAttention(f.x, f.weights, f.sizes);
  ASSERT_TRUE(r.ok()) << r.error().message;
  for (const auto& [name, got] : {std::pair{"latent", &r->latent}, {"k_rope", &r->kRope}, {"weights", &r->weights},
                                  {"output", &r->output}}) {
    const Tensor want = load(name);
    ASSERT_EQ(got->data.size(), want.data.size()) << name;
    EXPECT_TRUE(testing::checkTensor(name, got->ptr(), want.ptr(), want.data.size(), 2e-5, 2e-4));
  }
  // The absorbed form is the same attention: every weight and output within float rounding.
  EXPECT_LT(r->maxWeightDiff, 1e-5);
  EXPECT_LT(r->maxOutputDiff, 1e-4);
  const Tensor want = load("weights");
  EXPECT_TRUE(testing::checkTensor("weights (absorbed)", r->weightsAbsorbed.ptr(), want.ptr(), want.data.size(), 2e-5, 2e-4));
}

TEST(LatentAttention, CachesTheLatentAndOneRotaryKey) {
  LatentSizes v3;  // DeepSeek-V3's config.json: kv_lora_rank 512, qk_rope_head_dim 64, 128 heads of 128 + 64, v 128
  v3.heads = 128;
  v3.kvRank = 512;
  v3.ropeDim = 64;
  v3.nopeDim = 128;
  v3.valueDim = 128;
  EXPECT_EQ(v3.cachedPerToken(), 576);
  EXPECT_EQ(v3.expandedPerToken(), 128 * (128 + 64 + 128));
}

TEST(LatentAttention, SizesAndWeightsThatDoNotFitAreNamed) {
  Fixture f = fixture();
  LatentSizes odd = f.sizes;
  odd.ropeDim = 7;
  auto r = latentAttention(f.x, f.weights, odd);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("qk_rope_head_dim d_r must be even, got 7"), std::string::npos) << r.error().message;
  LatentWeights w = f.weights;
  w.wkvb.resize(3, 5);
  r = latentAttention(f.x, w, f.sizes);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("kv_b_proj must be (in, out) = (16, 80), got (3, 5)"), std::string::npos)
      << r.error().message;
  LatentSizes zero = f.sizes;
  zero.kvRank = 0;
  r = latentAttention(f.x, f.weights, zero);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("kv_lora_rank r must be from 1"), std::string::npos) << r.error().message;
  RowMatrix narrow = f.x.leftCols(5);
  r = latentAttention(narrow, f.weights, f.sizes);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("the input has 5 features"), std::string::npos) << r.error().message;
}

TEST(LatentAttention, RandomWeightsGiveTheSameAttentionBothWays) {
  for (int r : {1, 4, 40}) {
    LatentSizes s;
    s.dModel = 24;
    s.heads = 3;
    s.kvRank = r;
    s.ropeDim = 4;
    s.nopeDim = 6;
    s.valueDim = 5;
    RowMatrix x = RowMatrix::Random(9, 24);
    auto out = latentAttention(x, randomLatentWeights(s, 3), s);
    ASSERT_TRUE(out.ok()) << out.error().message;
    EXPECT_LT(out->maxWeightDiff, 1e-5) << "r " << r;
    EXPECT_LT(out->maxOutputDiff, 1e-4) << "r " << r;
    // Causal: no query sees a later key, in either form.
    for (std::int64_t i = 0; i < 3; ++i)
      for (std::int64_t t = 0; t < 9; ++t)
        for (std::int64_t j = t + 1; j < 9; ++j) {
          EXPECT_EQ(out->weights.data[static_cast<std::size_t>((i * 9 + t) * 9 + j)], 0.0f);
          EXPECT_EQ(out->weightsAbsorbed.data[static_cast<std::size_t>((i * 9 + t) * 9 + j)], 0.0f);
        }
  }
}

// The lesson on the live model: h and d_k from it, the cache rows from the sizes, the two forms equal,
// the words with the live numbers.
TEST(LatentLesson, CountsTheCacheAndComparesTheTwoFormsOnTheSentence) {
  ModelConfig cfg;
  cfg.dModel = 16;
  cfg.heads = 4;
  auto m = buildModel(cfg);
  ASSERT_TRUE(m.ok()) << m.error().message;
  auto r = latentLesson(*m, 16, 4);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->sizes.nopeDim, 4);
  EXPECT_EQ(r->sizes.valueDim, 4);
  ASSERT_EQ(r->cache.size(), 4u);
  EXPECT_EQ(r->cache[0].numbers, 20);           // r + d_r
  EXPECT_EQ(r->cache[1].numbers, 4 * (4 + 4 + 4));  // every head's keys (d_n + d_r) and values
  EXPECT_EQ(r->cache[2].numbers, 2 * 12);       // GQA with h / 2 K/V heads
  EXPECT_EQ(r->cache[3].numbers, 12);           // MQA
  EXPECT_LT(r->result.maxWeightDiff, 1e-5);
  const std::string text = latentCacheText(*r);
  EXPECT_NE(text.find("Here r = 16 and d_r = 4: 20 numbers per token and layer, against 48"), std::string::npos) << text;
  EXPECT_NE(text.find("would cache 12, fewer"), std::string::npos) << text;
  EXPECT_EQ(r->published.size(), 3u);
  auto bad = latentLesson(*m, 16, 3);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("must be even, got 3"), std::string::npos);
}

}  // namespace
}  // namespace mhascope
