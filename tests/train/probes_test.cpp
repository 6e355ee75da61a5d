// The induction and copying scores (prefix matching over every earlier copy, queries without one
// left out; copying through the direct path to the logits), the repeated-random-token probe, the
// read cuts of the ablation (a head's output taken out of later layers' queries, keys or values
// only) and, on the reference run, K-composition: the keys need the previous-token head, the
// queries do not.
#include <gtest/gtest.h>

#include <cmath>

#include "train/ablation.hpp"
#include "train/circuit.hpp"
#include "train/trainer.hpp"
#include "small_settings.hpp"
#include "test_support.hpp"

using namespace mhascope;
using namespace mhascope::train;

namespace {

// A 1-layer, 1-head model of d_model 2 and V = 2 whose direct path to the logits is exact: W_o = I,
// the final LayerNorm's weights 1, unembedding rows (1, -1) and (-1, 1) — so token 0 ranks first
// exactly when the head output's first entry exceeds its second.
GptParams copyModel(int seq) {
  GptConfig cfg;
  cfg.vocab = 2;
  cfg.seqLen = seq;
  cfg.dModel = 2;
  cfg.heads = 1;
  cfg.layers = 1;
  GptParams p = zeroParams(cfg);
  p.blocks[0].outW = RowMatrix::Identity(2, 2);
  p.lnfW.setOnes();
  p.outW << 1, -1, -1, 1;
  return p;
}

ForwardCache cacheWith(int T, const std::vector<float>& weights, const std::vector<float>& concat) {
  ForwardCache c;
  c.layers.resize(1);
  Trace& tr = c.layers[0].attn;
  tr.heads = 1;
  tr.tq = tr.tk = T;
  tr.stages.resize(kStageCount);
  Tensor& w = tr.tensor(StageId::Weights);
  w = Tensor({1, 1, T, T}, {});
  std::copy(weights.begin(), weights.end(), w.data.begin());
  Tensor& o = tr.tensor(StageId::Concat);
  o = Tensor({1, T, 2}, {});
  std::copy(concat.begin(), concat.end(), o.data.begin());
  return c;
}

using fixtures::joined;

}  // namespace

TEST(TrainProbes, PrefixMatchingCountsEveryEarlierCopyAndLeavesOutQueriesWithoutOne) {
  // Tokens 0 1 0 1 0 1: query 4 (token 0) has earlier copies at 0 and 2, so keys 1 and 3 both count.
  const int T = 6;
  Batch b{1, T, {0, 1, 0, 1, 0, 1}, std::vector<int>(T, -1)};
  std::vector<float> w(T * T, 0.0f);
  auto at = [&](int q, int k) -> float& { return w[static_cast<std::size_t>(q * T + k)]; };
  at(0, 0) = 1;
  at(1, 0) = 1;      // queries 0, 1: no earlier copy — whatever they do is left out
  at(2, 1) = 1;      // copy at 0 → key 1
  at(3, 2) = 1;      // copy at 1 → key 2
  at(4, 1) = 0.5f;   // copies at 0 and 2 → keys 1 and 3: the total
  at(4, 3) = 0.5f;
  at(5, 2) = 0.25f;  // copies at 1 and 3 → keys 2 and 4
  at(5, 4) = 0.25f;
  at(5, 5) = 0.5f;
  const GptParams p = copyModel(T);
  ForwardCache c = cacheWith(T, w, std::vector<float>(T * 2, 0.0f));
  std::vector<HeadScores> s(1);
  inductionScores(p, c, b, s);
  // Queries 2..5 count: 1, 1, 1, 0.5. The latest copy alone would give (1 + 1 + 0.5 + 0.25) / 4.
  EXPECT_NEAR(s[0].induction, 3.5 / 4.0, 1e-6);
  // A doubled token (x_{t-1} = x_t): key j+1 = t is the query itself and is not counted.
  Batch twin{1, 2, {1, 1}, {-1, -1}};
  ForwardCache c2 = cacheWith(2, {1, 0, 0, 1}, std::vector<float>(4, 0.0f));
  std::vector<HeadScores> s2(1);
  inductionScores(copyModel(2), c2, twin, s2);
  EXPECT_EQ(s2[0].induction, 0.0);  // no query with a copy: nothing counted
}

