// The engine against an independent double-precision loop reference (written the slow, obvious
// way from the equations), over 100 random configurations including the degenerate shapes, plus
// the invariants and the engine's bad inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <memory>
#include <limits>
#include <random>

#include "../check_tensor.hpp"
#include "kernels/block_rows.hpp"
#include "attention/engine.hpp"
#include "kernels/gemm.hpp"
#include "kernels/head_kernels.hpp"
#include "attention/model.hpp"

namespace mhascope {
namespace {

using mhascope::testing::checkTensor;

struct RefTrace {
  std::vector<std::vector<double>> stage = std::vector<std::vector<double>>(kStageCount);
  std::vector<int> fullyMasked;
};

// Reference: every index written out, double precision, no Eigen.
RefTrace reference(const AttentionInputs& in, const MhaWeights& w, const AttentionOptions& opt) {
  const int B = static_cast<int>(in.query.dim(0)), Tq = static_cast<int>(in.query.dim(1)),
            Tk = static_cast<int>(in.key.dim(1)), d = static_cast<int>(in.query.dim(2)), h = opt.heads,
            dk = opt.headDim > 0 ? opt.headDim : d / h, hq = h * dk;
  RefTrace r;
  auto& S = r.stage;
  auto at = [](const Tensor& t, std::size_t i) { return static_cast<double>(t.data[i]); };
  for (std::size_t i = 0; i < in.query.data.size(); ++i) S[0].push_back(at(in.query, i));
  for (std::size_t i = 0; i < in.key.data.size(); ++i) S[1].push_back(at(in.key, i));
  for (std::size_t i = 0; i < in.value.data.size(); ++i) S[2].push_back(at(in.value, i));
  auto proj = [&](const std::vector<double>& x, int T, const RowMatrix& W, const RowVector& bias) {
    const int in = static_cast<int>(W.rows()), out = static_cast<int>(W.cols());
    std::vector<double> y(static_cast<std::size_t>(B * T * out));
    for (int bt = 0; bt < B * T; ++bt)
      for (int j = 0; j < out; ++j) {
        double s = bias[j];
        for (int i = 0; i < in; ++i) s += x[static_cast<std::size_t>(bt * in + i)] * static_cast<double>(W(i, j));
        y[static_cast<std::size_t>(bt * out + j)] = s;
      }
    return y;
  };
  S[3] = proj(S[0], Tq, w.wq, w.bq);
  S[4] = proj(S[1], Tk, w.wk, w.bk);
  S[5] = proj(S[2], Tk, w.wv, w.bv);
  auto split = [&](const std::vector<double>& p, int T) {
    std::vector<double> o(p.size());
    for (int b = 0; b < B; ++b)
      for (int hh = 0; hh < h; ++hh)
        for (int t = 0; t < T; ++t)
          for (int j = 0; j < dk; ++j)
            o[static_cast<std::size_t>(((b * h + hh) * T + t) * dk + j)] =
                p[static_cast<std::size_t>((b * T + t) * hq + hh * dk + j)];
    return o;
  };
  S[6] = split(S[3], Tq);
  S[7] = split(S[4], Tk);
  S[8] = split(S[5], Tk);
  const double scale = opt.scale == ScaleKind::SqrtDk      ? 1.0 / std::sqrt(static_cast<double>(dk))
                       : opt.scale == ScaleKind::SqrtDModel ? 1.0 / std::sqrt(static_cast<double>(d))
                                                           : 1.0;
  const std::size_t nS = static_cast<std::size_t>(B * h * Tq * Tk);
  for (int s = 9; s <= 12; ++s) S[static_cast<std::size_t>(s)].assign(nS, 0.0);
  S[13].assign(static_cast<std::size_t>(B * h * Tq * dk), 0.0);
  r.fullyMasked.assign(static_cast<std::size_t>(B * Tq), 0);
  for (int b = 0; b < B; ++b)
    for (int hh = 0; hh < h; ++hh)
      for (int q = 0; q < Tq; ++q) {
        const std::size_t row = static_cast<std::size_t>(((b * h + hh) * Tq + q) * Tk);
        bool all = true;
        std::vector<bool> blocked(static_cast<std::size_t>(Tk));
        for (int k = 0; k < Tk; ++k) {
          double dot = 0;
          for (int j = 0; j < dk; ++j)
            dot += S[6][static_cast<std::size_t>(((b * h + hh) * Tq + q) * dk + j)] *
                   S[7][static_cast<std::size_t>(((b * h + hh) * Tk + k) * dk + j)];
          S[9][row + k] = dot;
          S[10][row + k] = dot * scale;
          bool blk = opt.causal && k > q;
          if (opt.keyPaddingMask && opt.keyPaddingMask->data[static_cast<std::size_t>(b * Tk + k)] != 0) blk = true;
          if (opt.attnMask && opt.attnMask->data[static_cast<std::size_t>(q * Tk + k)] != 0) blk = true;
          blocked[static_cast<std::size_t>(k)] = blk;
          S[11][row + k] = blk ? -std::numeric_limits<double>::infinity() : dot * scale;
          all = all && blk;
        }
        if (all) {
          r.fullyMasked[static_cast<std::size_t>(b * Tq + q)] = 1;
          continue;  // weights and output row stay 0
        }
        double mx = -std::numeric_limits<double>::infinity(), sum = 0;
        for (int k = 0; k < Tk; ++k) mx = std::max(mx, S[11][row + k]);
        for (int k = 0; k < Tk; ++k) sum += blocked[static_cast<std::size_t>(k)] ? 0 : std::exp(S[11][row + k] - mx);
        for (int k = 0; k < Tk; ++k)
          S[12][row + k] = blocked[static_cast<std::size_t>(k)] ? 0 : std::exp(S[11][row + k] - mx) / sum;
        for (int j = 0; j < dk; ++j) {
          double o = 0;
          for (int k = 0; k < Tk; ++k)
            o += S[12][row + k] * S[8][static_cast<std::size_t>(((b * h + hh) * Tk + k) * dk + j)];
          S[13][static_cast<std::size_t>(((b * h + hh) * Tq + q) * dk + j)] = o;
        }
      }
  S[14].assign(static_cast<std::size_t>(B * Tq * hq), 0.0);
  for (int b = 0; b < B; ++b)
    for (int hh = 0; hh < h; ++hh)
      for (int q = 0; q < Tq; ++q)
        for (int j = 0; j < dk; ++j)
          S[14][static_cast<std::size_t>((b * Tq + q) * hq + hh * dk + j)] =
              S[13][static_cast<std::size_t>(((b * h + hh) * Tq + q) * dk + j)];
  S[15] = proj(S[14], Tq, w.wo, w.bo);
  return r;
}

Tensor randomTensor(Shape shape, std::mt19937_64& rng, float scale = 1.0f) {
  Tensor t(std::move(shape), {});
  std::normal_distribution<float> nd(0.0f, scale);
  for (auto& v : t.data) v = nd(rng);
  return t;
}

struct EngineCase {
  int B, Tq, Tk, d, h;
  bool cross, causal, padding, attnMask, bias;
  ScaleKind scale;
  int dk = 0;  // set: heads of this width (h·d_k ≠ d_model); 0: d_model / h
};

std::string describe(const EngineCase& c) {
  return "B=" + std::to_string(c.B) + " T_q=" + std::to_string(c.Tq) + " T_k=" + std::to_string(c.Tk) +
         " d_model=" + std::to_string(c.d) + " h=" + std::to_string(c.h) + (c.cross ? " cross" : " self") +
         (c.causal ? " causal" : "") + (c.padding ? " padding" : "") + (c.attnMask ? " attn_mask" : "") +
         (c.bias ? " bias" : "") + " scale=" + scaleName(c.scale) + (c.dk > 0 ? " d_k=" + std::to_string(c.dk) : "");
}

void runAndCompare(const EngineCase& c, std::mt19937_64& rng) {
  SCOPED_TRACE(describe(c));
  AttentionInputs in;
  in.query = randomTensor({c.B, c.Tq, c.d}, rng);
  in.selfAttention = !c.cross;
  if (c.cross) {
    in.key = randomTensor({c.B, c.Tk, c.d}, rng);
    in.value = randomTensor({c.B, c.Tk, c.d}, rng);
  } else {
    in.key = in.query;
    in.value = in.query;
  }
  MhaWeights w = c.dk > 0 ? initWeights(c.d, c.bias, rng(), c.h * c.dk, c.h * c.dk) : initWeights(c.d, c.bias, rng());
  AttentionOptions opt;
  opt.heads = c.h;
  opt.headDim = c.dk;
  opt.scale = c.scale;
  opt.causal = c.causal;
  const int Tk = c.cross ? c.Tk : c.Tq;
  std::bernoulli_distribution coin(0.3);
  if (c.padding) {
    Tensor m({c.B, Tk}, {});
    for (auto& v : m.data) v = coin(rng) ? 1.0f : 0.0f;
    opt.keyPaddingMask = m;
  }
  if (c.attnMask) {
    Tensor m({c.Tq, Tk}, {});
    for (auto& v : m.data) v = coin(rng) ? 1.0f : 0.0f;
    opt.attnMask = m;
  }
  Trace trace;
  const Status s = forward(in, w, opt, trace);
  ASSERT_TRUE(s.ok()) << s.error().message;
  const RefTrace ref = reference(in, w, opt);
  // The reference writes multi-head attention's 16 stages in pipeline order (S[0] .. S[15]); the
  // variants' stages are not recorded here.
  const StageId mha[] = {StageId::Query,  StageId::Key,          StageId::Value,        StageId::QProj,
                         StageId::KProj,  StageId::VProj,        StageId::QHeads,       StageId::KHeads,
                         StageId::VHeads, StageId::Scores,       StageId::ScaledScores, StageId::MaskedScores,
                         StageId::Weights, StageId::HeadOutputs, StageId::Concat,       StageId::Output};
  for (int i = 0; i < kStageCount; ++i) {
    EXPECT_EQ(stageRecorded(trace, static_cast<StageId>(i)), !stageIsVariant(static_cast<StageId>(i)));
  }
  for (std::size_t i = 0; i < std::size(mha); ++i) {
    const Tensor& t = trace.copyOf(mha[i]);  // lazy stages: their whole table
    ASSERT_EQ(t.data.size(), ref.stage[i].size()) << stageInfo(mha[i]).name;
    EXPECT_TRUE(checkTensor(stageInfo(mha[i]).name, t.ptr(), ref.stage[i].data(), t.data.size(), 2e-5, 2e-4));
  }
  for (std::size_t i = 0; i < ref.fullyMasked.size(); ++i) {
    EXPECT_EQ(trace.fullyMasked[i], ref.fullyMasked[i]) << "fully-masked flag of row " << i;
  }
}

std::uint64_t testSeed() {
  if (const char* s = std::getenv("MHASCOPE_TEST_SEED")) return std::strtoull(s, nullptr, 10);
  return std::random_device{}();
}

TEST(Engine, MatchesLoopReferenceOnRandomConfigs) {
  const std::uint64_t seed = testSeed();
  std::printf("[ engine  ] random configurations with MHASCOPE_TEST_SEED=%llu\n",
              static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  // The degenerate but legal shapes (T = 1, h = 1, d_k = 1, h = d_model, T = d_model, odd T) first, then random ones.
  std::vector<EngineCase> cases = {
      {1, 1, 1, 4, 2, false, false, false, false, true, ScaleKind::SqrtDk},   // T = 1
      {1, 5, 5, 6, 1, false, true, false, false, false, ScaleKind::SqrtDk},   // h = 1
      {2, 3, 3, 4, 4, false, false, false, false, true, ScaleKind::SqrtDk},   // d_k = 1, h = d_model
      {1, 8, 8, 8, 2, false, true, false, false, true, ScaleKind::SqrtDk},    // T = d_model
      {3, 7, 7, 10, 5, false, false, true, false, true, ScaleKind::SqrtDk},   // odd T
      {2, 4, 9, 6, 3, true, false, true, true, true, ScaleKind::SqrtDModel},  // cross, T_q != T_k
      {1, 6, 6, 12, 3, false, true, true, true, false, ScaleKind::None},
      // Longer than the engine's query block (128 rows): several blocks, a partial last one.
      {2, 300, 290, 16, 4, true, true, true, true, true, ScaleKind::SqrtDk},
      {1, 257, 257, 8, 2, false, true, false, false, true, ScaleKind::SqrtDk},
      // Heads wider and narrower than d_model / h (h·d_k ≠ d_model), and more heads than d_model.
      {1, 6, 6, 8, 2, false, true, false, false, true, ScaleKind::SqrtDk, 8},
      {2, 5, 7, 12, 3, true, false, true, false, true, ScaleKind::SqrtDk, 2},
      {1, 4, 4, 4, 6, false, true, false, false, false, ScaleKind::SqrtDk, 3},
      {1, 200, 200, 16, 2, false, true, false, false, true, ScaleKind::SqrtDk, 24},
  };
  std::uniform_int_distribution<int> small(1, 9), heads(1, 6), dkDist(1, 8), bDist(1, 3);
  std::bernoulli_distribution coin(0.5);
  while (cases.size() < 100) {
    EngineCase c{};
    c.B = bDist(rng);
    c.Tq = small(rng);
    c.cross = coin(rng);
    c.Tk = c.cross ? small(rng) : c.Tq;
    c.h = heads(rng);
    c.d = c.h * dkDist(rng);
    c.causal = coin(rng);
    c.padding = coin(rng);
    c.attnMask = coin(rng) && coin(rng);
    c.bias = coin(rng);
    const int s = std::uniform_int_distribution<int>(0, 2)(rng);
    c.scale = s == 0 ? ScaleKind::SqrtDk : s == 1 ? ScaleKind::SqrtDModel : ScaleKind::None;
    if (coin(rng) && coin(rng)) c.dk = dkDist(rng);  // a width of its own, often not d_model / h
    cases.push_back(c);
  }
  for (const EngineCase& c : cases) runAndCompare(c, rng);
}

Model smallModel(const std::string& text, int d, int h, MaskKind mask = MaskKind::None) {
  ModelConfig cfg;
  cfg.text = text;
  cfg.dModel = d;
  cfg.heads = h;
  cfg.mask = mask;
  auto m = buildModel(cfg);
  EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error().message);
  return std::move(m).value();
}

TEST(Engine, Invariants) {
  Model m = smallModel("a b c d e f g", 12, 3, MaskKind::Causal);
  Trace t;
  ASSERT_TRUE(forward(m.inputs, m.weights, m.options, t).ok());
  const Tensor& W = t.tensor(StageId::Weights);
  const Tensor& V = t.tensor(StageId::VHeads);
  const Tensor& O = t.tensor(StageId::HeadOutputs);
  for (int h = 0; h < t.heads; ++h) {
    for (int q = 0; q < t.tq; ++q) {
      double sum = 0;
      for (int k = 0; k < t.tk; ++k) {
        const float w = W.data[static_cast<std::size_t>((h * t.tq + q) * t.tk + k)];
        if (k > q) EXPECT_EQ(w, 0.0f) << "causal: future key must get weight exactly 0";
        sum += w;
      }
      EXPECT_NEAR(sum, 1.0, 1e-5) << "row " << q << " of head " << h;
    }
    // weights · V = head outputs (the recorded path and the output path agree).
    RowMatrix wv = ConstMatrixMap(W.ptr() + h * t.tq * t.tk, t.tq, t.tk) *
                   ConstMatrixMap(V.ptr() + h * t.tk * t.dk, t.tk, t.dk);
    EXPECT_TRUE(checkTensor("A V", wv.data(), O.ptr() + h * t.tq * t.dk, static_cast<std::size_t>(wv.size()), 1e-6,
                            1e-5));
  }
  // concat = heads side by side.
  const Tensor& C = t.tensor(StageId::Concat);
  for (int q = 0; q < t.tq; ++q)
    for (int h = 0; h < t.heads; ++h)
      for (int j = 0; j < t.dk; ++j)
        EXPECT_EQ(C.data[static_cast<std::size_t>(q * t.dModel + h * t.dk + j)],
                  O.data[static_cast<std::size_t>((h * t.tq + q) * t.dk + j)]);
  // Mean of per-head weights equals the averaged weights.
  RowMatrix avg = averagedWeights(t, 0);
  for (int q = 0; q < t.tq; ++q)
    for (int k = 0; k < t.tk; ++k) {
      double s = 0;
      for (int h = 0; h < t.heads; ++h) s += W.data[static_cast<std::size_t>((h * t.tq + q) * t.tk + k)];
      EXPECT_NEAR(avg(q, k), s / t.heads, 1e-6);
    }
}

TEST(Engine, OutputsIndependentOfValuesAtMaskedKeys) {
  Model m = smallModel("one two three four five", 8, 2);
  m.inputs.selfAttention = false;
  Tensor pad({1, 5}, {});
  pad.data = {0, 1, 0, 0, 1};  // asymmetric: keys 1 and 4 ignored
  m.options.keyPaddingMask = pad;
  Trace a, b;
  ASSERT_TRUE(forward(m.inputs, m.weights, m.options, a).ok());
  for (int k : {1, 4})
    for (int j = 0; j < 8; ++j) m.inputs.value.data[static_cast<std::size_t>(k * 8 + j)] = 1000.0f * (j + 1);
  ASSERT_TRUE(forward(m.inputs, m.weights, m.options, b).ok());
  const Tensor& oa = a.tensor(StageId::Output);
  const Tensor& ob = b.tensor(StageId::Output);
  EXPECT_TRUE(checkTensor("output", ob.ptr(), oa.ptr(), oa.data.size(), 1e-6, 1e-6));
  // And the masked keys' weights are exactly zero in every row of every head.
  const Tensor& W = a.tensor(StageId::Weights);
  for (int h = 0; h < 2; ++h)
    for (int q = 0; q < 5; ++q) {
      EXPECT_EQ(W.data[static_cast<std::size_t>((h * 5 + q) * 5 + 1)], 0.0f);
      EXPECT_EQ(W.data[static_cast<std::size_t>((h * 5 + q) * 5 + 4)], 0.0f);
      EXPECT_GT(W.data[static_cast<std::size_t>((h * 5 + q) * 5 + 0)], 0.0f);
    }
}

TEST(Engine, AttnMaskPolarityIsAsymmetric) {
  // attn_mask True = blocked: block only (query 0, key 2). Its transpose (2, 0) must stay open.
  Model m = smallModel("a b c", 4, 1);
  Tensor am({3, 3}, {});
  am.data[2] = 1.0f;
  m.options.attnMask = am;
  Trace t;
  ASSERT_TRUE(forward(m.inputs, m.weights, m.options, t).ok());
  const Tensor& W = t.tensor(StageId::Weights);
  EXPECT_EQ(W.data[0 * 3 + 2], 0.0f);
  EXPECT_GT(W.data[2 * 3 + 0], 0.0f);
  EXPECT_TRUE(std::isinf(t.copyOf(StageId::MaskedScores).data[2]));
}

// A fully masked row gives weights exactly 0, output row 0, no NaN, flagged.
TEST(Engine, FullyMaskedRowIsZeroNotNanNorUniform) {
  Model m = smallModel("a b c d", 8, 2, MaskKind::Causal);
  Tensor pad({1, 4}, {});
  pad.data = {1, 0, 0, 0};  // key 0 padded + causal → query 0 can see nothing
  m.options.keyPaddingMask = pad;
  Trace t;
  ASSERT_TRUE(forward(m.inputs, m.weights, m.options, t).ok());
  EXPECT_TRUE(t.isFullyMasked(0, 0));
  EXPECT_FALSE(t.isFullyMasked(0, 1));
  for (const auto& st : t.stages)
    for (float v : t.copyOf(st.id).data) ASSERT_FALSE(std::isnan(v)) << stageInfo(st.id).name << " has NaN";
  const Tensor& W = t.tensor(StageId::Weights);
  const Tensor& O = t.tensor(StageId::HeadOutputs);
  for (int h = 0; h < 2; ++h) {
    for (int k = 0; k < 4; ++k) EXPECT_EQ(W.data[static_cast<std::size_t>(h * 16 + k)], 0.0f);
    for (int j = 0; j < 4; ++j) EXPECT_EQ(O.data[static_cast<std::size_t>(h * 16 + j)], 0.0f);
  }
}

TEST(Engine, EverythingPaddedGivesZeroRowsEverywhere) {
  ModelConfig cfg;
  cfg.text = "x y z";
  cfg.padLastKeys = 3;
  auto m = buildModel(cfg);
  ASSERT_TRUE(m.ok()) << m.error().message;
  Trace t;
  ASSERT_TRUE(forward(m->inputs, m->weights, m->options, t).ok());
  for (int q = 0; q < 3; ++q) EXPECT_TRUE(t.isFullyMasked(0, q));
  for (float v : t.tensor(StageId::Weights).data) EXPECT_EQ(v, 0.0f);
  for (float v : t.tensor(StageId::Output).data) EXPECT_FALSE(std::isnan(v));
}

// Logits far above the float exp overflow point stay finite.
TEST(Engine, LargeLogitsGiveFiniteWeights) {
  Model m = smallModel("a b c d", 8, 2);
  for (auto& v : m.inputs.query.data) v *= 1000.0f;
  m.inputs.key = m.inputs.query;
  m.inputs.value = m.inputs.query;
  m.options.scale = ScaleKind::None;
  Trace t;
  ASSERT_TRUE(forward(m.inputs, m.weights, m.options, t).ok());
  float maxScore = 0;
  for (float v : t.copyOf(StageId::ScaledScores).data) maxScore = std::max(maxScore, std::abs(v));
  EXPECT_GT(maxScore, 88.0f) << "the test must actually produce overflowing logits";
  for (float v : t.tensor(StageId::Weights).data) {
    ASSERT_TRUE(std::isfinite(v));
    EXPECT_GE(v, 0.0f);
    EXPECT_LE(v, 1.0f);
  }
}

// Every invalid size is a clear error naming the values.
TEST(Engine, InvalidConfigurationsAreClearErrors) {
  auto errorOf = [](ModelConfig cfg) {
    auto m = buildModel(cfg);
    return m.ok() ? std::string("(no error)") : m.error().message;
  };
  ModelConfig base;
  ModelConfig c = base;
  c.text = "   ";
  EXPECT_NE(errorOf(c).find("enter at least one token"), std::string::npos) << errorOf(c);
  c = base;
  c.dModel = 10;
  c.heads = 4;
  EXPECT_NE(errorOf(c).find("d_model (10) must be divisible by heads (4)"), std::string::npos) << errorOf(c);
  EXPECT_NE(errorOf(c).find("5"), std::string::npos) << "should offer the nearest valid heads";
  c.heads = 0;
  EXPECT_NE(errorOf(c).find("heads (h) must be at least 1, got 0"), std::string::npos) << errorOf(c);
  c.heads = 2;
  c.dModel = 0;
  EXPECT_NE(errorOf(c).find("d_model must be at least 1, got 0"), std::string::npos) << errorOf(c);
  c.dModel = -8;
  EXPECT_NE(errorOf(c).find("got -8"), std::string::npos) << errorOf(c);
  c = base;
  c.tokens = 4000;
  c.heads = 8;
  c.dModel = 64;
  c.batch = 8;
  const std::string big = errorOf(c);
  EXPECT_NE(big.find("memory budget"), std::string::npos) << big;
  EXPECT_NE(big.find("GiB"), std::string::npos) << big;
  c = base;
  c.padLastKeys = 99;
  EXPECT_NE(errorOf(c).find("only T_k = 6"), std::string::npos) << errorOf(c);

  Model m = smallModel("a b c", 4, 2);
  Tensor wrong({1, 4}, {});
  m.options.keyPaddingMask = wrong;
  Trace t;
  Status s = forward(m.inputs, m.weights, m.options, t);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("(1, 4)"), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("(1, 3)"), std::string::npos) << s.error().message;
  m.options.keyPaddingMask.reset();
  m.options.attnMask = Tensor({3, 2}, {});
  s = forward(m.inputs, m.weights, m.options, t);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("(T_q, T_k) = (3, 3)"), std::string::npos) << s.error().message;
  EXPECT_EQ(t.generation, 0u) << "a failed forward must not touch the trace";
}

