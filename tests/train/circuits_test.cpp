// QK / OV circuits, composition, copying and rollout against PyTorch (fixtures by
// scripts/gen_circuit_fixtures.py, torch 1.13, float64 from the float32 checkpoints), plus the
// properties the definitions promise, and the induction circuit on trained runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "attention/random.hpp"
#include "io/safetensors.hpp"
#include "train/checkpoint.hpp"
#include "analysis/circuit_texts.hpp"
#include "analysis/circuits.hpp"
#include "analysis/rollout.hpp"
#include "train/circuits_source.hpp"
#include "expect_close.hpp"
#include "test_support.hpp"
#include "train/model.hpp"
#include "train/probes.hpp"
#include "train/trainer.hpp"

using namespace mhascope;
using namespace mhascope::train;
using namespace mhascope::analysis;

namespace {

using fixtures::kFixtureDir;

using train_testing::expectClose;

void expectMatrix(const RowMatrix& ours, const Tensor& want, double atol, const std::string& what) {
  ASSERT_EQ(ours.size(), want.numel()) << what;
  expectClose(ours.data(), want.ptr(), want.numel(), atol, 1e-5, what);
}

std::string key(const char* name, int a, int b) { return std::string(name) + "." + std::to_string(a) + "." + std::to_string(b); }

void checkCase(const std::string& ckptPath, const std::string& refName) {
  SCOPED_TRACE(refName);
  auto ckpt = loadCheckpoint(kFixtureDir + ckptPath);
  ASSERT_TRUE(ckpt.ok()) << ckpt.error().message;
  auto ref = loadSafetensors(kFixtureDir + "circuits/" + refName + "_circuits.safetensors");
  ASSERT_TRUE(ref.ok()) << ref.error().message;
  const TensorMap& r = *ref;
  const GptParams& p = ckpt->params;
  const Circuits c = computeCircuits(p);
  ASSERT_EQ(c.perHead.size(), static_cast<std::size_t>(p.cfg.layers * p.cfg.heads));
  ASSERT_TRUE(c.tokenSpace);
  EXPECT_EQ(c.positions, p.cfg.seqLen);  // learned positions: the whole pos.weight table
  for (const HeadCircuit& h : c.perHead) {
    expectMatrix(h.qkPositions, r.at(key("qk_positions", h.layer, h.head)), 1e-4, key("qk_positions", h.layer, h.head));
    expectMatrix(h.qk, r.at(key("qk", h.layer, h.head)), 1e-5, key("qk", h.layer, h.head));
    expectMatrix(h.ov, r.at(key("ov", h.layer, h.head)), 1e-5, key("ov", h.layer, h.head));
    expectMatrix(h.qkTokens, r.at(key("qk_tokens", h.layer, h.head)), 1e-4, key("qk_tokens", h.layer, h.head));
    expectMatrix(h.ovTokens, r.at(key("ov_tokens", h.layer, h.head)), 1e-4, key("ov_tokens", h.layer, h.head));
    // Ours from the d_k x d_k matrix, torch's from the whole V x V one.
    EXPECT_EQ(h.eigenvalues.size(), static_cast<std::size_t>(c.dk));
    EXPECT_NEAR(h.copying, r.at("copying").data[static_cast<std::size_t>(h.layer * c.heads + h.head)], 1e-5)
        << "copying of layer " << h.layer << " head " << h.head;
  }
  if (p.cfg.layers == 1) {
    EXPECT_TRUE(c.pairs.empty());
  } else {
    const Tensor& comp = r.at("composition");
    ASSERT_EQ(static_cast<std::int64_t>(c.pairs.size()), comp.dim(0));
    for (std::size_t i = 0; i < c.pairs.size(); ++i) {
      EXPECT_NEAR(c.pairs[i].q, comp.data[3 * i], 1e-6) << "pair " << i;
      EXPECT_NEAR(c.pairs[i].k, comp.data[3 * i + 1], 1e-6) << "pair " << i;
      EXPECT_NEAR(c.pairs[i].v, comp.data[3 * i + 2], 1e-6) << "pair " << i;
    }
  }
  // Two independent samplers (SplitMix64, 200 pairs; torch, 4000): their standard errors are
  // below 0.01 at these sizes.
  EXPECT_NEAR(c.baseline, r.at("baseline").data[0], 0.03);

  // Rollout of our forward's weights on the same tokens as torch's nn.MultiheadAttention.
  Batch b;
  b.batch = 1;
  b.seq = static_cast<int>(r.at("tokens").dim(1));
  for (float v : r.at("tokens").data) b.tokens.push_back(static_cast<int>(v));
  b.targets.assign(b.tokens.size(), -1);
  ForwardCache cache;
  ASSERT_TRUE(forward(p, b, cache).ok());
  const Snapshot s = takeSnapshot(cache, 0);
  const std::vector<RowMatrix> rolled = attentionRollout(s);
  ASSERT_EQ(rolled.size(), static_cast<std::size_t>(p.cfg.layers));
  for (int l = 0; l < p.cfg.layers; ++l) {
    expectMatrix(rolled[static_cast<std::size_t>(l)], r.at("rollout." + std::to_string(l)), 1e-5, "rollout." + std::to_string(l));
  }
  if (p.cfg.layers >= 2) {
    for (int a = 0; a < p.cfg.heads; ++a)
      for (int hb = 0; hb < p.cfg.heads; ++hb) expectMatrix(pathRollout(s, 0, a, hb), r.at(key("path", a, hb)), 1e-5, key("path", a, hb));
  }
}

}  // namespace

