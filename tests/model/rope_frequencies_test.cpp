// RoPE with frequencies given outright (AttentionOptions::ropeInvFreq, how Llama 3.1's scaled RoPE
// reaches the engine): the forward, the one-head path and the KV-cache decoder all turn q and k by
// them; base^(-2i/d_k) given outright is the default bit for bit; a wrong count, a non-finite value
// or frequencies without RoPE are refused in one line naming the values.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "attention/decode.hpp"
#include "attention/engine.hpp"
#include "check_tensor.hpp"
#include "io/file_io.hpp"
#include "io/npy.hpp"
#include "model/config.hpp"
#include "model/forward.hpp"
#include "model_fixtures.hpp"

namespace mhascope {
namespace {

constexpr int kD = 24, kH = 4, kN = 2, kT = 9;  // d_k = 6: three pairs

struct RopeCase {
  AttentionInputs in;
  MhaWeights w;
  AttentionOptions opt;
};

RopeCase makeCase() {
  RopeCase s;
  s.in.query = Tensor({1, kT, kD}, {"B", "T_q", "d_model"});
  std::uint32_t state = 12345;
  for (float& v : s.in.query.data) {
    state = state * 1664525u + 1013904223u;
    v = static_cast<float>(state >> 8) / static_cast<float>(1u << 24) * 2.0f - 1.0f;
  }
  s.in.key = s.in.query;
  s.in.value = s.in.query;
  s.in.selfAttention = true;
  std::vector<std::string> labels;
  for (int t = 0; t < kT; ++t) labels.push_back("t" + std::to_string(t));
  s.in.queryTokens = {labels};
  s.in.keyTokens = {labels};
  s.w = initWeights(kD, true, 7, kN * (kD / kH));
  s.opt.heads = kH;
  s.opt.kvHeads = kN;
  s.opt.causal = true;
  s.opt.positions = AttnPositions::Rope;
  s.opt.ropeBase = 500000.0f;
  return s;
}

bool same(const Trace& a, const Trace& b, StageId id) {
  const Tensor &x = a.tensor(id), &y = b.tensor(id);
  return x.shape == y.shape && x.data == y.data;
}

TEST(RopeFrequencies, TheTextbookOnesGivenOutrightAreTheDefault) {
  RopeCase s = makeCase();
  Trace plain, given;
  ASSERT_TRUE(forward(s.in, s.w, s.opt, plain).ok());
  const int dk = kD / kH;
  for (int i = 0; i < dk / 2; ++i) {
    s.opt.ropeInvFreq.push_back(std::pow(static_cast<double>(s.opt.ropeBase), -2.0 * i / dk));
  }
  ASSERT_TRUE(forward(s.in, s.w, s.opt, given).ok());
  for (StageId id : {StageId::QRotated, StageId::KRotated, StageId::Weights, StageId::Output}) {
    EXPECT_TRUE(same(plain, given, id)) << stageInfo(id).name;
  }
}

// q_rotated is q_heads with pair (i, i + d_k/2) of row t turned by t · invFreq[i], the given numbers.
TEST(RopeFrequencies, GivenOnesTurnQAndK) {
  RopeCase s = makeCase();
  s.opt.ropeInvFreq = {0.9, 0.05, 0.0};  // the last pair does not turn at all
  Trace t;
  ASSERT_TRUE(forward(s.in, s.w, s.opt, t).ok());
  const Tensor &q = t.tensor(StageId::QHeads), &r = t.tensor(StageId::QRotated);
  const std::int64_t dk = kD / kH, half = dk / 2;
  ASSERT_EQ(r.shape, q.shape);
  float worst = 0;
  for (std::int64_t hd = 0; hd < kH; ++hd) {
    for (std::int64_t p = 0; p < kT; ++p) {
      const float* a = q.ptr() + (hd * kT + p) * dk;
      const float* b = r.ptr() + (hd * kT + p) * dk;
      for (std::int64_t i = 0; i < half; ++i) {
        const double angle = static_cast<double>(p) * s.opt.ropeInvFreq[static_cast<std::size_t>(i)];
        const double c = std::cos(angle), sn = std::sin(angle);
        worst = std::max(worst, static_cast<float>(std::abs(b[i] - (a[i] * c - a[i + half] * sn))));
        worst = std::max(worst, static_cast<float>(std::abs(b[i + half] - (a[i + half] * c + a[i] * sn))));
      }
      EXPECT_EQ(b[half - 1], a[half - 1]) << "frequency 0 leaves its pair alone";
    }
  }
  EXPECT_LT(worst, 1e-5f);
  // Not the base's frequencies: the rotation differs from the default one.
  Trace plain;
  s.opt.ropeInvFreq.clear();
  ASSERT_TRUE(forward(s.in, s.w, s.opt, plain).ok());
  EXPECT_FALSE(same(plain, t, StageId::QRotated));
}

// The one-head path and the KV-cache decoder rotate with the same frequencies as forward().
TEST(RopeFrequencies, OneHeadAndDecodeFollowThem) {
  RopeCase s = makeCase();
  s.opt.ropeInvFreq = {0.7, 0.03, 0.001};
  Trace full;
  ASSERT_TRUE(forward(s.in, s.w, s.opt, full).ok());
  auto one = attentionHead(s.in, s.w, s.opt, StageId::Weights, 0, 3);
  ASSERT_TRUE(one.ok()) << one.error().message;
  auto a = sliceStage(full, StageId::Weights, 0, 3), b = sliceStage(*one, StageId::Weights, 0, 0);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->rows * a->cols, b->rows * b->cols);
  for (int i = 0; i < a->rows * a->cols; ++i) ASSERT_EQ(a->data[i], b->data[i]) << "cell " << i;