TEST(Engine, ReusesBuffersWhenShapesAreUnchanged) {
  Model m = smallModel("a b c d e", 8, 2);
  Trace t;
  ASSERT_TRUE(forward(m.inputs, m.weights, m.options, t).ok());
  const float* before = t.tensor(StageId::Weights).ptr();
  m.inputs.query.data[0] += 1.0f;
  ASSERT_TRUE(forward(m.inputs, m.weights, m.options, t).ok());
  EXPECT_EQ(before, t.tensor(StageId::Weights).ptr());
  EXPECT_EQ(t.generation, 2u);
}

// forward(shared weights) keeps the caller's object as the trace's record (no copy); forward(const
// MhaWeights&) a copy of its own, so changing the caller's weights afterwards changes no trace.
// Both give the same bits in every stage, and a trace reused by the copying overload never writes
// into weights it shared.
TEST(Engine, SharedWeightsAreTheTracesRecordWithoutACopy) {
  Model m = smallModel("a b c d e f", 8, 2, MaskKind::Causal);
  const MhaWeights original = m.weights;
  const auto shared = std::make_shared<const MhaWeights>(m.weights);
  Trace a, b;
  ASSERT_TRUE(forward(m.inputs, shared, m.options, a).ok());
  ASSERT_TRUE(forward(m.inputs, m.weights, m.options, b).ok());
  EXPECT_EQ(a.weights.get(), shared.get());
  auto wq = sliceWeight(a, WeightId::Wq);
  ASSERT_TRUE(wq.ok());
  EXPECT_EQ(wq->data, shared->wq.data()) << "the shared numbers themselves";
  ASSERT_NE(b.weights, nullptr);
  EXPECT_NE(b.weights.get(), &m.weights);
  for (int i = 0; i < kStageCount; ++i) {
    const auto id = static_cast<StageId>(i);
    const Tensor x = a.copyOf(id), y = b.copyOf(id);
    ASSERT_EQ(x.shape, y.shape) << stageInfo(id).name;
    EXPECT_EQ(x.data.empty() ? 0 : std::memcmp(x.ptr(), y.ptr(), x.data.size() * sizeof(float)), 0) << stageInfo(id).name;
  }
  for (int i = 0; i < kWeightCount; ++i) {
    const WeightTable x = a.weight(static_cast<WeightId>(i)), y = b.weight(static_cast<WeightId>(i));
    ASSERT_EQ(x.rows * x.cols, y.rows * y.cols);
    EXPECT_EQ(std::memcmp(x.data, y.data, static_cast<std::size_t>(x.rows * x.cols) * sizeof(float)), 0);
  }
  // The caller's weights change: the copy does not.
  m.weights.wq(0, 0) += 1.0f;
  EXPECT_EQ(b.weight(WeightId::Wq).data[0], original.wq(0, 0));
  // The shared trace recomputed with other weights by the copying overload: the shared object is
  // left as it was, the trace holds the new ones.
  const MhaWeights other = initWeights(8, true, 99);
  ASSERT_TRUE(forward(m.inputs, other, m.options, a).ok());
  EXPECT_TRUE(shared->wq == original.wq && shared->bo == original.bo);
  EXPECT_NE(a.weights.get(), shared.get());
  EXPECT_EQ(a.weight(WeightId::Wk).data[3], other.wk(0, 3));
  // No weights: an error, the trace untouched.
  const std::uint64_t generation = a.generation;
  const Status none = forward(m.inputs, std::shared_ptr<const MhaWeights>{}, m.options, a);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("no weights"), std::string::npos) << none.error().message;
  EXPECT_EQ(a.generation, generation);
}