TEST(Circuits, MatchTorchOneLayer) { checkCase("train/l1.safetensors", "l1"); }
TEST(Circuits, MatchTorchTwoLayers) { checkCase("train/l2.safetensors", "l2"); }
TEST(Circuits, MatchTorchTrainedInductionModel) { checkCase("circuits/induction_small.safetensors", "induction_small"); }

// A silent transpose or a wrong head block would still give d x d matrices: pin the definitions on
// hand-made weights where each block is recognisable.
// A model with RoPE or ALiBi has no position table: no position map, and nothing read past an empty table.
TEST(Circuits, NoPositionMapWithoutLearnedPositions) {
  for (TrainPositions pos : {TrainPositions::Rope, TrainPositions::Alibi}) {
    TrainSettings st;
    st.model.positions = pos;
    st.steps = 1;
    auto t = Trainer::make(st);
    ASSERT_TRUE(t.ok()) << t.error().message;
    const Circuits c = computeCircuits(t->params());
    EXPECT_EQ(c.positions, 0) << trainPositionsName(pos);
    for (const HeadCircuit& h : c.perHead) EXPECT_EQ(h.qkPositions.size(), 0) << trainPositionsName(pos);
  }
}

// previousPositionRows against maps whose rows' largest visible cell is known.
TEST(Circuits, PreviousPositionRowsCountsTheSubDiagonalWinners) {
  RowMatrix m = RowMatrix::Zero(5, 5);
  for (int t = 1; t < 5; ++t) m(t, t - 1) = 1.0f;
  EXPECT_EQ(previousPositionRows(m), 4);
  m(3, 3) = 2.0f;  // row 3 prefers itself; the cell above the diagonal (row 1, key 4) never counts
  m(1, 4) = 9.0f;
  EXPECT_EQ(previousPositionRows(m), 3);
  EXPECT_EQ(previousPositionRows(RowMatrix::Zero(5, 5)), 1);  // ties go to the first key: only row 1's key 0
}

