// ModelConfig → Model, and the strict preset JSON.
#include <gtest/gtest.h>

#include <cmath>

#include "attention/model.hpp"
#include "io/presets.hpp"

namespace mhascope {
namespace {

std::string errorOf(std::string_view json) {
  auto r = parsePresetJson(json, "p.json");
  return r.ok() ? "(no error)" : r.error().message;
}

TEST(Presets, BundledPresetsLoadAndBuild) {
  const auto names = presetNames();
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names.front(), "default");
  for (const char* want : {"cat", "deep", "interview", "paper"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  }
  for (const auto& n : names) {
    auto cfg = loadPreset(n);
    ASSERT_TRUE(cfg.ok()) << n << ": " << cfg.error().message;
    auto m = buildModel(*cfg);
    ASSERT_TRUE(m.ok()) << n << ": " << m.error().message;
  }
  auto cat = loadPreset("cat");
  EXPECT_EQ(cat->dModel, 8);
  EXPECT_EQ(cat->heads, 2);
  auto m = buildModel(*cat);
  EXPECT_EQ(m->inputs.queryTokens[0], (std::vector<std::string>{"The", "cat", "sat", "on"}));
  auto interview = buildModel(*loadPreset("interview"));
  EXPECT_EQ(interview->inputs.query.shape, (Shape{10, 6, 12}));
  auto paper = buildModel(*loadPreset("paper"));
  EXPECT_EQ(paper->inputs.query.shape, (Shape{2, 10, 512}));
}

TEST(Presets, RoundTripThroughJson) {
  ModelConfig c;
  c.text = "héllo | wörld x";
  c.dModel = 12;
  c.heads = 3;
  c.mask = MaskKind::Causal;
  c.scale = ScaleKind::None;
  c.padLastKeys = 1;
  c.seed = 123456789012345ull;
  auto back = parsePresetJson(presetToJson(c), "rt");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->text, c.text);
  EXPECT_EQ(back->dModel, 12);
  EXPECT_EQ(back->mask, MaskKind::Causal);
  EXPECT_EQ(back->scale, ScaleKind::None);
  EXPECT_EQ(back->seed, c.seed);
  EXPECT_EQ(back->padLastKeys, 1);
}

TEST(Presets, MalformedJsonIsAClearErrorWithThePath) {
  const std::string ok = R"({"version": 1, "text": "a b", "d_model": 4, "heads": 2})";
  EXPECT_EQ(errorOf(ok), "(no error)");
  EXPECT_NE(errorOf(R"({"version": 1, "text": "a b", "d_model": 4)").find("not valid JSON"), std::string::npos);
  EXPECT_NE(errorOf(R"({"version": 1, "text": "a", "d_model": 4, "heads": 2, "heads": 4})").find("duplicate key 'heads'"),
            std::string::npos);
  EXPECT_NE(errorOf(R"({"version": 1, "text": "a", "heads": 2})").find("missing key /d_model"), std::string::npos);
  EXPECT_NE(errorOf(R"({"version": 1, "text": 5, "d_model": 4, "heads": 2})").find("/text must be a string, got number"),
            std::string::npos);
  EXPECT_NE(errorOf(R"({"version": 1, "text": "a", "d_model": "4", "heads": 2})").find("/d_model must be an integer"),
            std::string::npos);
  EXPECT_NE(errorOf(R"({"version": 1, "text": "a", "d_model": -4, "heads": 2})").find("/d_model must not be negative"),
            std::string::npos);
  EXPECT_NE(errorOf(R"({"version": 1, "text": "a", "d_model": null, "heads": 2})").find("got null"), std::string::npos);
  EXPECT_NE(errorOf(R"({"version": 1, "text": "a", "d_model": 4.5, "heads": 2})").find("/d_model must be an integer"),
            std::string::npos);
  EXPECT_NE(errorOf(R"({"version": 7, "text": "a", "d_model": 4, "heads": 2})").find("/version is 7"), std::string::npos);
  EXPECT_NE(errorOf(R"({"version": 1, "text": "a", "d_model": 4, "heads": 2, "colour": 1})").find("unknown key at /colour"),
            std::string::npos);
  EXPECT_NE(errorOf(R"({"version": 1, "text": "a", "d_model": 4, "heads": 2, "mask": "future"})").find("/mask"),
            std::string::npos);
  EXPECT_NE(errorOf(R"({"version": 1, "text": "a", "d_model": 4, "heads": 2, "bias": "yes"})").find("/bias must be true or false"),
            std::string::npos);
  EXPECT_NE(errorOf(R"([1, 2])").find("expected a JSON object"), std::string::npos);
  std::string deep(5000, '[');
  EXPECT_NE(errorOf(deep).find("deeper than"), std::string::npos) << errorOf(deep);
  EXPECT_NE(errorOf(R"({"version": 1, "text": "a", "d_model": 99999999999, "heads": 2})").find("larger than"),
            std::string::npos);
}

TEST(Presets, ValidJsonWithInvalidSizesIsCaughtBeforeAllocating) {
  auto cfg = parsePresetJson(R"({"version": 1, "text": "a b", "d_model": 10, "heads": 4})", "p");
  ASSERT_TRUE(cfg.ok());
  const Status s = validateConfig(*cfg);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("nearest valid heads: 2 or 5"), std::string::npos) << s.error().message;
}

