// mhascope against PyTorch 1.13's nn.MultiheadAttention, stage by stage. The fixtures in
// tests/fixtures/torch/ were made by scripts/gen_torch_fixtures.py (see its docstring); this test
// needs no Python. Weights come in through the same .safetensors + state_dict path users take,
// so a silent transpose of PyTorch's (out, in) layout would fail here.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "check_tensor.hpp"
#include "attention/decode.hpp"
#include "attention/engine.hpp"
#include "io/file_io.hpp"
#include "io/npy.hpp"
#include "io/safetensors.hpp"
#include "io/weights_io.hpp"

namespace mhascope {
namespace {

namespace fs = std::filesystem;
using mhascope::testing::checkTensor;

const fs::path kRoot = fs::path(MHASCOPE_FIXTURES_DIR) / "torch";

Tensor mustLoad(const fs::path& p, NpyValues values = NpyValues::FiniteOnly) {
  auto t = loadNpy(p.string(), values);
  EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message);
  return t.ok() ? std::move(t).value() : Tensor{};
}

class TorchFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(TorchFixture, EveryStageMatchesPyTorch) {
  const fs::path dir = kRoot / GetParam();
  auto metaText = readFile((dir / "meta.json").string());
  ASSERT_TRUE(metaText.ok()) << metaText.error().message;
  const auto meta = nlohmann::json::parse(*metaText);
  AttentionInputs in;
  in.query = mustLoad(dir / "query.npy");
  in.key = mustLoad(dir / "key.npy");
  in.value = mustLoad(dir / "value.npy");
  in.selfAttention = !meta["cross"].get<bool>();
  AttentionOptions opt;
  opt.heads = meta["heads"];
  opt.causal = meta["causal"];
  opt.scale = meta["scale"] == "sqrt-dk" ? ScaleKind::SqrtDk
              : meta["scale"] == "none"  ? ScaleKind::None
                                         : ScaleKind::SqrtDModel;
  if (meta["key_padding_mask"]) opt.keyPaddingMask = mustLoad(dir / "key_padding_mask.npy");
  if (meta["attn_mask"]) opt.attnMask = mustLoad(dir / "attn_mask.npy");
  // The variants (absent in the multi-head fixtures): N K/V heads, RoPE or ALiBi, the window.
  opt.kvHeads = meta.value("kv_heads", 0);
  const std::string positions = meta.value("positions", "none");
  opt.positions = positions == "rope" ? AttnPositions::Rope : positions == "alibi" ? AttnPositions::Alibi : AttnPositions::None;
  opt.ropeStyle = meta.value("rope_style", "half") == "interleaved" ? RopeStyle::Interleaved : RopeStyle::Half;
  opt.ropeBase = meta.value("rope_base", 10000.0f);
  opt.window = meta.value("window", 0);
  opt.sinks = meta.value("sinks", 0);
  if (meta.contains("sink_logits")) opt.sinkLogits = meta["sink_logits"].get<std::vector<float>>();  // gpt-oss's sinks
  auto sd = loadSafetensors((dir / "weights.safetensors").string());
  ASSERT_TRUE(sd.ok()) << sd.error().message;
  auto w = weightsFromStateDict(*sd, meta["d_model"]);
  ASSERT_TRUE(w.ok()) << w.error().message;
  EXPECT_EQ(w->hasBias, meta["bias"].get<bool>());

