// gpt-oss's attention, one layer at a time, against the fixtures script's reference (family_forward and attend, as
// transformers' modeling_gpt_oss.py computes them): the gpt_oss family (core/model/families/gpt_oss.cpp) reads the
// folder's config.json — biases, YaRN's frequencies and attention factor, the sliding layer (W = 4) and the full one,
// the mixture of experts — and names its tensors (q/k/v/o weights and biases, the learned sinks); the engine with
// those options, on the reference's own attention inputs (s{k}_normed), gives the reference's weights and each row's
// sink share. The layers' inputs come from the reference, so this checks the attention apart from the MLP; the whole
// forward of both gpt-oss folders is checked with the other families' (model_forward_test).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "attention/engine.hpp"
#include "check_tensor.hpp"
#include "io/file_io.hpp"
#include "io/npy.hpp"
#include "model/config.hpp"
#include "model/families/families.hpp"
#include "model/families/family.hpp"
#include "model/forward.hpp"
#include "model/model_folder.hpp"
#include "model/weight_store.hpp"
#include "model_fixtures.hpp"

namespace mhascope::model {
namespace families {
extern const Family gpt_oss;
}  // namespace families
namespace {

constexpr int kD = 32, kH = 4, kN = 2, kDk = 16;

Tensor mustLoad(const std::string& path) {
  auto t = loadNpy(path);
  EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message);
  return t.ok() ? std::move(t).value() : Tensor{};
}

// An nn.Linear's (out, in) weight as the engine's (in, out) matrix, and its bias.
void linear(const WeightStore& w, const std::string& name, RowMatrix& m, RowVector& b) {
  const StoredTensor* t = w.find(name + ".weight");
  const StoredTensor* bt = w.find(name + ".bias");
  ASSERT_TRUE(t && bt) << name;
  std::vector<float> raw(static_cast<std::size_t>(t->numel)), bias(static_cast<std::size_t>(bt->numel));
  ASSERT_TRUE(w.read(*t, raw.data()).ok());
  ASSERT_TRUE(w.read(*bt, bias.data()).ok());
  const std::int64_t out = t->shape[0], in = t->shape[1];
  m.resize(in, out);
  for (std::int64_t o = 0; o < out; ++o)
    for (std::int64_t i = 0; i < in; ++i) m(i, o) = raw[static_cast<std::size_t>(o * in + i)];
  b = Eigen::Map<const RowVector>(bias.data(), out);
}

TEST(GptOssAttention, SinksYarnAndWindowsEqualTheReference) {
  const Family& family = families::gpt_oss;
  auto store = WeightStore::openFolder(kModels + "gpt_oss");
  ASSERT_TRUE(store.ok()) << store.error().message;
  auto text = readFile(kModels + "gpt_oss/config.json");
  ASSERT_TRUE(text.ok()) << text.error().message;
  auto spec = parseFamilyConfig(family, *text, "gpt_oss/config.json");
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  // What the config says: h = 4 of d_k = 16 over N = 2, biases, YaRN (factor 2 over 4096 positions), W = 4 then none.
  EXPECT_EQ(spec->heads, kH);
  EXPECT_EQ(spec->kvHeads, kN);
  EXPECT_EQ(spec->dk(), kDk);
  EXPECT_TRUE(spec->qkvBias && spec->outputBias);
  ASSERT_TRUE(spec->yarn.enabled);
  EXPECT_FALSE(spec->yarn.truncate);
  EXPECT_EQ(spec->layerKind(0).window, 4);
  EXPECT_EQ(spec->layerKind(1).window, 0);
  EXPECT_EQ(findFamily("gpt_oss"), &family);
  // The mixture: 4 experts, 2 a token, the logits' top 2 then a softmax over them, swiglu_limit 7.
  EXPECT_EQ(spec->moe.experts, 4);
  EXPECT_EQ(spec->moe.perToken, 2);
  EXPECT_EQ(spec->moe.expertFf, 32);
  EXPECT_EQ(routerRuleText(spec->moe.rule, 2), "the logits then top-2, softmax over the 2 (not renormalised)");
  EXPECT_EQ(spec->swigluLimit, 7.0);
  for (const char* folder : {"gpt_oss", "gpt_oss_bf16"}) {
    auto opened = ModelFolder::open(kModels + folder);
    EXPECT_TRUE(opened.ok()) << (opened.ok() ? "" : opened.error().message);
  }
  // The tensors under the family's names.
  const auto named = [&](TensorRole role, int layer) { return tensorName(*family.tensor(role), "", layer); };
  int rows = 0;
  for (int layer = 0; layer < 2; ++layer) {
    MhaWeights w;
    w.dModel = kD;
    w.hasBias = true;
    const auto stem = [&](TensorRole role) {  // "….q_proj" of "….q_proj.weight"
      const std::string n = named(role, layer);
      return n.substr(0, n.rfind('.'));
    };
    linear(*store, stem(TensorRole::Query), w.wq, w.bq);
    linear(*store, stem(TensorRole::Key), w.wk, w.bk);
    linear(*store, stem(TensorRole::Value), w.wv, w.bv);
    linear(*store, stem(TensorRole::Output), w.wo, w.bo);
    const StoredTensor* sinks = store->find(named(TensorRole::Sinks, layer));
    ASSERT_NE(sinks, nullptr);
    ASSERT_EQ(sinks->shape, storedShape(*family.tensor(TensorRole::Sinks), *spec));
    LayerWeights lw;
    lw.sinks.resize(kH);
    ASSERT_TRUE(store->read(*sinks, lw.sinks.data()).ok());
    const AttentionOptions opt = layerOptions(*spec, lw, layer);
    ASSERT_EQ(opt.sinkLogits.size(), static_cast<std::size_t>(kH));
    EXPECT_FLOAT_EQ(opt.ropeGain, static_cast<float>(0.1 * std::log(2.0) + 1.0));
    for (int seq = 0; seq < 3; ++seq) {
      SCOPED_TRACE("layer " + std::to_string(layer) + ", sequence " + std::to_string(seq));
      const std::string ref = kModels + "reference/gpt_oss/s" + std::to_string(seq) + "_";
      const Tensor normed = mustLoad(ref + "normed.npy"), attn = mustLoad(ref + "attn.npy"),
                   share = mustLoad(ref + "sink_share.npy");
      const std::int64_t T = normed.dim(1);
      AttentionInputs in;
      in.query = Tensor({1, T, kD}, {"B", "T_q", "d_model"});
      std::copy_n(normed.ptr() + layer * T * kD, T * kD, in.query.ptr());
      in.key = in.query;
      in.value = in.query;
      Trace t;
      const Status s = forward(in, w, opt, t);
      ASSERT_TRUE(s.ok()) << s.error().message;
      EXPECT_TRUE(mhascope::testing::checkTensor("weights", t.tensor(StageId::Weights).ptr(), attn.ptr() + layer * kH * T * T,
                                                 static_cast<std::size_t>(kH * T * T), 2e-5, 2e-4));
      EXPECT_TRUE(mhascope::testing::checkTensor("sink_share", t.tensor(StageId::SinkShare).ptr(),
                                                 share.ptr() + layer * kH * T, static_cast<std::size_t>(kH * T), 2e-5, 2e-4));
      ++rows;
    }
  }
  EXPECT_EQ(rows, 6);
}

}  // namespace
}  // namespace mhascope::model