  auto dec = decode(s.in, s.w, s.opt, 3);
  ASSERT_TRUE(dec.ok()) << dec.error().message;
  const Tensor& out = full.tensor(StageId::Output);
  EXPECT_TRUE(mhascope::testing::checkTensor("decode output", dec->output.ptr(), out.ptr(), out.data.size(), 1e-5, 1e-4));
}

TEST(RopeFrequencies, BadOnesAreRefusedNamingTheValues) {
  RopeCase s = makeCase();
  Trace t;
  s.opt.ropeInvFreq = {0.5, 0.1};
  auto r = forward(s.in, s.w, s.opt, t);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("RoPE frequencies: 2 given, but d_k/2 = 3 pairs turn (d_k = d_model / h = 24 / 4 = 6)"),
            std::string::npos)
      << r.error().message;
  s.opt.ropeInvFreq = {0.5, std::numeric_limits<double>::quiet_NaN(), 0.1};
  r = forward(s.in, s.w, s.opt, t);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("RoPE frequency 1 must be a finite number"), std::string::npos) << r.error().message;
  s.opt.ropeInvFreq = {0.5, 0.1, 0.01};
  s.opt.positions = AttnPositions::None;
  r = forward(s.in, s.w, s.opt, t);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("RoPE frequencies (3 given) apply to RoPE only"), std::string::npos)
      << r.error().message;
}

// RoPE's gain (YaRN's attention factor): q and k both come out g times longer, in the forward, the one-head path and
// the decoder alike, so every score is g² times larger.
TEST(RopeFrequencies, TheGainLengthensQAndK) {
  RopeCase s = makeCase();
  Trace plain, gained;
  ASSERT_TRUE(forward(s.in, s.w, s.opt, plain).ok());
  s.opt.ropeGain = 1.25f;
  ASSERT_TRUE(forward(s.in, s.w, s.opt, gained).ok());
  for (StageId id : {StageId::QRotated, StageId::KRotated}) {
    const Tensor &a = plain.tensor(id), &b = gained.tensor(id);
    for (std::size_t i = 0; i < a.data.size(); ++i) ASSERT_NEAR(b.data[i], 1.25f * a.data[i], 1e-5f) << i;
  }
  const std::int64_t cells = static_cast<std::int64_t>(plain.tensor(StageId::Scores).data.size());
  for (std::int64_t i = 0; i < cells; ++i) {
    ASSERT_NEAR(gained.cell(StageId::Scores, i), 1.5625f * plain.cell(StageId::Scores, i), 1e-4f) << i;
  }
  auto one = attentionHead(s.in, s.w, s.opt, StageId::Weights, 0, 1);
  ASSERT_TRUE(one.ok()) << one.error().message;
  auto a = sliceStage(gained, StageId::Weights, 0, 1), b = sliceStage(*one, StageId::Weights, 0, 0);
  ASSERT_TRUE(a.ok() && b.ok());
  for (int i = 0; i < a->rows * a->cols; ++i) ASSERT_EQ(a->data[i], b->data[i]) << "cell " << i;
  auto dec = decode(s.in, s.w, s.opt, 2);
  ASSERT_TRUE(dec.ok()) << dec.error().message;
  const Tensor& out = gained.tensor(StageId::Output);
  EXPECT_TRUE(mhascope::testing::checkTensor("decode output", dec->output.ptr(), out.ptr(), out.data.size(), 1e-5, 1e-4));
  s.opt.ropeGain = 0.0f;
  const Status bad = forward(s.in, s.w, s.opt, plain);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("RoPE's gain"), std::string::npos) << bad.error().message;
}