TEST(Circuits, HeadBlocksAreRowsOfInProjAndColumnsOfOutProj) {
  GptConfig cfg;
  cfg.vocab = 5;
  cfg.seqLen = 4;
  cfg.dModel = 4;
  cfg.heads = 2;
  cfg.layers = 1;
  GptParams p = initParams(cfg, 3);
  const RowMatrix& w = p.blocks[0].inW;  // (3d, d)
  const RowMatrix wq1 = w.middleRows(2, 2), wk1 = w.middleRows(4 + 2, 2), wv1 = w.middleRows(8 + 2, 2);
  const RowMatrix wo1 = p.blocks[0].outW.middleCols(2, 2);
  // The checkpoint's source (ParamsLayers) hands these over as y = x W: the same matrices.
  const Circuits c = computeCircuits(p, 0.1);
  const RowMatrix qk = c.at(0, 1).qk, ov = c.at(0, 1).ov;
  EXPECT_TRUE(qk.isApprox(RowMatrix(wq1.transpose() * wk1), 1e-5f));
  EXPECT_TRUE(ov.isApprox(RowMatrix(wv1.transpose() * wo1.transpose()), 1e-5f));
  // The score of query x on key y is x QK yT, as the engine computes it (before 1/sqrt(d_k)).
  Eigen::RowVectorXf x(4), y(4);
  x << 0.3f, -1.0f, 0.5f, 2.0f;
  y << -0.7f, 0.2f, 1.5f, 0.1f;
  const float direct = (x * wq1.transpose()).dot(y * wk1.transpose());
  EXPECT_NEAR((x * qk * y.transpose())(0, 0), direct, 1e-5f);
  // A head writes x OV = (x W_vT) W_oT.
  EXPECT_TRUE((x * ov).isApprox(RowMatrix((x * wv1.transpose()) * wo1.transpose()), 1e-5f));
}

TEST(Circuits, CompositionScoresOfKnownMatrices) {
  // OV^a = identity-like, QK^b = a single entry: K reads exactly through the transpose.
  RowMatrix ovA = RowMatrix::Zero(3, 3), qkB = RowMatrix::Zero(3, 3), ovB = RowMatrix::Zero(3, 3);
  ovA(0, 1) = 2.0f;     // a moves direction 0 into direction 1
  qkB(2, 1) = 3.0f;     // b's keys read direction 1
  ovB(2, 0) = 1.0f;     // b's values read direction 2: nothing a wrote
  const Composition c = compose(ovA, qkB, ovB);
  EXPECT_NEAR(c.k, 1.0, 1e-12);  // QK^b OV^aT = 6 e_2 e_0T: norm 6 = 2 * 3
  EXPECT_NEAR(c.q, 0.0, 1e-12);  // OV^a QK^b = 0: a writes direction 1, b's queries read 2
  EXPECT_NEAR(c.v, 0.0, 1e-12);
  // Zero matrices (a head that was switched off) score 0, never NaN.
  const Composition z = compose(RowMatrix::Zero(3, 3), qkB, ovB);
  EXPECT_EQ(z.q, 0.0);
  EXPECT_EQ(z.k, 0.0);
  EXPECT_EQ(z.v, 0.0);
}

TEST(Circuits, BaselineIsSeededAndNearTheGaussianValue) {
  EXPECT_EQ(compositionBaseline(64, 32), compositionBaseline(64, 32));
  // Full-rank d x d Gaussian matrices: ||XY||_F / (||X|| ||Y||) -> 1/sqrt(d) for large d.
  EXPECT_NEAR(compositionBaseline(64, 64, 50), 1.0 / 8.0, 0.01);
  // E ratio² = 1/d whatever the rank; rank 1 is |cos| of two random directions, mean sqrt(2/pi)/sqrt(d).
  EXPECT_NEAR(compositionBaseline(64, 32, 50), 1.0 / 8.0, 0.01);
  EXPECT_NEAR(compositionBaseline(64, 1, 200), std::sqrt(2.0 / 3.141592653589793) / 8.0, 0.01);
  EXPECT_EQ(compositionBaseline(0, 1), 0.0);
}