// The attention's query blocks of 64 or 128 rows (block_rows.hpp, measured per machine) give the
// same bits: rows past a block's end, a causal mask, padded keys, two batch items, two threads and
// the one-head forward the window's first picture uses.
TEST(Engine, QueryBlockRowsChangeNoBit) {
  ModelConfig cfg;
  cfg.text = "the cat sat on the mat | a dog ran in the park";
  cfg.tokens = 200;  // 64 + 64 + 64 + 8 rows, 128 + 72
  cfg.dModel = 24;
  cfg.heads = 3;
  cfg.mask = MaskKind::Causal;
  cfg.padLastKeys = 5;
  auto built = buildModel(cfg);
  ASSERT_TRUE(built.ok()) << built.error().message;
  Model m = std::move(built).value();
  ASSERT_EQ(m.inputs.query.dim(0), 2);
  // On the general path the products run on the GEMM: Eigen's, the default, sums each cell the same
  // way for any number of rows (OpenBLAS's blocking depends on it, so MHASCOPE_GEMM=openblas would
  // change the last bits).
  ASSERT_TRUE(setGemmBackend(GemmBackend::Eigen));
  for (int threads : {1, 2}) {
    m.options.threads = threads;
    Trace t64, t128;
    ASSERT_TRUE(setQueryBlockRows(64));
    ASSERT_TRUE(forward(m.inputs, m.weights, m.options, t64).ok());
    auto head64 = attentionHead(m.inputs, m.weights, m.options, StageId::Weights, 1, 2);
    ASSERT_TRUE(setQueryBlockRows(128));
    ASSERT_TRUE(forward(m.inputs, m.weights, m.options, t128).ok());
    auto head128 = attentionHead(m.inputs, m.weights, m.options, StageId::Weights, 1, 2);
    for (int i = 0; i < kStageCount; ++i) {
      const auto id = static_cast<StageId>(i);
      const Tensor x = t64.copyOf(id), y = t128.copyOf(id);
      ASSERT_EQ(x.shape, y.shape) << stageInfo(id).name;
      EXPECT_EQ(x.data.empty() ? 0 : std::memcmp(x.ptr(), y.ptr(), x.data.size() * sizeof(float)), 0)
          << stageInfo(id).name << ", threads " << threads;
    }
    ASSERT_TRUE(head64.ok() && head128.ok());
    const Tensor& a = head64->tensor(StageId::Weights);
    const Tensor& b = head128->tensor(StageId::Weights);
    ASSERT_EQ(a.shape, b.shape);
    EXPECT_EQ(std::memcmp(a.ptr(), b.ptr(), a.data.size() * sizeof(float)), 0) << "one head, threads " << threads;
  }
  EXPECT_FALSE(setQueryBlockRows(0));
  EXPECT_EQ(queryBlockRows(), 128);
}