  Trace trace;
  const Status s = forward(in, *w, opt, trace);
  ASSERT_TRUE(s.ok()) << s.error().message;
  for (const auto& stage : trace.stages) {
    const char* name = stageInfo(stage.id).name;
    // A variant's stage is recorded exactly when the fixture has it.
    EXPECT_EQ(stageRecorded(trace, stage.id), fs::exists(dir / (std::string(name) + ".npy"))) << name;
    if (!stageRecorded(trace, stage.id)) continue;
    // masked_scores holds -inf at blocked cells, the one stage where that is the right value.
    const Tensor ref = mustLoad(dir / (std::string(name) + ".npy"),
                                stage.id == StageId::MaskedScores ? NpyValues::AllowMinusInfinity : NpyValues::FiniteOnly);
    const Tensor& mine = trace.copyOf(stage.id);  // lazy stages: their whole table
    ASSERT_EQ(mine.shape, ref.shape) << name;
    EXPECT_TRUE(checkTensor(name, mine.ptr(), ref.ptr(), ref.data.size(), 2e-5, 2e-4));
  }
  for (const auto& row : meta["torch_nan_rows"]) {
    EXPECT_TRUE(trace.isFullyMasked(row[0], row[1])) << "PyTorch gives NaN here; mhascope must flag the row";
  }
  // A causal self-attention fixture decoded through the KV cache (prefill 2, then one token at a
  // time) gives PyTorch's output too, and caches its keys after RoPE.
  if (opt.causal && !meta["cross"].get<bool>() && !meta["attn_mask"].get<bool>() && in.query.dim(1) > 2) {
    auto d = decode(in, *w, opt, 2);
    ASSERT_TRUE(d.ok()) << d.error().message;
    const Tensor ref = mustLoad(dir / "output.npy");
    EXPECT_TRUE(checkTensor("decoded output", d->output.ptr(), ref.ptr(), ref.data.size(), 2e-5, 2e-4));
    const bool rope = opt.positions == AttnPositions::Rope;
    const Tensor keys = mustLoad(dir / (rope ? "k_rotated.npy" : "k_heads.npy"));
    EXPECT_TRUE(checkTensor("k_cache", d->kCache.ptr(), keys.ptr(), keys.data.size(), 2e-5, 2e-4));
  }
  // With a learned sink a fully masked row gives the sink everything: weights 0 and share 1, exactly.
  if (!opt.sinkLogits.empty()) {
    const Tensor& share = trace.tensor(StageId::SinkShare);
    for (const auto& row : meta["torch_nan_rows"]) {
      for (int head = 0; head < opt.heads; ++head) {
        const std::size_t r = (static_cast<std::size_t>(row[0].get<int>()) * opt.heads + head) * trace.tq + row[1].get<int>();
        EXPECT_EQ(share.data[r], 1.0f) << "head " << head;
        for (int k = 0; k < trace.tk; ++k) EXPECT_EQ(trace.tensor(StageId::Weights).data[r * trace.tk + k], 0.0f);
      }
    }
  }
}

std::vector<std::string> fixtureNames() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(kRoot, ec)) {
    if (e.is_directory()) names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

INSTANTIATE_TEST_SUITE_P(PyTorch, TorchFixture, ::testing::ValuesIn(fixtureNames()),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

TEST(TorchFixtures, AllPresent) { EXPECT_GE(fixtureNames().size(), 10u) << "fixtures missing in " << kRoot; }

TEST(WeightsIo, RoundTripKeepsOrientation) {
  // A non-symmetric matrix: a silent transpose on load or save would change it.
  MhaWeights w = initWeights(3, true, 11);
  ASSERT_NE(w.wq(0, 1), w.wq(1, 0));
  const StateDict sd = stateDictFromWeights(w);
  // PyTorch layout: in_proj_weight[j, i] = W_q[i, j] (out, in).
  EXPECT_EQ(sd.at("in_proj_weight").data[0 * 3 + 1], w.wq(1, 0));
  auto back = weightsFromStateDict(sd, 3);
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(back->wq == w.wq && back->wk == w.wk && back->wv == w.wv && back->wo == w.wo);
  EXPECT_TRUE(back->bq == w.bq && back->bo == w.bo);
  // Through the file format too.
  auto parsed = parseSafetensors(encodeSafetensors(sd), "round trip");
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  auto again = weightsFromStateDict(*parsed, 3);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->wq == w.wq && again->wo == w.wo);
}

TEST(WeightsIo, SeparateProjectionsRoundTripWithGroupedHeads) {
  // d_model 8, h 4 (d_k 2), N 2: W_k and W_v are (8, 4); saved as q/k/v/o_proj (out, in).
  MhaWeights w = initWeights(8, true, 3, 4);
  const StateDict sd = stateDictFromWeights(w);
  ASSERT_EQ(sd.count("in_proj_weight"), 0u);
  EXPECT_EQ(sd.at("k_proj.weight").shape, (Shape{4, 8}));
  EXPECT_EQ(sd.at("k_proj.weight").data[1 * 8 + 0], w.wk(0, 1));  // (out, in): transposed
  EXPECT_EQ(sd.at("v_proj.bias").shape, (Shape{4}));
  auto back = weightsFromStateDict(sd, 8);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_TRUE(back->wq == w.wq && back->wk == w.wk && back->wv == w.wv && back->wo == w.wo);
  EXPECT_TRUE(back->bk == w.bk && back->bv == w.bv && back->bo == w.bo);
  // Under self_attn., as inside a Llama layer.
  StateDict prefixed;
  for (const auto& [name, t] : sd) prefixed["self_attn." + name] = t;
  auto again = weightsFromStateDict(prefixed, 8);
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_TRUE(again->wk == w.wk);
}

TEST(WeightsIo, SeparateProjectionMismatchesAreListed) {
  StateDict sd = stateDictFromWeights(initWeights(8, true, 3, 4));
  sd.erase("o_proj.weight");
  sd.erase("q_proj.bias");
  sd["v_proj.weight"] = Tensor({6, 8}, {});
  auto w = weightsFromStateDict(sd, 8);
  ASSERT_FALSE(w.ok());
  const std::string& m = w.error().message;
  EXPECT_NE(m.find("missing tensor 'o_proj.weight'"), std::string::npos) << m;
  EXPECT_NE(m.find("must all have a .bias or none"), std::string::npos) << m;
}

TEST(WeightsIo, MismatchesAreListedTogether) {
  StateDict sd = stateDictFromWeights(initWeights(4, true, 1));
  sd.erase("out_proj.weight");
  sd["in_proj_weight"] = Tensor({12, 5}, {});
  sd["extra.thing"] = Tensor({2}, {});
  auto w = weightsFromStateDict(sd, 4);
  ASSERT_FALSE(w.ok());
  const std::string& m = w.error().message;
  EXPECT_NE(m.find("missing tensor 'out_proj.weight'"), std::string::npos) << m;
  EXPECT_NE(m.find("'in_proj_weight' has shape (12, 5), expected (12, 4)"), std::string::npos) << m;
  EXPECT_NE(m.find("unexpected tensor 'extra.thing'"), std::string::npos) << m;
}

}  // namespace
}  // namespace mhascope