// YaRN as a config asks for it (rope_type "yarn"): gpt-oss's fixture's rope_scaling on a Llama config of the same
// head size and base gives the reference's frequencies and attention factor (scripts/gen_model_fixtures.py's
// yarn_parameters, modeling_rope_utils.py's _compute_yarn_parameters), and the layer's options carry both.
TEST(RopeFrequencies, YarnEqualsTheReference) {
  auto text = readFile(model::kModels + "llama_wide/config.json");
  ASSERT_TRUE(text.ok()) << text.error().message;
  std::string cfg = *text;
  const auto brace = cfg.rfind('}');
  cfg = cfg.substr(0, brace);
  for (const char* key : {"\"rope_theta\"", "\"max_position_embeddings\""}) {  // the fixture's base and context
    const auto at = cfg.find(key);
    ASSERT_NE(at, std::string::npos) << key;
    const auto end = cfg.find_first_of(",}", at);
    cfg.erase(at, end - at + 1);
  }
  cfg += ", \"rope_theta\": 150000.0, \"max_position_embeddings\": 8192, \"rope_scaling\": {\"beta_fast\": 32.0, "
         "\"beta_slow\": 1.0, \"factor\": 2.0, \"original_max_position_embeddings\": 4096, \"rope_type\": \"yarn\", "
         "\"truncate\": false}}";
  auto spec = model::parseModelConfig(cfg, "yarn config");
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  ASSERT_TRUE(spec->yarn.enabled);
  ASSERT_EQ(spec->dk(), 16);
  auto inv = loadNpy(model::kModels + "reference/gpt_oss/rope_inv_freq.npy");
  auto gain = loadNpy(model::kModels + "reference/gpt_oss/rope_attention_factor.npy");
  ASSERT_TRUE(inv.ok() && gain.ok());
  const std::vector<double> mine = model::ropeInverseFrequencies(*spec);
  ASSERT_EQ(mine.size(), inv->data.size());
  int kept = 0, divided = 0;
  for (std::size_t i = 0; i < mine.size(); ++i) {
    EXPECT_NEAR(mine[i], inv->data[i], 1e-6 * inv->data[i]) << "dim " << i;
    const double plain = std::pow(150000.0, -2.0 * static_cast<double>(i) / 16.0);
    kept += std::abs(mine[i] - plain) < 1e-12;
    divided += std::abs(mine[i] - plain / 2) < 1e-12;
  }
  EXPECT_GT(kept, 0);
  EXPECT_GT(divided, 0);
  EXPECT_NEAR(spec->yarn.attentionFactor, gain->data[0], 1e-6);
  EXPECT_NEAR(spec->yarn.attentionFactor, 0.1 * std::log(2.0) + 1.0, 1e-12);
  const AttentionOptions ao = model::attentionOptionsFor(*spec, 0);
  EXPECT_EQ(ao.ropeInvFreq, mine);
  EXPECT_FLOAT_EQ(ao.ropeGain, static_cast<float>(spec->yarn.attentionFactor));
  // The two readings of the factor must agree, and truncate is a flag.
  std::string wrong = cfg;
  wrong.replace(wrong.find("8192"), 4, "4096");
  auto refused = model::parseModelConfig(wrong, "yarn config");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("disagree"), std::string::npos) << refused.error().message;
  wrong = cfg;
  wrong.replace(wrong.rfind("false"), 5, "\"no\"");
  refused = model::parseModelConfig(wrong, "yarn config");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("truncate"), std::string::npos) << refused.error().message;
}

// A gpt-oss config without the rope_scaling key gets GptOssConfig's default, YaRN x32 (beta 32 / 1, not truncated,
// over max_position_embeddings since no original is given); rope_scaling null says none.
TEST(RopeFrequencies, GptOssWithoutRopeScalingTakesItsConfigsYarn) {
  auto text = readFile(model::kModels + "gpt_oss/config.json");
  ASSERT_TRUE(text.ok()) << text.error().message;
  auto j = nlohmann::json::parse(*text);
  ASSERT_TRUE(j.contains("rope_scaling"));
  j.erase("rope_scaling");
  auto spec = model::parseModelConfig(j.dump(), "gpt-oss config");
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  ASSERT_TRUE(spec->yarn.enabled);
  EXPECT_EQ(spec->yarn.factor, 32.0);
  EXPECT_EQ(spec->yarn.betaFast, 32.0);
  EXPECT_EQ(spec->yarn.betaSlow, 1.0);
  EXPECT_FALSE(spec->yarn.truncate);
  EXPECT_EQ(spec->yarn.originalMaxPositions, static_cast<double>(spec->maxPositions));
  EXPECT_NEAR(spec->yarn.attentionFactor, 0.1 * std::log(32.0) + 1.0, 1e-12);
  j["rope_scaling"] = nullptr;
  spec = model::parseModelConfig(j.dump(), "gpt-oss config");
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  EXPECT_FALSE(spec->yarn.enabled);
}

}  // namespace
}  // namespace mhascope
