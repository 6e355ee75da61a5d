// Every fixture model folder of tests/fixtures/models against the PyTorch reference forward of
// scripts/gen_model_fixtures.py (the trained folder's through scripts/gen_trained_fixture.py): each layer's attention weights (h, T, T), the residual stream
// after each layer, the logits, and the recorded trace of one layer.
//
// Tolerance: |got - ref| <= atol + rtol |ref|, float32 on both sides. The F16 and BF16 folders'
// references are computed on the very numbers the files store (rounded, then read as float32), so
// they are held to the same float32 tolerance; their distance from the F32 model itself (the
// rounding of the weights) is checked separately with a tolerance sized for that rounding.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "check_tensor.hpp"
#include "io/npy.hpp"
#include "model/families/families.hpp"
#include "model/forward.hpp"
#include "model_fixtures.hpp"

namespace mhascope::model {
namespace {

// The reference arrays are finite but for the blocked keys' -inf of what a softmax receives (scores_capped).
Tensor loadRef(const std::string& folder, int seq, const std::string& what) {
  auto t = loadNpy(kModels + "reference/" + folder + "/s" + std::to_string(seq) + "_" + what + ".npy",
                   NpyValues::AllowMinusInfinity);
  if (!t) throw std::runtime_error(t.error().message);
  return std::move(*t);
}

std::vector<int> tokensOf(const std::string& folder, int seq) {
  const Tensor t = loadRef(folder, seq, "tokens");
  std::vector<int> ids;
  for (float v : t.data) ids.push_back(static_cast<int>(v));
  return ids;
}

// Concatenates per-layer tensors into one buffer, in layer order (the reference's (L, ...) layout).
std::vector<float> stacked(const std::vector<Tensor>& layers) {
  std::vector<float> all;
  for (const auto& t : layers) all.insert(all.end(), t.data.begin(), t.data.end());
  return all;
}

constexpr double kAtol = 2e-5, kRtol = 2e-4;  // float32 on both sides, a few layers deep

struct Case {
  const char* folder;
  Arch arch;
  const char* dtype;
};

class ModelFolderMatchesTorch : public ::testing::TestWithParam<Case> {};

TEST_P(ModelFolderMatchesTorch, EveryLayerAndTheLogits) {
  const Case c = GetParam();
  auto model = ModelFolder::open(kModels + c.folder);
  ASSERT_TRUE(model.ok()) << model.error().message;
  EXPECT_EQ(model->spec().arch, c.arch);
  EXPECT_EQ(model->dtype(), c.dtype);
  const int L = model->spec().layers;
  for (int seq = 0; seq < 3; ++seq) {
    SCOPED_TRACE(std::string(c.folder) + " sequence " + std::to_string(seq));
    const std::vector<int> ids = tokensOf(c.folder, seq);
    ForwardOptions opt;
    opt.traceLayer = L - 1;
    auto r = runForward(*model, ids, opt);
    ASSERT_TRUE(r.ok()) << r.error().message;
    const Tensor attn = loadRef(c.folder, seq, "attn"), hidden = loadRef(c.folder, seq, "hidden"),
                 normed = loadRef(c.folder, seq, "normed"), logits = loadRef(c.folder, seq, "logits");
    ASSERT_EQ(r->attention.size(), static_cast<std::size_t>(L));
    ASSERT_EQ(r->hidden.size(), static_cast<std::size_t>(L));
    const std::vector<float> gotAttn = stacked(r->attention), gotHidden = stacked(r->hidden);
    ASSERT_EQ(gotAttn.size(), attn.data.size());
    ASSERT_EQ(gotHidden.size(), hidden.data.size());
    ASSERT_EQ(r->logits.data.size(), logits.data.size());
    EXPECT_TRUE(testing::checkTensor("attention", gotAttn.data(), attn.ptr(), gotAttn.size(), kAtol, kRtol));
    EXPECT_TRUE(testing::checkTensor("hidden", gotHidden.data(), hidden.ptr(), gotHidden.size(), kAtol, kRtol));
    // float32's rounding follows the table's scale, not each cell's: a logit near 0 in a table reaching
    // 31 (llama3_scaled) is a sum of O(30) products and carries their rounding, about 1e-6 of the
    // largest logit (the two sides' summation orders differ), so the absolute part grows with it.
    float largest = 0;
    for (float v : logits.data) largest = std::max(largest, std::abs(v));
    const double logitAtol = std::max(kAtol, 2e-6 * largest);
    EXPECT_TRUE(testing::checkTensor("logits", r->logits.ptr(), logits.ptr(), logits.data.size(), logitAtol, kRtol));

    // The recorded layer: its input is the layer's normed stream, its weights the kept ones.
    const Trace& t = r->trace;
    const std::size_t T = ids.size(), d = static_cast<std::size_t>(model->spec().dModel);
    ASSERT_EQ(t.tensor(StageId::Query).data.size(), T * d);
    EXPECT_TRUE(testing::checkTensor("trace query", t.tensor(StageId::Query).ptr(), normed.ptr() + (L - 1) * T * d,
                                     T * d, kAtol, kRtol));
    EXPECT_TRUE(testing::checkTensor("trace weights", t.tensor(StageId::Weights).ptr(),
                                     r->attention.back().ptr(), r->attention.back().data.size(), 0, 0));
    EXPECT_TRUE(t.causal);
    EXPECT_EQ(t.kvHeads, model->spec().kvHeads);
    EXPECT_GT(t.tensor(StageId::Scores).data.size(), 0u) << "every stage of the chosen layer is recorded";
    const LayerKind kind = model->spec().layerKind(L - 1);  // the traced layer's window and positions
    if (model->spec().rope() && !kind.rope) {  // a layer without positions (SmolLM3's no_rope_layers 0)
      EXPECT_EQ(t.positions, AttnPositions::None);
      EXPECT_FALSE(stageRecorded(t, StageId::QRotated));
    }
    if (model->spec().rope() && kind.rope) {  // Llama 3.1's scaled RoPE too: its frequencies are the engine's
      EXPECT_EQ(t.positions, AttnPositions::Rope);
      // DeepSeek's latent layers turn adjacent pairs (V2's complex numbers, V3's rope_interleave); the others rotate_half.
      EXPECT_EQ(t.ropeStyle, model->spec().latent.enabled() && model->spec().latent.interleaved ? RopeStyle::Interleaved
                                                                                                  : RopeStyle::Half);
      EXPECT_EQ(t.tensor(StageId::QRotated).data.size(), static_cast<std::size_t>(model->spec().heads) * T * model->spec().dk())
          << "the rotated queries are one of the recorded stages";
    }
    EXPECT_EQ(t.window, kind.window);
  }
}

// The logit lens's step (finalLogits: final norm, then unembedding) on the reference's residual
// stream after the last layer gives the reference's logits; on an earlier layer it gives logits of
// the same shape that differ from the model's (the lens shows something the output does not).
TEST_P(ModelFolderMatchesTorch, FinalLogitsOfTheLastStreamAreTheLogits) {
  const Case c = GetParam();
  auto model = ModelFolder::open(kModels + c.folder);
  ASSERT_TRUE(model.ok()) << model.error().message;
  const int L = model->spec().layers, d = model->spec().dModel, V = model->spec().vocab;
  const Tensor hidden = loadRef(c.folder, 0, "hidden"), logits = loadRef(c.folder, 0, "logits");  // (L, T, d), (T, V)
  const int T = static_cast<int>(logits.shape[0]);
  const RowMatrix last = ConstMatrixMap(hidden.ptr() + static_cast<std::size_t>(L - 1) * T * d, T, d);
  RowMatrix got;
  ASSERT_TRUE(finalLogits(*model, last, got).ok());
  ASSERT_EQ(got.rows(), T);
  ASSERT_EQ(got.cols(), V);
  EXPECT_TRUE(testing::checkTensor("lens of the last layer", got.data(), logits.ptr(), logits.data.size(), kAtol, kRtol));
  const RowMatrix first = ConstMatrixMap(hidden.ptr(), T, d);
  ASSERT_TRUE(finalLogits(*model, first, got).ok());
  float diff = 0;
  for (std::size_t i = 0; i < logits.data.size(); ++i) diff = std::max(diff, std::abs(got.data()[i] - logits.data[i]));
  EXPECT_GT(diff, 1e-3f) << "layer 0's lens is not the model's output";
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ModelFolderMatchesTorch,
                         ::testing::Values(Case{"gpt2", Arch::Gpt2, "F32"}, Case{"gpt2_f16", Arch::Gpt2, "F16"},
                                           Case{"llama_gqa", Arch::Llama, "F32"},
                                           Case{"llama_gqa_bf16", Arch::Llama, "BF16"},
                                           Case{"llama_sharded", Arch::Llama, "F32"}, Case{"qwen2", Arch::Qwen2, "F32"},
                                           Case{"mistral", Arch::Mistral, "F32"},
                                           Case{"llama3_scaled", Arch::Llama, "F32"}, Case{"llama_wide", Arch::Llama, "F32"},
                                           Case{"trained", Arch::Gpt2, "F32"}, Case{"phi3", Arch::Other, "F32"},
                                           Case{"smollm3", Arch::Other, "F32"}, Case{"qwen3", Arch::Other, "F32"},
                                           Case{"olmo2", Arch::Other, "F32"}, Case{"gemma2", Arch::Other, "F32"},
                                           Case{"gemma3", Arch::Other, "BF16"}, Case{"mixtral", Arch::Other, "F32"},
                                           Case{"qwen3_moe", Arch::Other, "F32"}, Case{"gpt_oss", Arch::Other, "BF16+MXFP4"},
                                           Case{"gpt_oss_bf16", Arch::Other, "BF16"},
                                           Case{"deepseek_v2", Arch::Other, "F32"}, Case{"deepseek_v3", Arch::Other, "F32"},
                                           Case{"deepseek_v3_yarn", Arch::Other, "F32"}),
                         [](const auto& info) { return std::string(info.param.folder); });

// A family's own step, recorded by the engine as a stage of every layer, against the reference's per-layer array
// (s{k}_<array>.npy, (L, ...)): each layer traced in turn.
struct StageCase {
  const char* folder;
  StageId stage;
  const char* array;
};

class FamilyStageMatchesTorch : public ::testing::TestWithParam<StageCase> {};

TEST_P(FamilyStageMatchesTorch, EveryLayer) {
  const StageCase c = GetParam();
  auto model = ModelFolder::open(kModels + c.folder);
  ASSERT_TRUE(model.ok()) << model.error().message;
  const int L = model->spec().layers;
  for (int seq = 0; seq < 3; ++seq) {
    const std::vector<int> ids = tokensOf(c.folder, seq);
    const Tensor ref = loadRef(c.folder, seq, c.array);  // (L, ...)
    ASSERT_EQ(ref.shape[0], L);
    const std::size_t perLayer = ref.data.size() / static_cast<std::size_t>(L);
    for (int l = 0; l < L; ++l) {
      SCOPED_TRACE(std::string(c.folder) + " sequence " + std::to_string(seq) + " layer " + std::to_string(l));
      ForwardOptions opt;
      opt.traceLayer = l;
      opt.keepAttention = opt.keepHidden = false;
      auto r = runForward(*model, ids, opt);
      ASSERT_TRUE(r.ok()) << r.error().message;
      ASSERT_TRUE(stageRecorded(r->trace, c.stage)) << stageInfo(c.stage).name << " is not recorded";
      const Tensor got = r->trace.copyOf(c.stage);
      ASSERT_EQ(got.data.size(), perLayer);
      EXPECT_TRUE(testing::checkTensor(stageInfo(c.stage).name, got.ptr(), ref.ptr() + l * perLayer, perLayer, kAtol, kRtol));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, FamilyStageMatchesTorch,
                         ::testing::Values(StageCase{"qwen3", StageId::QNormed, "q_normed"},
                                           StageCase{"qwen3", StageId::KNormed, "k_normed"},
                                           StageCase{"olmo2", StageId::QNormed, "q_normed"},
                                           StageCase{"olmo2", StageId::KNormed, "k_normed"},
                                           StageCase{"gemma3", StageId::QNormed, "q_normed"},
                                           StageCase{"gemma3", StageId::KNormed, "k_normed"},
                                           StageCase{"gemma2", StageId::MaskedScores, "scores_capped"},
                                           StageCase{"qwen3_moe", StageId::QNormed, "q_normed"},
                                           StageCase{"qwen3_moe", StageId::KNormed, "k_normed"},
                                           StageCase{"gpt_oss", StageId::SinkShare, "sink_share"}),
                         [](const auto& info) { return std::string(info.param.folder) + "_" + info.param.array; });

// A mixture-of-experts model's routing, recorded by the forward, against the reference's s{k}_router_experts (L, T, k)
// and s{k}_router_weights: the same experts in the same order (descending weight) and their weights, on every
// layer (gpt-oss's router with its bias); a token's weights sum to 1 (renormalised, or a softmax over the k).
TEST(ModelForward, MixtureRoutingMatchesTorch) {
  for (const char* folder : {"mixtral", "qwen3_moe", "gpt_oss", "gpt_oss_bf16", "deepseek_v2", "deepseek_v3", "deepseek_v3_yarn"}) {
    auto model = ModelFolder::open(kModels + folder);
    ASSERT_TRUE(model.ok()) << model.error().message;
    const ModelSpec& spec = model->spec();
    ASSERT_GT(spec.moe.experts, 0) << folder;
    // A token's weights sum to 1 (Qwen3-MoE's norm_topk_prob true; gpt-oss's softmax over the k), times DeepSeek-V3's
    // routed_scaling_factor; DeepSeek-V2's are the softmax's own shares, not renormalised.
    const bool sumKnown = spec.moe.rule.renormalise || spec.moe.rule.softmaxOfChosen;
    const float sumOfWeights = static_cast<float>(spec.moe.rule.scale);
    for (int seq = 0; seq < 3; ++seq) {
      SCOPED_TRACE(std::string(folder) + " sequence " + std::to_string(seq));
      const std::vector<int> ids = tokensOf(folder, seq);
      ForwardOptions opt;
      opt.keepAttention = opt.keepHidden = false;
      auto r = runForward(*model, ids, opt);
      ASSERT_TRUE(r.ok()) << r.error().message;
      const Tensor experts = loadRef(folder, seq, "router_experts"), weights = loadRef(folder, seq, "router_weights");
      const int L = spec.layers, k = spec.moe.perToken;
      const std::size_t T = ids.size();
      ASSERT_EQ(experts.shape, (Shape{L, static_cast<std::int64_t>(T), k}));
      ASSERT_EQ(r->routing.size(), static_cast<std::size_t>(L));
      std::vector<float> gotExperts, gotWeights;
      for (int l = 0; l < L; ++l) {
        const LayerRouting& lr = r->routing[static_cast<std::size_t>(l)];
        if (!spec.moe.mixtureAt(l)) {  // a dense layer (DeepSeek's first_k_dense_replace): the reference's -1 and 0
          ASSERT_EQ(lr.k, 0);
          gotExperts.insert(gotExperts.end(), T * static_cast<std::size_t>(k), -1.0f);
          gotWeights.insert(gotWeights.end(), T * static_cast<std::size_t>(k), 0.0f);
          continue;
        }
        ASSERT_EQ(lr.k, k);
        gotExperts.insert(gotExperts.end(), lr.experts.begin(), lr.experts.end());
        gotWeights.insert(gotWeights.end(), lr.weights.begin(), lr.weights.end());
        for (std::size_t t = 0; t < T && sumKnown; ++t) {
          float sum = 0;
          for (int j = 0; j < k; ++j) sum += lr.weight(static_cast<std::int64_t>(t), j);
          EXPECT_NEAR(sum, sumOfWeights, 1e-6f * sumOfWeights);
        }
      }
      ASSERT_EQ(gotExperts.size(), experts.data.size());
      EXPECT_TRUE(testing::checkTensor("router experts", gotExperts.data(), experts.ptr(), gotExperts.size(), 0, 0));
      EXPECT_TRUE(testing::checkTensor("router weights", gotWeights.data(), weights.ptr(), gotWeights.size(), kAtol, kRtol));
    }
  }
}

// The router's rule alone: softmax over all experts, the k largest in descending order (the lower expert first of
// equals), renormalised or not, times the scale.
TEST(ModelForward, RouterRuleOnKnownLogits) {
  RowMatrix z(2, 4);
  z << 0.0f, 2.0f, 1.0f, 2.0f,  // a tie between experts 1 and 3
      3.0f, 0.0f, 0.0f, 0.0f;
  RouterRule rule;
  const LayerRouting r = routeTokens(rule, z, 2);
  ASSERT_EQ(r.k, 2);
  EXPECT_EQ(r.expert(0, 0), 1);
  EXPECT_EQ(r.expert(0, 1), 3);
  EXPECT_FLOAT_EQ(r.weight(0, 0), 0.5f);
  EXPECT_EQ(r.expert(1, 0), 0);
  EXPECT_EQ(r.expert(1, 1), 1);
  const double e3 = std::exp(3.0);
  EXPECT_NEAR(r.weight(1, 0), e3 / (e3 + 1), 1e-6);
  rule.renormalise = false;  // the softmax's own shares of the chosen experts
  rule.scale = 2.0;
  const LayerRouting raw = routeTokens(rule, z, 1);
  EXPECT_NEAR(raw.weight(1, 0), 2.0 * e3 / (e3 + 3), 1e-6);
  EXPECT_NEAR(raw.weight(0, 0), 2.0 * std::exp(2.0) / (1 + 2 * std::exp(2.0) + std::exp(1.0)), 1e-6);
}

// The rule's later steps, for the routers of DeepSeek-V3 (sigmoid, a bias for the choice, the groups whose two best
// sum highest, renormalised, scaled), DeepSeek-V2 (softmax, the groups with the best single score, scaled) and gpt-oss
// (the logits with the router's bias, a softmax over the k chosen), on the same logits: the experts and weights the
// fixtures script's route() gives (scripts/gen_model_fixtures.py, the router weight the identity, so its logits are
// these).
TEST(ModelForward, RouterRuleStepsOfLaterFamilies) {
  RowMatrix z(3, 8);
  z << 2.76349f, 0.778331f, -2.56788f, -2.55207f, 3.02913f, -0.402922f, -0.196076f, -2.15612f,  //
      3.92187f, -0.651034f, 0.528503f, -0.0968272f, 1.15294f, 1.38502f, -0.837484f, 1.16944f,   //
      1.11717f, 0.0474853f, -1.75862f, -2.26041f, -0.222157f, 0.557182f, 0.340877f, -0.0971028f;
  RowVector bias(8);
  bias << -0.169765f, -0.249796f, 0.270435f, 0.0634713f, 0.134378f, -0.182647f, 0.0716839f, 0.140967f;
  struct Expected {
    const char* name;
    RouterRule rule;
    bool choiceBias, biasedLogits;
    int experts[3][2];
    float weights[3][2];
  };
  const Expected cases[] = {
      {"deepseek_v3",
       {.scores = RouterScores::Sigmoid, .groups = ExpertGroups::TopTwoSum, .groupCount = 4, .groupsKept = 2,
        .renormalise = true, .renormaliseEpsilon = 1e-20, .scale = 2.5},
       true, false, {{4, 0}, {4, 2}, {6, 7}}, {{1.258711f, 1.241289f}, {1.367797f, 1.132203f}, {1.378119f, 1.121881f}}},
      {"deepseek_v2",
       {.scores = RouterScores::Softmax, .groups = ExpertGroups::BestScore, .groupCount = 4, .groupsKept = 2,
        .renormalise = false, .scale = 16.0},
       false, false, {{4, 0}, {0, 5}, {0, 5}}, {{8.175054f, 6.267937f}, {12.53832f, 0.9919721f}, {5.291197f, 3.022416f}}},
      {"gpt_oss", {.scores = RouterScores::Logits, .softmaxOfChosen = true, .renormalise = false}, false, true,
       {{4, 0}, {0, 7}, {0, 6}}, {{0.6387131f, 0.3612869f}, {0.9199522f, 0.08004778f}, {0.6306122f, 0.3693878f}}},
  };
  for (const Expected& c : cases) {
    SCOPED_TRACE(c.name);
    RowMatrix logits = z;
    if (c.biasedLogits) logits.rowwise() += bias;  // gpt-oss's router is a Linear with a bias
    const LayerRouting r = routeTokens(c.rule, logits, 2, c.choiceBias ? &bias : nullptr);
    for (int t = 0; t < 3; ++t) {
      for (int j = 0; j < 2; ++j) {
        EXPECT_EQ(r.expert(t, j), c.experts[t][j]) << "token " << t << " slot " << j;
        EXPECT_NEAR(r.weight(t, j), c.weights[t][j], 2e-6 * std::max(1.0f, c.weights[t][j])) << "token " << t << " slot " << j;
      }
    }
  }
  EXPECT_EQ(routerRuleText(cases[0].rule, 2), "sigmoid then top-2 within the best 2 of 4 groups renormalised, times 2.5");
}

// Bounded: the memory estimate counts a mixture layer's weights with one expert at a time, not its E experts
// (ModelFolderErrors.MixtureReadsOnlyTheChosenExperts: the others are never read).
TEST(ModelForward, MixtureHoldsOneExpertAtATime) {
  auto model = ModelFolder::open(kModels + "mixtral");
  ASSERT_TRUE(model.ok()) << model.error().message;
  const ModelSpec& spec = model->spec();
  const std::int64_t expert = 3LL * spec.dModel * spec.moe.expertFf;
  EXPECT_EQ(layerResidentParameters(spec, 0) + (spec.moe.experts - 1) * expert,
            (parameterCount(spec) - 2LL * spec.vocab * spec.dModel - spec.dModel) / spec.layers);
  ModelSpec dense = spec;
  dense.moe.experts = 0;
  EXPECT_GT(estimateForwardBytes(spec, 64, {}), estimateForwardBytes(dense, 64, {})) << "the router's tables are counted";
  EXPECT_FALSE(model->expert(0, spec.moe.experts).ok()) << "an expert past E is refused";
  // All experts in one tensor (gpt-oss): one slice of each stack at a time, its biases included.
  auto oss = ModelFolder::open(kModels + "gpt_oss_bf16");
  ASSERT_TRUE(oss.ok()) << oss.error().message;
  const ModelSpec& g = oss->spec();
  const std::int64_t d = g.dModel, F = g.moe.expertFf, slice = d * 2 * F + 2 * F + F * d + d;
  EXPECT_EQ(layerResidentParameters(g, 0) + (g.moe.experts - 1) * slice,
            (parameterCount(g) - 2LL * g.vocab * d - d) / g.layers);
}

// Gemma 2's softcap is a recorded stage of its own: c tanh(s' / c) of the scaled scores on every cell, below c in size,
// what the masked scores hold wherever a key is visible; the trace says the scale is query_pre_attn_scalar's.
TEST(ModelForward, Gemma2SoftcapIsItsOwnStage) {
  auto m = ModelFolder::open(kModels + "gemma2");
  ASSERT_TRUE(m.ok()) << m.error().message;
  const ModelSpec& spec = m->spec();
  ASSERT_GT(spec.attnSoftcap, 0.0);
  ForwardOptions opt;
  opt.traceLayer = 0;
  auto r = runForward(*m, tokensOf("gemma2", 0), opt);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const Trace& t = r->trace;
  ASSERT_TRUE(stageRecorded(t, StageId::SoftCapped));
  EXPECT_EQ(t.scale, ScaleKind::Given);
  EXPECT_FLOAT_EQ(t.scaleFactor, static_cast<float>(1.0 / std::sqrt(spec.queryPreAttnScalar)));
  EXPECT_FLOAT_EQ(t.softcap, static_cast<float>(spec.attnSoftcap));
  const Tensor capped = t.copyOf(StageId::SoftCapped), scaled = t.copyOf(StageId::ScaledScores),
               masked = t.copyOf(StageId::MaskedScores);
  const std::int64_t perItem = static_cast<std::int64_t>(t.tq) * t.tk;
  double bent = 0;
  for (std::size_t i = 0; i < capped.data.size(); ++i) {
    const double c = spec.attnSoftcap, s = scaled.data[i];
    EXPECT_NEAR(capped.data[i], c * std::tanh(s / c), 1e-5 * c) << i;
    EXPECT_LT(std::abs(capped.data[i]), c);
    bent = std::max(bent, std::abs(capped.data[i] - s));
    const bool blocked = t.blocked[i % static_cast<std::size_t>(perItem)] != 0;
    if (!blocked) EXPECT_EQ(masked.data[i], capped.data[i]) << "the mask reads the capped scores";
  }
  EXPECT_GT(bent, 1e-3) << "the fixture's cap bends some of its scores";
  // A family without a cap records no such stage.
  auto llama = ModelFolder::open(kModels + "llama_gqa");
  ASSERT_TRUE(llama.ok());
  auto lr = runForward(*llama, tokensOf("llama_gqa", 0), opt);
  ASSERT_TRUE(lr.ok());
  EXPECT_FALSE(stageRecorded(lr->trace, StageId::SoftCapped));
}

// The fixtures exercise what they claim to: GQA, Qwen's biases, Mistral's window, Llama 3.1's scaling,
// heads wider than d_model / h.
TEST(ModelConfig, FixturesUseTheVariants) {
  auto wide = ModelFolder::open(kModels + "llama_wide");
  ASSERT_TRUE(wide.ok()) << wide.error().message;
  EXPECT_EQ(wide->spec().dModel, 32);
  EXPECT_EQ(wide->spec().heads, 4);
  EXPECT_EQ(wide->spec().dk(), 16);  // h·d_k = 64: q_proj (64, 32), o_proj (32, 64)
  auto wideLayer = wide->layer(0);
  ASSERT_TRUE(wideLayer.ok()) << wideLayer.error().message;
  EXPECT_EQ(wideLayer->attention->wq.rows(), 32);
  EXPECT_EQ(wideLayer->attention->wq.cols(), 64);
  EXPECT_EQ(wideLayer->attention->wo.rows(), 64);
  EXPECT_EQ(wideLayer->attention->wk.cols(), 32);  // N·d_k = 2·16
  auto llama = ModelFolder::open(kModels + "llama_gqa");
  ASSERT_TRUE(llama.ok()) << llama.error().message;
  EXPECT_EQ(llama->spec().heads, 4);
  EXPECT_EQ(llama->spec().kvHeads, 2);
  EXPECT_FALSE(llama->spec().tiedEmbeddings);
  auto qwen = ModelFolder::open(kModels + "qwen2/config.json");  // the config.json names the folder too
  ASSERT_TRUE(qwen.ok()) << qwen.error().message;
  EXPECT_TRUE(qwen->spec().qkvBias);
  EXPECT_FALSE(qwen->spec().outputBias);
  EXPECT_TRUE(qwen->spec().tiedEmbeddings);
  auto mistral = ModelFolder::open(kModels + "mistral");
  ASSERT_TRUE(mistral.ok()) << mistral.error().message;
  EXPECT_EQ(mistral->spec().window, 4);
  auto scaled = ModelFolder::open(kModels + "llama3_scaled");
  ASSERT_TRUE(scaled.ok()) << scaled.error().message;
  ASSERT_TRUE(scaled->spec().ropeScaling.enabled);
  // Frequency 0 is kept (short wavelength), 2 blended, 3.. divided by the factor.
  ModelSpec plain = scaled->spec();
  plain.ropeScaling.enabled = false;
  const auto a = ropeInverseFrequencies(scaled->spec()), b = ropeInverseFrequencies(plain);
  EXPECT_DOUBLE_EQ(a[0], b[0]);
  EXPECT_NEAR(a[3] / b[3], 1.0 / 8.0, 1e-12);
  EXPECT_GT(a[2] / b[2], 1.0 / 8.0);
  EXPECT_LT(a[2] / b[2], 1.0);
}

// Mistral's window hides keys j <= t - W: their weights are exactly 0.
TEST(ModelForward, MistralWindowHidesOldKeys) {
  auto m = ModelFolder::open(kModels + "mistral");
  ASSERT_TRUE(m.ok()) << m.error().message;
  const std::vector<int> ids = tokensOf("mistral", 0);
  auto r = runForward(*m, ids);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const std::int64_t T = static_cast<std::int64_t>(ids.size());
  const Tensor& w = r->attention[0];
  for (std::int64_t t = 0; t < T; ++t) {
    for (std::int64_t j = 0; j < T; ++j) {
      if (j > t || j <= t - 4) {
        EXPECT_EQ(w.data[static_cast<std::size_t>(t * T + j)], 0.0f) << "query " << t << " key " << j;
      }
    }
  }
}

// The BF16 copy against the F32 model: the weights' rounding (8 significant bits, a relative
// error up to 2^-9 per weight) moves the logits by about 1e-2 through two layers; 0.1 absolute
// bounds it with margin while still catching a wrong conversion (logits are O(1..10)).
TEST(ModelForward, Bf16StaysNearTheF32Model) {
  auto bf = ModelFolder::open(kModels + "llama_gqa_bf16");
  ASSERT_TRUE(bf.ok()) << bf.error().message;
  const std::vector<int> ids = tokensOf("llama_gqa", 0);
  auto r = runForward(*bf, ids);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const Tensor f32 = loadRef("llama_gqa", 0, "logits");
  EXPECT_TRUE(testing::checkTensor("bf16 logits vs f32", r->logits.ptr(), f32.ptr(), f32.data.size(), 0.1, 0.02));
}

// Without keeping attention or hidden states the logits are the same numbers.
TEST(ModelForward, LogitsAloneAreTheSame) {
  auto m = ModelFolder::open(kModels + "gpt2");
  ASSERT_TRUE(m.ok()) << m.error().message;
  const std::vector<int> ids = tokensOf("gpt2", 0);
  ForwardOptions lean;
  lean.keepAttention = lean.keepHidden = false;
  auto a = runForward(*m, ids), b = runForward(*m, ids, lean);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_TRUE(b->attention.empty());
  EXPECT_TRUE(b->hidden.empty());
  EXPECT_TRUE(testing::checkTensor("logits", b->logits.ptr(), a->logits.ptr(), a->logits.data.size(), 0, 0));
}

// A progress callback sees the layers done, one call per layer; returning false after layer 1 stops
// the forward there with kForwardCancelled (the later layers never run).
TEST(ModelForward, ProgressCountsLayersAndCancels) {
  auto m = ModelFolder::open(kModels + "llama_gqa");
  ASSERT_TRUE(m.ok()) << m.error().message;
  const std::vector<int> ids = tokensOf("llama_gqa", 0);
  const int L = m->spec().layers;
  ASSERT_GE(L, 2) << "the fixture must have a layer after the one that cancels";
  std::vector<int> seen;
  ForwardOptions opt;
  opt.progress = [&](int done) {
    seen.push_back(done);
    return true;
  };
  auto full = runForward(*m, ids, opt);
  ASSERT_TRUE(full.ok()) << full.error().message;
  std::vector<int> expected;
  for (int l = 1; l <= L; ++l) expected.push_back(l);
  EXPECT_EQ(seen, expected);

  seen.clear();
  int attentionCalls = 0;
  opt.progress = [&](int done) {
    seen.push_back(done);
    return done < 1;
  };
  opt.onAttention = [&](const LayerHeads&) { ++attentionCalls; };
  auto stopped = runForward(*m, ids, opt);
  ASSERT_FALSE(stopped.ok());
  EXPECT_EQ(stopped.error().message, kForwardCancelled);
  EXPECT_EQ(seen, std::vector<int>{1});
  EXPECT_EQ(attentionCalls, 1) << "no layer after the cancel runs";
}

// onAttention sees every layer once, in order, with the very weights keepAttention keeps.
TEST(ModelForward, OnAttentionSeesWhatKeepAttentionKeeps) {
  for (const char* folder : {"gpt2", "llama_gqa", "mistral"}) {
    SCOPED_TRACE(folder);
    auto m = ModelFolder::open(kModels + folder);
    ASSERT_TRUE(m.ok()) << m.error().message;
    const std::vector<int> ids = tokensOf(folder, 0);
    const std::int64_t T = static_cast<std::int64_t>(ids.size());
    std::vector<int> layers;
    std::vector<Tensor> copies;
    ForwardOptions opt;
    opt.onAttention = [&](const LayerHeads& la) {
      layers.push_back(la.layer);
      copies.push_back(*la.weights);
    };
    auto r = runForward(*m, ids, opt);
    ASSERT_TRUE(r.ok()) << r.error().message;
    ASSERT_EQ(copies.size(), r->attention.size());
    for (std::size_t l = 0; l < copies.size(); ++l) {
      EXPECT_EQ(layers[l], static_cast<int>(l));
      EXPECT_EQ(copies[l].shape, (std::vector<std::int64_t>{1, m->spec().heads, T, T}));
      EXPECT_TRUE(testing::checkTensor("layer weights", copies[l].ptr(), r->attention[l].ptr(),
                                       r->attention[l].data.size(), 0, 0));
    }
    // Without keeping attention the callback still sees every layer.
    ForwardOptions lean;
    lean.keepAttention = false;
    int calls = 0;
    lean.onAttention = [&](const LayerHeads&) { ++calls; };
    auto r2 = runForward(*m, ids, lean);
    ASSERT_TRUE(r2.ok()) << r2.error().message;
    EXPECT_TRUE(r2->attention.empty());
    EXPECT_EQ(calls, m->spec().layers);
  }
}

// Llama 3.1's scaled RoPE runs through the engine's rotation with the config's frequencies: the traced
// layer records q_rotated and k_rotated, turned by the scaled inv_freq (not base^(-2i/d_k)), and the
// memory estimate holds no hand-set score table.
TEST(ModelForward, ScaledRopeLayerRecordsItsRotation) {
  auto m = ModelFolder::open(kModels + "llama3_scaled");
  ASSERT_TRUE(m.ok()) << m.error().message;
  const ModelSpec& spec = m->spec();
  ASSERT_TRUE(spec.ropeScaling.enabled);
  const AttentionOptions ao = attentionOptionsFor(spec);
  EXPECT_EQ(ao.positions, AttnPositions::Rope);
  EXPECT_EQ(ao.ropeInvFreq, ropeInverseFrequencies(spec));
  EXPECT_FALSE(ao.scoresOverride.has_value());

  const std::vector<int> ids = tokensOf("llama3_scaled", 0);
  const std::int64_t T = static_cast<std::int64_t>(ids.size()), dk = spec.dk(), half = dk / 2;
  ForwardOptions opt;
  opt.traceLayer = 1;
  auto r = runForward(*m, ids, opt);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const Trace& t = r->trace;
  EXPECT_EQ(t.positions, AttnPositions::Rope);
  const Tensor &q = t.tensor(StageId::QHeads), &qr = t.tensor(StageId::QRotated), &kr = t.tensor(StageId::KRotated);
  ASSERT_EQ(qr.data.size(), static_cast<std::size_t>(spec.heads * T * dk));
  ASSERT_EQ(kr.data.size(), static_cast<std::size_t>(spec.kvHeads * T * dk));
  // Head 0 at the last position: the scaled frequencies turn it, the textbook ones would not give it.
  const std::vector<double> scaled = ropeInverseFrequencies(spec);
  ModelSpec plainSpec = spec;
  plainSpec.ropeScaling.enabled = false;
  const std::vector<double> plain = ropeInverseFrequencies(plainSpec);
  const float* a = q.ptr() + (T - 1) * dk;
  const float* b = qr.ptr() + (T - 1) * dk;
  double errScaled = 0, errPlain = 0;
  for (std::int64_t i = 0; i < half; ++i) {
    for (int which = 0; which < 2; ++which) {
      const double f = (which == 0 ? scaled : plain)[static_cast<std::size_t>(i)];
      const double c = std::cos((T - 1) * f), sn = std::sin((T - 1) * f);
      const double err = std::abs(b[i] - (a[i] * c - a[i + half] * sn)) +
                         std::abs(b[i + half] - (a[i + half] * c + a[i] * sn));
      (which == 0 ? errScaled : errPlain) += err;
    }
  }
  EXPECT_LT(errScaled, 1e-4);
  EXPECT_GT(errPlain, 1e-3) << "the scaled frequencies differ from base^(-2i/d_k) on this fixture";
  EXPECT_EQ(estimateForwardBytes(spec, T, opt), estimateForwardBytes(plainSpec, T, opt))
      << "no hand-set score table is made any more";
}

TEST(ModelConfig, ParameterCountOfGpt2Small) {
  // GPT-2 small's published count: 124,439,808 (tied unembedding).
  ModelSpec s;
  s.family = findFamily("gpt2");
  ASSERT_NE(s.family, nullptr);
  s.arch = Arch::Gpt2;
  s.qkvBias = s.outputBias = true;  // GPT-2 has a bias on every projection (its config reader says so)
  s.dModel = 768;
  s.heads = s.kvHeads = 12;
  s.layers = 12;
  s.dFf = 3072;
  s.vocab = 50257;
  s.maxPositions = 1024;
  EXPECT_EQ(parameterCount(s), 124439808);
}

TEST(ModelConfig, ParameterCountMatchesTheFixtureFiles) {
  for (const char* folder :
       {"gpt2", "llama_gqa", "qwen2", "llama3_scaled", "phi3", "smollm3", "qwen3", "olmo2", "gemma2", "gemma3", "mixtral",
        "qwen3_moe", "gpt_oss_bf16"}) {
    auto m = ModelFolder::open(kModels + folder);
    ASSERT_TRUE(m.ok()) << m.error().message;
    std::int64_t stored = 0;
    for (const auto& [name, t] : m->store().tensors()) {
      if (name.find(".attn.bias") == std::string::npos) stored += t.numel;  // GPT-2's mask buffers are no parameters
    }
    EXPECT_EQ(parameterCount(m->spec()), stored) << folder;
  }
}

}  // namespace
}  // namespace mhascope::model

namespace mhascope::model {
namespace {

// DeepSeek's latent attention on every layer: the reference's normed stream through the layer's own projections
// gives the reference's latent c (after kv_a_layernorm, what a decoder caches with k_r) and attention weights, and
// the absorbed form (W_uk folded into the query, W_uv after the weighted sum of latents) equals the expanded one —
// also as the forward reports it. V2 with q_lora_rank null (q_proj) and its complex pairs, V3 with q_a_proj and
// rope_interleave, V3 with YaRN (its frequencies over the d_r rotary features, cos and sin times mscale / mscale_all_dim,
// the scores times mscale(factor, mscale_all_dim)^2).
TEST(ModelForward, LatentAttentionMatchesTorchOnEveryLayer) {
  for (const char* folder : {"deepseek_v2", "deepseek_v3", "deepseek_v3_yarn"}) {
    auto model = ModelFolder::open(kModels + folder);
    ASSERT_TRUE(model.ok()) << model.error().message;
    const ModelSpec& spec = model->spec();
    ASSERT_TRUE(spec.latent.enabled());
    EXPECT_EQ(spec.latent.qRank, std::string(folder) == "deepseek_v2" ? 0 : 16);
    EXPECT_TRUE(spec.latent.interleaved);
    const bool yarn = std::string(folder) == "deepseek_v3_yarn";
    EXPECT_EQ(spec.yarn.enabled, yarn);
    const double mscale = yarn ? 0.1 * 0.8 * std::log(4.0) + 1.0 : 1.0;  // mscale(factor 4, mscale_all_dim 0.8)
    EXPECT_FLOAT_EQ(latentSizesOf(spec).scoreScale(), static_cast<float>(mscale * mscale / 4.0)) << "(d_n + d_r)^-1/2 = 16^-1/2";
    if (yarn) EXPECT_NEAR(latentSizesOf(spec).ropeGain, (0.1 * std::log(4.0) + 1.0) / mscale, 1e-6) << "mscale / mscale_all_dim";
    // The parameter count (the status line's, info's) is every stored number: the latent projections' own shapes.
    std::int64_t stored = 0;
    for (const auto& [name, t] : model->store().tensors()) stored += t.numel;
    EXPECT_EQ(parameterCount(spec), stored);
    const int L = spec.layers, d = spec.dModel, r = spec.latent.kvRank, h = spec.heads;
    for (int seq = 0; seq < 3; ++seq) {
      const std::vector<int> ids = tokensOf(folder, seq);
      const std::size_t T = ids.size();
      const Tensor normed = loadRef(folder, seq, "normed"), latent = loadRef(folder, seq, "latent"),
                   attn = loadRef(folder, seq, "attn");
      ASSERT_EQ(latent.shape, (Shape{L, static_cast<std::int64_t>(T), r}));
      for (int l = 0; l < L; ++l) {
        SCOPED_TRACE(std::string(folder) + " sequence " + std::to_string(seq) + " layer " + std::to_string(l));
        auto lw = model->attentionLayer(l);
        ASSERT_TRUE(lw.ok()) << lw.error().message;
        ASSERT_TRUE(lw->latent);
        const RowMatrix x = ConstMatrixMap(normed.ptr() + l * T * d, static_cast<Eigen::Index>(T), d);
        auto got = latentAttention(x, *lw->latent, latentSizesOf(spec));
        ASSERT_TRUE(got.ok()) << got.error().message;
        EXPECT_TRUE(testing::checkTensor("latent", got->latent.ptr(), latent.ptr() + l * T * r, T * r, kAtol, kRtol));
        EXPECT_TRUE(testing::checkTensor("weights", got->weights.ptr(), attn.ptr() + l * h * T * T, h * T * T, kAtol, kRtol));
        EXPECT_LT(got->maxWeightDiff, 1e-5);
        EXPECT_LT(got->maxOutputDiff, 1e-4);
      }
      auto r2 = runForward(*model, ids);
      ASSERT_TRUE(r2.ok()) << r2.error().message;
      EXPECT_LT(r2->absorbedWeightDiff, 1e-5);
      EXPECT_LT(r2->absorbedOutputDiff, 1e-4);
    }
  }
}

// The traced latent layer's stages: k's rotary part is the one shared key in every head, the expanded values are
// d_v wide, the scores times the model's scale are the scaled scores, and weights · V is the head output.
TEST(ModelForward, LatentLayerStagesShareTheRotaryKey) {
  auto model = ModelFolder::open(kModels + "deepseek_v3");
  ASSERT_TRUE(model.ok()) << model.error().message;
  const ModelSpec& spec = model->spec();
  ForwardOptions opt;
  opt.traceLayer = 1;
  const std::vector<int> ids = tokensOf("deepseek_v3", 0);
  auto r = runForward(*model, ids, opt);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const Trace& t = r->trace;
  const std::int64_t T = static_cast<std::int64_t>(ids.size()), h = spec.heads, dn = spec.latent.nopeDim,
                     dr = spec.latent.ropeDim, dv = spec.latent.valueDim, dq = dn + dr;
  EXPECT_EQ(t.dk, dq);
  EXPECT_EQ(t.scale, ScaleKind::Given);
  EXPECT_EQ(t.shapeOf(StageId::VHeads), (Shape{1, h, T, dv}));
  EXPECT_EQ(t.shapeOf(StageId::Concat), (Shape{1, T, h * dv}));
  EXPECT_EQ(t.weights, nullptr) << "a latent layer has no W_q, W_k, W_v to record";
  const Tensor& k = t.tensor(StageId::KRotated);  // (1, h, T, d_n + d_r)
  for (std::int64_t i = 1; i < h; ++i) {
    for (std::int64_t j = 0; j < T; ++j) {
      for (std::int64_t c = dn; c < dq; ++c) {
        EXPECT_EQ(k.data[static_cast<std::size_t>((i * T + j) * dq + c)], k.data[static_cast<std::size_t>(j * dq + c)]);
      }
    }
  }
  const Tensor scaled = t.copyOf(StageId::ScaledScores), &scores = t.tensor(StageId::Scores);
  for (std::size_t i = 0; i < scores.data.size(); ++i) EXPECT_FLOAT_EQ(scaled.data[i], scores.data[i] * t.scaleFactor);
  const Tensor &w = t.tensor(StageId::Weights), &v = t.tensor(StageId::VHeads), &o = t.tensor(StageId::HeadOutputs);
  for (std::int64_t i = 0; i < h; ++i) {
    const RowMatrix av = ConstMatrixMap(w.ptr() + i * T * T, T, T) * ConstMatrixMap(v.ptr() + i * T * dv, T, dv);
    EXPECT_TRUE(testing::checkTensor("A V", o.ptr() + i * T * dv, av.data(), static_cast<std::size_t>(T * dv), 1e-6, 1e-5));
  }
}

}  // namespace
}  // namespace mhascope::model