// The learned matrices packed for the head kernels (the Engine's scratch, never the trace) are made
// when the forward shares the caller's weights, kept while the same object comes back alive, and
// made afresh for any other: every forward gives the bits of the copying overload with its weights.
TEST(Engine, PackedWeightsFollowTheSharedWeights) {
  ModelConfig cfg;
  cfg.text = "the cat sat on the mat and looked at the dog";
  cfg.dModel = 80;  // two strips of 64 columns and a part
  cfg.heads = 5;
  auto built = buildModel(cfg);
  ASSERT_TRUE(built.ok()) << built.error().message;
  const Model m = std::move(built).value();
  const auto first = std::make_shared<const MhaWeights>(m.weights);
  const auto second = std::make_shared<const MhaWeights>(initWeights(80, true, 7));
  auto expectBitsOf = [&](const Trace& t, const MhaWeights& w, const char* what) {
    Trace copied;
    Engine copying;
    ASSERT_TRUE(copying.forward(m.inputs, w, m.options, copied).ok());
    EXPECT_EQ(copying.scratch().packedWeights.of.lock(), nullptr) << "a copying forward keeps no packed copy";
    for (int i = 0; i < kStageCount; ++i) {
      const auto id = static_cast<StageId>(i);
      const Tensor x = t.copyOf(id), y = copied.copyOf(id);
      ASSERT_EQ(x.shape, y.shape) << what << ": " << stageInfo(id).name;
      EXPECT_EQ(x.data.empty() ? 0 : std::memcmp(x.ptr(), y.ptr(), x.data.size() * sizeof(float)), 0) << what << ": " << stageInfo(id).name;
    }
  };
  Trace t;
  Engine engine;
  const auto& packed = engine.scratch().packedWeights;
  ASSERT_TRUE(engine.forward(m.inputs, first, m.options, t).ok());
  if (!headKernelsEnabled()) {
    EXPECT_EQ(packed.of.lock(), nullptr) << "no kernels, nothing packed";
    expectBitsOf(t, *first, "first");
    return;
  }
  EXPECT_EQ(packed.of.lock().get(), first.get());
  const std::int64_t each = packedStripsFloats(80, 80);
  ASSERT_EQ(static_cast<std::int64_t>(packed.data.size()), 4 * each);
  std::vector<float> wo(static_cast<std::size_t>(each));
  packStrips(first->wo.data(), 80, 80, 80, 0, 2, wo.data());
  EXPECT_EQ(std::memcmp(wo.data(), packed.data.data() + 3 * each, wo.size() * sizeof(float)), 0) << "W_o";
  expectBitsOf(t, *first, "first");
  const float* kept = packed.data.data();
  ASSERT_TRUE(engine.forward(m.inputs, first, m.options, t).ok());  // the same object: packed as it was
  EXPECT_EQ(packed.data.data(), kept);
  expectBitsOf(t, *first, "first again");
  ASSERT_TRUE(engine.forward(m.inputs, second, m.options, t).ok());  // another object: packed afresh
  EXPECT_EQ(packed.of.lock().get(), second.get());
  expectBitsOf(t, *second, "second");
  // Weights that are gone (the window's replaced model) are packed again even for an object at
  // the same address (another object by then): the copy packed from the old numbers is not read.
  auto gone = std::make_shared<const MhaWeights>(initWeights(80, true, 9));
  ASSERT_TRUE(engine.forward(m.inputs, gone, m.options, t).ok());
  t = Trace{};
  gone.reset();
  const auto again = std::make_shared<const MhaWeights>(*second);
  ASSERT_TRUE(engine.forward(m.inputs, again, m.options, t).ok());
  EXPECT_EQ(packed.of.lock().get(), again.get());
  expectBitsOf(t, *again, "second after the old weights went");
  ASSERT_TRUE(engine.forward(m.inputs, m.weights, m.options, t).ok());  // copying: the packed copy goes
  EXPECT_EQ(packed.of.lock(), nullptr);
  EXPECT_TRUE(packed.data.empty());
}

