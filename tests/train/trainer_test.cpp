// The trainer: the loss falls on a small task, evaluation fills history and snapshots, a NaN
// step keeps the last good parameters, and the head-role probes score known patterns exactly.
#include <gtest/gtest.h>

#include <cmath>

#include "train/trainer.hpp"
#include "small_settings.hpp"

using namespace mhascope;
using namespace mhascope::train;

namespace {
TrainSettings small() { return fixtures::smallInduction(); }
}  // namespace

TEST(TrainTrainer, LossFallsAndEvaluationRecordsEverything) {
  auto t = Trainer::make(small());
  ASSERT_TRUE(t.ok()) << t.error().message;
  const Evaluation first = *t->evaluate();
  for (int i = 0; i < 60; ++i) ASSERT_TRUE(t->step().ok());
  const Evaluation last = *t->evaluate();
  EXPECT_EQ(last.step, 60);
  EXPECT_LT(last.loss, first.loss - 0.2) << first.loss << " -> " << last.loss;
  ASSERT_EQ(last.scores.size(), 4u);  // 2 layers x 2 heads
  for (const auto& s : last.scores) {
    EXPECT_GE(s.prevToken, 0.0);
    EXPECT_LE(s.prevToken, 1.0);
    EXPECT_GE(s.entropy, 0.0);
  }
  ASSERT_EQ(t->snapshots().size(), 2u);
  EXPECT_EQ(t->snapshots()[1].step, 60);
  EXPECT_EQ(t->snapshots()[1].weights.size(), 2u * 2 * 12 * 12);
  // A session takes them (one copy of the snapshots, not one here and one in its views).
  const std::vector<Snapshot> taken = t->takeSnapshots();
  ASSERT_EQ(taken.size(), 2u);
  EXPECT_EQ(taken[1].step, 60);
  EXPECT_TRUE(t->snapshots().empty());
  EXPECT_EQ(t->history().size(), 2u) << "the history stays";
  // Same seed, same run: bit-identical parameters.
  auto u = Trainer::make(small());
  for (int i = 0; i < 60; ++i) ASSERT_TRUE(u->step().ok());
  EXPECT_EQ(t->params().outW, u->params().outW);
}

TEST(TrainTrainer, NonFiniteStepKeepsTheLastGoodParameters) {
  TrainSettings s = small();
  s.adam.lr = 1e30f;
  s.adam.weightDecay = 0;  // lr × wd must stay below 1
  auto t = Trainer::make(s);
  ASSERT_TRUE(t.ok());
  Status failed = Ok{};
  std::vector<GptParams> seen;  // seen[k] = the parameters after k updates
  for (int i = 0; i < 20 && failed.ok(); ++i) {
    seen.push_back(t->params());
    auto r = t->step();
    if (!r) failed = r.error();
  }
  ASSERT_FALSE(failed.ok()) << "lr 1e30 should break within 20 steps";
  const std::string& m = failed.error().message;
  EXPECT_NE(m.find("may be too high"), std::string::npos) << m;
  EXPECT_NE(m.find("are kept"), std::string::npos) << m;
  // Back to the parameters of the last step whose loss was finite.
  ASSERT_LT(t->stepCount(), static_cast<std::int64_t>(seen.size()));
  EXPECT_EQ(t->params().outW, seen[static_cast<std::size_t>(t->stepCount())].outW);
  ForwardCache c;
  auto loss = forward(t->params(), t->task().batch(s.seed, t->stepCount(), s.batch), c);
  ASSERT_TRUE(loss.ok());
  EXPECT_TRUE(std::isfinite(loss->loss));
}

TEST(TrainTrainer, InitFromCheckpointContinuesAndRefusesOtherSizes) {
  auto t = Trainer::make(small());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(t->step().ok());
  const Checkpoint c = t->checkpoint();
  auto u = Trainer::make(small(), c);
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->stepCount(), 3);
  EXPECT_EQ(u->params().emb, t->params().emb);
  TrainSettings other = small();
  other.model.dModel = 8;
  auto bad = Trainer::make(other, c);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("d_model 16"), std::string::npos) << bad.error().message;
}

// A hand-made trace: head 0 attends to t-1 (t = 0: itself), head 1 to the key after the
// previous occurrence of its token (else to key 0).
TEST(TrainProbes, ScoresOfKnownPatterns) {
  Batch b{1, 6, {0, 1, 2, 0, 1, 2}, std::vector<int>(6, -1)};
  ForwardCache c;
  c.layers.resize(1);
  Trace& tr = c.layers[0].attn;
  tr.heads = 2;
  tr.tq = tr.tk = 6;
  tr.stages.resize(kStageCount);
  Tensor& w = tr.tensor(StageId::Weights);
  w = Tensor({1, 2, 6, 6}, {});
  for (int t = 0; t < 6; ++t) {
    w.data[static_cast<std::size_t>(t * 6 + std::max(0, t - 1))] = 1.0f;
    w.data[static_cast<std::size_t>(36 + t * 6 + (t >= 3 ? t - 2 : 0))] = 1.0f;
  }
  const auto s = headScores(c, b);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_DOUBLE_EQ(s[0].prevToken, 1.0);
  EXPECT_DOUBLE_EQ(s[0].prevTokenNew, 1.0);   // queries 1, 2: first occurrences
  EXPECT_DOUBLE_EQ(s[0].prevTokenSeen, 1.0);  // queries 3..5: repeats
  EXPECT_DOUBLE_EQ(s[0].entropy, 0.0);
  EXPECT_NEAR(s[1].firstToken, 2.0 / 5.0, 1e-12);  // queries 1, 2 look at key 0
  EXPECT_DOUBLE_EQ(s[1].prevTokenNew, 0.5);  // query 1 looks at key 0 = its previous token, query 2 does not
  EXPECT_EQ(roleOf(s[0], 0).rfind("previous-token 1.00", 0), 0u);
  HeadScores firstOnly;  // the reference run's layer 0 head 1: the previous token in the first period only
  firstOnly.prevToken = 0.48;
  firstOnly.prevTokenNew = 0.97;
  firstOnly.prevTokenSeen = 0.25;
  EXPECT_EQ(roleOf(firstOnly, 0), "previous-token at first occurrences 0.97");
}