TEST(Circuits, CopyingScoreOfAPositiveAndANegativeCopier) {
  GptConfig cfg;
  cfg.vocab = 6;
  cfg.seqLen = 4;
  cfg.dModel = 6;
  cfg.heads = 1;
  cfg.layers = 1;
  GptParams p = zeroParams(cfg);
  p.emb = RowMatrix::Identity(6, 6);
  p.outW = RowMatrix::Identity(6, 6);  // U = I
  for (int sign : {1, -1}) {
    // W_v = I, W_o = sign * I: E OV U = sign * I.
    p.blocks[0].inW.middleRows(12, 6) = RowMatrix::Identity(6, 6);
    p.blocks[0].outW = static_cast<float>(sign) * RowMatrix::Identity(6, 6);
    const Circuits c = computeCircuits(p);
    EXPECT_NEAR(c.perHead[0].copying, sign, 1e-9);
    EXPECT_TRUE(c.perHead[0].ovTokens.isApprox(static_cast<float>(sign) * RowMatrix::Identity(6, 6)));
    // The diagonal check: every token raises its own logit most (sign 1), none does (sign -1).
    EXPECT_DOUBLE_EQ(c.perHead[0].diagonalTop, sign > 0 ? 1.0 : 0.0);
  }
  {
    // A head that raises token 2 whatever it attends to: E OV U = 1 e_2ᵀ (OV = W_vᵀ W_oᵀ with W_v = I, so
    // out_proj's row 2 is all ones). One eigenvalue, 1: copying score 1, yet it copies nothing; only
    // token 2's own row has its diagonal on top, so the diagonal check gives 1/V.
    GptParams fixed = p;
    fixed.blocks[0].inW.middleRows(12, 6) = RowMatrix::Identity(6, 6);
    fixed.blocks[0].outW.setZero();
    fixed.blocks[0].outW.row(2).setOnes();
    const Circuits c = computeCircuits(fixed);
    RowMatrix expected = RowMatrix::Zero(6, 6);
    expected.col(2).setOnes();
    EXPECT_TRUE(c.perHead[0].ovTokens.isApprox(expected)) << c.perHead[0].ovTokens;
    EXPECT_NEAR(c.perHead[0].copying, 1.0, 1e-9);
    EXPECT_DOUBLE_EQ(c.perHead[0].diagonalTop, 1.0 / 6.0);
    // The words say what the score cannot tell and give the diagonal's share.
    const std::string words = copyingText(c);
    EXPECT_NE(words.find("consistent with copying, not proof of it"), std::string::npos) << words;
    EXPECT_NE(words.find("16.7 % of the 6 tokens"), std::string::npos) << words;
  }
  // A pure rotation (eigenvalues ±i) moves tokens without copying: score 0.
  RowMatrix rot = RowMatrix::Zero(6, 6);
  for (int i = 0; i < 6; i += 2) {
    rot(i, i + 1) = 1.0f;
    rot(i + 1, i) = -1.0f;
  }
  p.blocks[0].outW = rot;
  EXPECT_NEAR(computeCircuits(p).perHead[0].copying, 0.0, 1e-9);
  p.blocks[0].outW.setZero();
  EXPECT_EQ(computeCircuits(p).perHead[0].copying, 0.0);  // a dead head: 0, not NaN
}