TEST(Engine, SameSeedSameWeightsAndEmbeddings) {
  const MhaWeights a = initWeights(6, true, 7), b = initWeights(6, true, 7), c = initWeights(6, true, 8);
  EXPECT_TRUE(a.wq == b.wq && a.wo == b.wo && a.bv == b.bv);
  EXPECT_FALSE(a.wq == c.wq);
  // Pinned values: the seeded initialisation must be the same on every machine.
  // (The same with -march=native, x86-64-v3 and x86-64, because the build forbids implicit FMA
  // contraction: -ffp-contract=off in CMakeLists.txt. wo(3, 3) is near 0, where lo + (hi-lo)*u
  // cancels and a fused multiply-add would change it visibly.)
  EXPECT_EQ(initWeights(4, false, 0).wq(0, 0), 0.584730566f);
  EXPECT_EQ(initWeights(4, false, 0).wo(3, 3), -0.00906038284f);
  Model m = smallModel("the cat saw the dog", 8, 2);
  // "the" at positions 0 and 3: same embedding, different position code.
  ModelConfig cfg;
  cfg.text = "the cat saw the dog";
  cfg.positions = false;
  auto np = buildModel(cfg);
  ASSERT_TRUE(np.ok());
  for (int j = 0; j < 8; ++j) EXPECT_EQ(np->inputs.query.data[static_cast<std::size_t>(j)],
                                        np->inputs.query.data[static_cast<std::size_t>(3 * 8 + j)]);
  EXPECT_NE(m.inputs.query.data[0], m.inputs.query.data[3 * 8]);
}