TEST(TrainProbes, CopyingIsTheShareOfQueriesWhoseOutputRanksTheAttendedTokenFirst) {
  const int T = 6;
  Batch b{1, T, {0, 1, 0, 1, 0, 1}, std::vector<int>(T, -1)};
  std::vector<float> w(T * T, 0.0f);
  for (int q = 0; q < T; ++q) w[static_cast<std::size_t>(q * T + std::max(0, q - 1))] = 1;  // attends to key q-1
  // Head output per query: (1, 0) ranks token 0 first, (0, 1) token 1.
  std::vector<float> concat = {1, 0, 1, 0, /*q2 attends key 1 = token 1*/ 0, 1, /*q3 → token 0*/ 1, 0,
                               /*q4 → token 1, but writes token 0*/ 1, 0, /*q5 → token 0, writes 1*/ 0, 1};
  const GptParams p = copyModel(T);
  ForwardCache c = cacheWith(T, w, concat);
  std::vector<HeadScores> s(1);
  inductionScores(p, c, b, s);
  EXPECT_NEAR(s[0].copying, 0.5, 1e-9);  // queries 2, 3 copy; 4, 5 do not
  HeadScores h;
  h.induction = 0.9;
  h.copying = 0.4;
  EXPECT_FALSE(isInductionHead(h, 1));
  EXPECT_NE(roleOf(h, 1).find("prefix matching 0.90, not copying"), std::string::npos) << roleOf(h, 1);
  h.copying = 0.6;
  EXPECT_TRUE(isInductionHead(h, 1));
  EXPECT_EQ(roleOf(h, 1), "induction 0.90 copying 0.60");
}

TEST(TrainProbes, TheRepeatedProbeRepeatsRandomTokensTheSameWayEveryTime) {
  const Batch a = repeatedTokensProbe(64, 33, 4), b = repeatedTokensProbe(64, 33, 4);
  EXPECT_EQ(a.tokens, b.tokens);
  ASSERT_EQ(a.tokens.size(), 4u * 33u);
  for (int item = 0; item < 4; ++item) {
    for (int t = 16; t < 33; ++t) EXPECT_EQ(a.tokens[static_cast<std::size_t>(item * 33 + t)], a.tokens[static_cast<std::size_t>(item * 33 + t - 16)]);
    for (int t = 0; t < 33; ++t) EXPECT_LT(a.tokens[static_cast<std::size_t>(item * 33 + t)], 64);
  }
  for (int v : a.targets) EXPECT_EQ(v, -1);
}