// The words beside each view name the numbers compute gives: the strongest pair of each kind and
// its score, the baseline, the highest and lowest copying heads.
TEST(Circuits, ExplanationsNameTheNumbers) {
  auto ckpt = loadCheckpoint(kFixtureDir + "circuits/induction_small.safetensors");
  ASSERT_TRUE(ckpt.ok()) << ckpt.error().message;
  const Circuits c = computeCircuits(ckpt->params);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", c.baseline);
  const std::string baseline = buf;
  for (char kind : {'Q', 'K', 'V'}) {
    SCOPED_TRACE(std::string(1, kind));
    const Composition* best = nullptr;
    for (const Composition& p : c.pairs) {
      const double s = kind == 'Q' ? p.q : kind == 'K' ? p.k : p.v;
      if (!best || s > (kind == 'Q' ? best->q : kind == 'K' ? best->k : best->v)) best = &p;
    }
    ASSERT_NE(best, nullptr);
    EXPECT_EQ(strongestPair(c, kind), best);
    std::snprintf(buf, sizeof buf, "%.3f", kind == 'Q' ? best->q : kind == 'K' ? best->k : best->v);
    const std::string text = compositionText(c, kind);
    const std::string pair = "layer " + std::to_string(best->fromLayer) + " head " + std::to_string(best->fromHead) +
                             " → layer " + std::to_string(best->toLayer) + " head " + std::to_string(best->toHead);
    EXPECT_NE(text.find(std::string("Strongest ") + kind + "-composition: " + pair + ", " + buf), std::string::npos) << text;
    EXPECT_NE(text.find("baseline " + baseline), std::string::npos) << text;
  }
  // Every pair's strongest read, strongest first.
  const auto reads = readsByStrength(c);
  ASSERT_EQ(reads.size(), c.pairs.size());
  for (std::size_t i = 1; i < reads.size(); ++i) EXPECT_GE(reads[i - 1].score, reads[i].score);
  const auto hi = std::max_element(c.perHead.begin(), c.perHead.end(),
                                   [](const HeadCircuit& a, const HeadCircuit& b) { return a.copying < b.copying; });
  const auto lo = std::min_element(c.perHead.begin(), c.perHead.end(),
                                   [](const HeadCircuit& a, const HeadCircuit& b) { return a.copying < b.copying; });
  const std::string copying = copyingText(c);
  std::snprintf(buf, sizeof buf, "%.3f", hi->copying);
  EXPECT_NE(copying.find("highest layer " + std::to_string(hi->layer) + " head " + std::to_string(hi->head) + " " + buf),
            std::string::npos) << copying;
  std::snprintf(buf, sizeof buf, "%.3f", lo->copying);
  EXPECT_NE(copying.find("lowest layer " + std::to_string(lo->layer) + " head " + std::to_string(lo->head) + " " + buf),
            std::string::npos) << copying;
  std::snprintf(buf, sizeof buf, "%.3f", c.at(1, 0).copying);
  EXPECT_EQ(headCircuitText(c, 1, 0).rfind(std::string("layer 1 head 0: copying score ") + buf, 0), 0u);
  EXPECT_EQ(headCircuitText(c, 2, 0), "");
  // The position map's words name its count of previous-position rows.
  for (const HeadCircuit& h : c.perHead) {
    const std::string words = headCircuitText(c, h.layer, h.head);
    const std::string want = "key t − 1 is the highest visible key of " + std::to_string(previousPositionRows(h.qkPositions)) +
                             " of the " + std::to_string(c.positions - 1) + " query rows";
    EXPECT_NE(words.find(want), std::string::npos) << words;
  }
  // One layer: no pairs, said so.
  auto one = loadCheckpoint(kFixtureDir + "train/l1.safetensors");
  ASSERT_TRUE(one.ok());
  const Circuits c1 = computeCircuits(one->params);
  EXPECT_EQ(strongestPair(c1, 'K'), nullptr);
  EXPECT_NE(compositionText(c1, 'K').find("No pairs"), std::string::npos);
}

// A baseline handed in (the window computes it once per size) is used as it is; the rest is the same.
TEST(Circuits, GivenBaselineIsKept) {
  auto ckpt = loadCheckpoint(kFixtureDir + "train/l2.safetensors");
  ASSERT_TRUE(ckpt.ok());
  const Circuits a = computeCircuits(ckpt->params);
  const Circuits b = computeCircuits(ckpt->params, 0.5);
  EXPECT_EQ(b.baseline, 0.5);
  EXPECT_EQ(a.baseline, compositionBaseline(a.dModel, a.dk));
  ASSERT_EQ(a.pairs.size(), b.pairs.size());
  for (std::size_t i = 0; i < a.pairs.size(); ++i) EXPECT_EQ(a.pairs[i].k, b.pairs[i].k);
}