TEST(Engine, FlopAndMemoryEstimates) {
  const FlopCount f = countFlops(1, 128, 128, 512, 8);
  EXPECT_DOUBLE_EQ(f.projections, 2.0 * 4 * 128 * 512 * 512);
  EXPECT_DOUBLE_EQ(f.attention, 2.0 * 2 * 128 * 128 * 512);
  EXPECT_EQ(layerCounts({512, 8, 0, 0, false}).params(), 4 * 512 * 512);
  EXPECT_EQ(layerCounts({512, 8, 0, 0, true}).params(), 4 * 512 * 512 + 4 * 512);
  EXPECT_EQ(nearestValidHeads(10, 4), (std::vector<int>{2, 5}));
  EXPECT_EQ(nearestValidHeads(12, 5), (std::vector<int>{4, 6}));
}

}  // namespace
}  // namespace mhascope

namespace mhascope {
namespace {

TEST(Engine, ScoresOverrideRecomputesDownstream) {
  ModelConfig cfg;
  cfg.text = "a b c";
  cfg.dModel = 4;
  cfg.heads = 2;
  auto m = buildModel(cfg);
  ASSERT_TRUE(m.ok());
  Trace base, edited;
  ASSERT_TRUE(forward(m->inputs, m->weights, m->options, base).ok());
  Tensor o({2, 3, 3}, {});
  std::fill(o.data.begin(), o.data.end(), std::numeric_limits<float>::quiet_NaN());
  o.data[1 * 9 + 0 * 3 + 2] = 50.0f;  // head 1, query 0 → key 2: a huge hand-set score
  m->options.scoresOverride = o;
  ASSERT_TRUE(forward(m->inputs, m->weights, m->options, edited).ok());
  const Tensor& s0 = base.tensor(StageId::Scores);
  const Tensor& s1 = edited.tensor(StageId::Scores);
  for (std::size_t i = 0; i < s0.data.size(); ++i) {
    if (i == 9 + 2) {
      EXPECT_EQ(s1.data[i], 50.0f);
    } else {
      EXPECT_EQ(s1.data[i], s0.data[i]) << "NaN entries must keep the computed score";
    }
  }
  EXPECT_GT(edited.tensor(StageId::Weights).data[9 + 2], 0.99f);
  EXPECT_NE(edited.tensor(StageId::Output).data[0], base.tensor(StageId::Output).data[0]);
  m->options.scoresOverride = Tensor({2, 3, 4}, {});
  Status s = forward(m->inputs, m->weights, m->options, edited);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("(h, T_q, T_k) = (2, 3, 3)"), std::string::npos) << s.error().message;
}

}  // namespace
}  // namespace mhascope

namespace mhascope {
namespace {

TEST(Engine, ScoresOverrideAppliesInEveryQueryBlock) {
  ModelConfig cfg;
  cfg.tokens = 300;  // more than one block of query rows
  cfg.dModel = 8;
  cfg.heads = 2;
  auto m = buildModel(cfg);
  ASSERT_TRUE(m.ok());
  Tensor o({2, 300, 300}, {});
  std::fill(o.data.begin(), o.data.end(), std::numeric_limits<float>::quiet_NaN());
  for (int q : {0, 127, 128, 299}) o.data[static_cast<std::size_t>((1 * 300 + q) * 300 + 5)] = 40.0f;
  m->options.scoresOverride = o;
  Trace t;
  ASSERT_TRUE(forward(m->inputs, m->weights, m->options, t).ok());
  for (int q : {0, 127, 128, 299}) {
    EXPECT_EQ(t.tensor(StageId::Scores).data[static_cast<std::size_t>((1 * 300 + q) * 300 + 5)], 40.0f) << q;
  }
}

}  // namespace
}  // namespace mhascope