TEST(TrainReadCuts, NoCutIsThePlainForwardAndACutOfEveryReadEqualsTheHeadOffForTheNextLayer) {
  auto t = Trainer::make(fixtures::smallInduction());
  ASSERT_TRUE(t.ok());
  for (int i = 0; i < 30; ++i) ASSERT_TRUE(t->step().ok());
  const GptParams& p = t->params();
  const Batch& probe = t->probeBatch();
  ForwardCache plain, none, cut, off;
  ASSERT_TRUE(forward(p, probe, plain).ok());
  const std::vector<std::uint8_t> zero(4, 0);
  ASSERT_TRUE(forward(p, probe, none, &zero).ok());
  EXPECT_EQ(plain.logits, none.logits);
  // Head (0, 1) cut from layer 1's queries, keys and values: layer 1 sees what it sees with the
  // head switched off (attention-only, 2 layers) — but the logits still get the head's output.
  std::vector<std::uint8_t> all(4, 0);
  all[1] = kReadQuery | kReadKey | kReadValue;
  ASSERT_TRUE(forward(p, probe, cut, &all).ok());
  HeadMask m = HeadMask::none(p.cfg);
  m.set(0, 1, true);
  auto ablated = ablateHeads(p, m);
  ASSERT_TRUE(ablated.ok());
  ASSERT_TRUE(forward(*ablated, probe, off).ok());
  const Tensor& a = cut.layers[1].attn.tensor(StageId::Weights);
  const Tensor& b = off.layers[1].attn.tensor(StageId::Weights);
  double worst = 0;
  for (std::int64_t k = 0; k < a.numel(); ++k) worst = std::max(worst, std::abs(static_cast<double>(a.ptr()[k] - b.ptr()[k])));
  EXPECT_LT(worst, 1e-5);
  EXPECT_NE(cut.logits, off.logits);
  // Values only: layer 1's pattern is untouched, its output is not.
  std::vector<std::uint8_t> values(4, 0);
  values[1] = kReadValue;
  ForwardCache v;
  ASSERT_TRUE(forward(p, probe, v, &values).ok());
  const Tensor& pw = plain.layers[1].attn.tensor(StageId::Weights);
  const Tensor& vw = v.layers[1].attn.tensor(StageId::Weights);
  EXPECT_TRUE(std::equal(pw.ptr(), pw.ptr() + pw.numel(), vw.ptr()));
  EXPECT_NE(plain.logits, v.logits);
  // A cut of the last layer's head has no later layer to act on.
  std::vector<std::uint8_t> last(4, 0);
  last[3] = kReadKey;
  ForwardCache l;
  ASSERT_TRUE(forward(p, probe, l, &last).ok());
  EXPECT_EQ(plain.logits, l.logits);
  // Wrong sizes are refused.
  const std::vector<std::uint8_t> three(3, 0);
  EXPECT_FALSE(forward(p, probe, l, &three).ok());
}

// The reference run (`mhascope train` defaults, seed 1): the circuit forms; cutting the
// previous-token head from layer 1's keys alone takes the induction heads' prefix matching away,
// from the queries alone it stays; both layer-1 heads off gives a loss above ln V.
TEST(TrainReadCuts, OnTheReferenceRunTheKeysNeedThePreviousTokenHeadAndTheQueriesDoNot) {
  TrainSettings s;
  s.steps = 700;
  auto t = Trainer::make(s);
  ASSERT_TRUE(t.ok()) << t.error().message;
  t->keepSnapshots(false);
  while (t->stepCount() < s.steps) ASSERT_TRUE(t->step().ok());
  auto e = t->evaluate();
  ASSERT_TRUE(e.ok());
  const CircuitCheck c = inductionCircuit(*e);
  ASSERT_TRUE(c.formed) << joined(circuitLesson(t->history(), t->history().size() - 1, TaskKind::Induction));
  const GptParams& p = t->params();
  ForwardCache cache;
  auto cutFrom = [&](std::uint8_t bits) {
    HeadMask m = HeadMask::none(p.cfg);
    m.setReads(c.prevLayer, c.prevHead, bits);
    auto r = evaluateAblated(p, m, t->probeBatch(), 0, cache);
    EXPECT_TRUE(r.ok());
    return r->evaluation;
  };
  const Evaluation keys = cutFrom(kReadKey), queries = cutFrom(kReadQuery);
  for (int i = 0; i < p.cfg.heads; ++i) {
    if (!isInductionHead(e->at(1, i), 1)) continue;
    EXPECT_LT(keys.at(1, i).induction, 0.25) << "head " << i;
    EXPECT_GE(queries.at(1, i).induction, kRoleThreshold) << "head " << i;
  }
  EXPECT_GT(keys.loss, e->loss + 1.0);
  HeadMask both = HeadMask::none(p.cfg);
  for (int i = 0; i < p.cfg.heads; ++i) both.set(1, i, true);
  auto lesson = ablationLesson(p, both, t->probeBatch(), cache);
  ASSERT_TRUE(lesson.ok());
  std::string text;
  for (const auto& para : *lesson) text += para + "\n";
  EXPECT_NE(text.find("confidently wrong"), std::string::npos) << text;
}