// Shapes the definitions cannot read (K/V heads shared by groups of query heads) are refused in one line.
TEST(Circuits, RefusesProjectionsOfOtherShapes) {
  auto ckpt = loadCheckpoint(kFixtureDir + "train/l2.safetensors");
  ASSERT_TRUE(ckpt.ok());
  EXPECT_TRUE(checkCircuitsInput(ckpt->params).ok());
  GptParams p = ckpt->params;
  const int d = p.cfg.dModel;
  p.blocks[1].inW = RowMatrix::Zero(2 * d, d);  // W_q of d rows, W_k and W_v of d/2 each
  const Status s = checkCircuitsInput(p);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("layer 1 has " + std::to_string(2 * d)), std::string::npos) << s.error().message;
  EXPECT_EQ(s.error().message.find('\n'), std::string::npos);
}

// The behaviour the definitions are for, on the induction task with `mhascope train`'s defaults
// (seeds 1 and 2; docs/circuits.md has seeds 1-5 by hand): the strongest K-composition pair is the
// previous-token head -> an induction head, its K above its Q and V, and the induction heads copy
// more than the previous-token head.
TEST(Circuits, TrainedInductionRunsComposeThroughKeys) {
  for (std::uint64_t seed : {1u, 2u}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    TrainSettings st;
    st.seed = seed;
    st.steps = 800;  // the circuit forms at steps 375-450 for these seeds
    auto t = Trainer::make(st);
    ASSERT_TRUE(t.ok()) << t.error().message;
    Trainer& tr = *t;
    tr.keepSnapshots(false);
    while (tr.stepCount() < st.steps) ASSERT_TRUE(tr.step().ok());
    auto ev = tr.evaluate();
    ASSERT_TRUE(ev.ok()) << ev.error().message;
    const Evaluation& e = *ev;
    const Circuits c = computeCircuits(tr.params());
    const auto best = std::max_element(c.pairs.begin(), c.pairs.end(),
                                       [](const Composition& a, const Composition& b) { return a.k < b.k; });
    ASSERT_NE(best, c.pairs.end());
    const HeadScores& from = e.at(best->fromLayer, best->fromHead);
    const HeadScores& to = e.at(best->toLayer, best->toHead);
    EXPECT_GE(from.prevTokenNew, kRoleThreshold) << "layer " << best->fromLayer << " head " << best->fromHead;
    EXPECT_TRUE(isInductionHead(to, best->toLayer)) << "layer " << best->toLayer << " head " << best->toHead;
    // The previous-token head finds its key by position: in P QK Pᵀ key t − 1 scores highest in the
    // rows where first occurrences fall (t < the longest period; later positions always repeat a
    // token, and those rows are not trained to it).
    const RowMatrix& pos = c.at(best->fromLayer, best->fromHead).qkPositions;
    ASSERT_EQ(pos.rows(), st.task.seq);
    const int k = st.task.periodMax;
    EXPECT_GE(previousPositionRows(pos.topLeftCorner(k, k)), k - 2) << "layer " << best->fromLayer << " head " << best->fromHead;
    EXPECT_GT(best->k, best->q);
    EXPECT_GT(best->k, best->v);
    EXPECT_GT(best->k, c.baseline);
    for (int h = 0; h < c.heads; ++h) {
      if (isInductionHead(e.at(1, h), 1)) {
        EXPECT_GT(c.at(1, h).copying, c.at(best->fromLayer, best->fromHead).copying) << "layer 1 head " << h;
      }
    }
  }
}