TEST(Model, BatchItemsArePaddedAndThePaddingIsMasked) {
  ModelConfig c;
  c.text = "a b c | d e";
  c.dModel = 4;
  c.heads = 2;
  auto m = buildModel(c);
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->inputs.query.shape, (Shape{2, 3, 4}));
  EXPECT_EQ(m->inputs.queryTokens[1], (std::vector<std::string>{"d", "e", "<pad>"}));
  ASSERT_TRUE(m->options.keyPaddingMask.has_value());
  EXPECT_EQ(m->options.keyPaddingMask->data, (FloatBuffer{0, 0, 0, 0, 0, 1}));
  c.crossAttention = true;
  c.kvText = "x y z w";
  auto cross = buildModel(c);
  ASSERT_TRUE(cross.ok());
  EXPECT_EQ(cross->inputs.key.shape, (Shape{2, 4, 4}));
  EXPECT_FALSE(cross->inputs.selfAttention);
  c.kvText = "  ";
  EXPECT_FALSE(buildModel(c).ok());
}

// The one line under every picture, made from what the pass used (window and CLI alike).
TEST(ModelSummary, ConfigSummaryNamesWhatThePassUsed) {
  ModelConfig cfg = loadPreset("cat").value();
  cfg.mask = MaskKind::Causal;
  Model m = buildModel(cfg).value();
  Trace t;
  ASSERT_TRUE(forward(m.inputs, m.weights, m.options, t).ok());
  EXPECT_EQ(configSummary(t, cfg), "B=1  T_q=4  d_model=8  h=2  d_k=4  mask=causal  scale=sqrt-dk  bias  seed=1");
  EXPECT_EQ(configSummary(t, cfg, false), "B=1  T_q=4  d_model=8  h=2  d_k=4  mask=causal  scale=sqrt-dk  bias");
  cfg.mask = MaskKind::None;
  cfg.padLastKeys = 2;
  cfg.bias = false;
  cfg.crossAttention = true;
  cfg.kvText = "x y z";
  cfg.scale = ScaleKind::None;
  m = buildModel(cfg).value();
  ASSERT_TRUE(forward(m.inputs, m.weights, m.options, t).ok());
  EXPECT_EQ(configSummary(t, cfg),
            "B=1  T_q=4  T_k=3  cross-attention  d_model=8  h=2  d_k=4  mask=none+pad2  scale=none  no-bias  seed=1");
  cfg.padLastKeys = 0;
  cfg.crossAttention = false;
  cfg.text = "a b c|d";  // the shorter item is padded: key padding without the last-n rule
  m = buildModel(cfg).value();
  m.options.attnMask = Tensor({3, 3}, {"T_q", "T_k"});
  ASSERT_TRUE(forward(m.inputs, m.weights, m.options, t).ok());
  EXPECT_EQ(configSummary(t, cfg),
            "B=2  T_q=3  d_model=8  h=2  d_k=4  mask=none+padding+attn_mask  scale=none  no-bias  seed=1");
}

// modelFromInputs is the one builder: raw inputs get the same options, padding and hand-set
// scores as text inputs.
TEST(ModelSummary, ModelFromInputsAppliesTheConfigRules) {
  ModelConfig cfg = loadPreset("specialists").value();
  cfg.mask = MaskKind::Causal;
  cfg.padLastKeys = 1;
  const Model text = buildModel(cfg).value();
  AttentionInputs raw = text.inputs;  // the same numbers, as if loaded from .npy files
  const Model m = modelFromInputs(cfg, raw);
  EXPECT_EQ(m.options.heads, cfg.heads);
  EXPECT_TRUE(m.options.causal);
  EXPECT_EQ(m.options.scale, cfg.scale);
  ASSERT_TRUE(m.options.keyPaddingMask.has_value());
  ASSERT_TRUE(text.options.keyPaddingMask.has_value());
  EXPECT_EQ(m.options.keyPaddingMask->data, text.options.keyPaddingMask->data);
  ASSERT_TRUE(m.options.scoresOverride.has_value());
  ASSERT_TRUE(text.options.scoresOverride.has_value());
  EXPECT_EQ(m.options.scoresOverride->shape, text.options.scoresOverride->shape);
  for (std::size_t i = 0; i < m.options.scoresOverride->data.size(); ++i) {
    const float a = m.options.scoresOverride->data[i], b = text.options.scoresOverride->data[i];
    EXPECT_TRUE(a == b || (std::isnan(a) && std::isnan(b))) << i;
  }
  EXPECT_TRUE(m.weights.wq.isApprox(text.weights.wq, 0.0f));
  const std::int64_t Tk = m.inputs.key.dim(1);
  EXPECT_EQ(m.options.keyPaddingMask->data[static_cast<std::size_t>(Tk - 1)], 1.0f) << "the last key is padded";
  EXPECT_EQ(m.options.keyPaddingMask->data[0], 0.0f);
}

}  // namespace
}  // namespace mhascope
