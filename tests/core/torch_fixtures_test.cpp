// mhascope against PyTorch 1.13's nn.MultiheadAttention, stage by stage. The fixtures in
// tests/fixtures/torch/ were made by scripts/gen_torch_fixtures.py (see its docstring); this test
// needs no Python. Weights come in through the same .safetensors + state_dict path users take,
// so a silent transpose of PyTorch's (out, in) layout would fail here.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "check_tensor.hpp"
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
