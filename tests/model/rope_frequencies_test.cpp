// RoPE with frequencies given outright (AttentionOptions::ropeInvFreq, how Llama 3.1's scaled RoPE
// reaches the engine): the forward, the one-head path and the KV-cache decoder all turn q and k by
// them; base^(-2i/d_k) given outright is the default bit for bit; a wrong count, a non-finite value
// or frequencies without RoPE are refused in one line naming the values.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "attention/decode.hpp"
#include "attention/engine.hpp"
#include "check_tensor.hpp"

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

}  // namespace
}  // namespace mhascope
