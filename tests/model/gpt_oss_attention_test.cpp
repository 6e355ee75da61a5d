// gpt-oss's attention, one layer at a time, against the fixtures script's reference (family_forward and attend, as
// transformers' modeling_gpt_oss.py computes them): the engine with the folder's own q/k/v/o weights and biases, its
// learned sinks, YaRN's frequencies and attention factor from the config's rope_scaling, the sliding layer's window
// (layer 0: W = 4) and the full one, on the reference's own attention inputs (s{k}_normed), gives the reference's
// weights and each row's sink share. The layers' inputs come from the reference, so no MLP is needed here.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "attention/engine.hpp"
#include "check_tensor.hpp"
#include "io/npy.hpp"
#include "model/config.hpp"
#include "model/weight_store.hpp"
#include "model_fixtures.hpp"

namespace mhascope::model {
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
  auto store = WeightStore::openFolder(kModels + "gpt_oss");
  ASSERT_TRUE(store.ok()) << store.error().message;
  // The fixture's rope_scaling (its config.json): YaRN, factor 2 over 4096 positions, truncate false.
  ModelSpec spec;
  spec.dModel = kD;
  spec.heads = kH;
  spec.headDim = kDk;
  spec.ropeTheta = 150000.0;
  spec.yarn = {true, 2.0, 4096.0, 32.0, 1.0, false, 0.1 * std::log(2.0) + 1.0};
  int rows = 0;
  for (int layer = 0; layer < 2; ++layer) {
    const std::string P = "model.layers." + std::to_string(layer) + ".self_attn.";
    MhaWeights w;
    w.dModel = kD;
    w.hasBias = true;
    linear(*store, P + "q_proj", w.wq, w.bq);
    linear(*store, P + "k_proj", w.wk, w.bk);
    linear(*store, P + "v_proj", w.wv, w.bv);
    linear(*store, P + "o_proj", w.wo, w.bo);
    AttentionOptions opt;
    opt.heads = kH;
    opt.kvHeads = kN;
    opt.headDim = kDk;
    opt.causal = true;
    opt.window = layer == 0 ? 4 : 0;  // layer_types: sliding, then full
    opt.positions = AttnPositions::Rope;
    opt.ropeBase = 150000.0f;
    opt.ropeInvFreq = ropeInverseFrequencies(spec);
    opt.ropeGain = static_cast<float>(spec.yarn.attentionFactor);
    opt.sinkLogits.resize(kH);
    ASSERT_TRUE(store->read(*store->find(P + "sinks"), opt.sinkLogits.data()).ok());
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
