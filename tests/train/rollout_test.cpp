// Attention rollout (analysis/rollout.hpp; the probe through train/circuits_source.hpp): against
// PyTorch on the circuit fixtures
// (scripts/gen_circuit_fixtures.py: nn.MultiheadAttention's per-head weights, float64), the
// properties the definition promises, and the words beside the window's rollout view.
#include <gtest/gtest.h>

#include <cstdio>

#include "attention/random.hpp"
#include "io/safetensors.hpp"
#include "train/checkpoint.hpp"
#include "train/layer_model.hpp"
#include "analysis/rollout.hpp"
#include "train/circuits_source.hpp"
#include "expect_close.hpp"
#include "test_support.hpp"

using namespace mhascope;
using namespace mhascope::train;
using namespace mhascope::analysis;

namespace {

using fixtures::kFixtureDir;

Batch tokensOf(const Tensor& t) {
  Batch b;
  b.batch = 1;
  b.seq = static_cast<int>(t.dim(1));
  for (float v : t.data) b.tokens.push_back(static_cast<int>(v));
  b.targets.assign(b.tokens.size(), -1);
  return b;
}

// A 2-layer, 2-head, T = 3 causal snapshot with random rows.
Snapshot smallSnapshot() {
  Snapshot s;
  s.layers = 2;
  s.heads = 2;
  s.seq = 3;
  SplitMix64 rng(5);
  s.weights.resize(2 * 2 * 3 * 3);
  for (std::size_t m = 0; m < 4; ++m)
    for (int r = 0; r < 3; ++r) {
      float sum = 0;
      for (int k = 0; k <= r; ++k) sum += (s.weights[m * 9 + static_cast<std::size_t>(r * 3 + k)] = 0.1f + rng.uniform01());
      for (int k = 0; k <= r; ++k) s.weights[m * 9 + static_cast<std::size_t>(r * 3 + k)] /= sum;
    }
  return s;
}

}  // namespace

// sequenceSnapshot (what the window and the command line roll out) on the fixture's tokens equals
// torch's rollout and per-head paths.
TEST(Rollout, MatchesTorchThroughSequenceSnapshot) {
  for (const char* name : {"l1", "l2", "induction_small"}) {
    SCOPED_TRACE(name);
    const std::string ck = std::string(name) == "induction_small" ? "circuits/induction_small.safetensors"
                                                                   : std::string("train/") + name + ".safetensors";
    auto ckpt = loadCheckpoint(kFixtureDir + ck);
    ASSERT_TRUE(ckpt.ok()) << ckpt.error().message;
    auto ref = loadSafetensors(kFixtureDir + "circuits/" + name + "_circuits.safetensors");
    ASSERT_TRUE(ref.ok()) << ref.error().message;
    auto snap = sequenceSnapshot(ckpt->params, tokensOf(ref->at("tokens")), 64ull << 20);
    ASSERT_TRUE(snap.ok()) << snap.error().message;
    const auto rolled = attentionRollout(*snap);
    ASSERT_EQ(rolled.size(), static_cast<std::size_t>(ckpt->params.cfg.layers));
    for (std::size_t l = 0; l < rolled.size(); ++l) {
      const Tensor& want = ref->at("rollout." + std::to_string(l));
      ASSERT_EQ(rolled[l].size(), want.numel());
      train_testing::expectClose(rolled[l].data(), want.ptr(), want.numel(), 1e-5, 1e-5, "rollout." + std::to_string(l));
    }
    if (rolled.size() >= 2) {
      const Tensor& want = ref->at("path.1.0");
      const RowMatrix path = pathRollout(*snap, 0, 1, 0);
      ASSERT_EQ(path.size(), want.numel());
      train_testing::expectClose(path.data(), want.ptr(), want.numel(), 1e-5, 1e-5, "path.1.0");
    }
  }
}

TEST(Rollout, RowsSumToOneAndFullyMaskedRowsKeepTheirToken) {
  Snapshot s = smallSnapshot();
  // Layer 0's row 2 fully masked in both heads: all zeros.
  for (std::size_t m : {0u, 1u})
    for (int k = 0; k < 3; ++k) s.weights[m * 9 + static_cast<std::size_t>(6 + k)] = 0.0f;
  const auto rolled = attentionRollout(s);
  ASSERT_EQ(rolled.size(), 2u);
  EXPECT_FLOAT_EQ(rolled[0](2, 2), 1.0f);
  EXPECT_FLOAT_EQ(rolled[0](2, 0), 0.0f);
  for (const RowMatrix& m : rolled)
    for (int r = 0; r < 3; ++r) EXPECT_NEAR(m.row(r).sum(), 1.0f, 1e-6f);
  EXPECT_NEAR(rolled[1](0, 0), 1.0f, 1e-6f);  // causal: token 0 only ever reaches itself
  EXPECT_EQ(pathRollout(s, 1, 0, 0).size(), 0);  // no layer 2
  EXPECT_EQ(pathRollout(s, 0, 2, 0).size(), 0);
  EXPECT_EQ(pathRollout(s, 0, 0, 1).rows(), 3);
}

// One layer's rollout is ½ (mean A + I) with rows renormalised; the mean is the heads' average.
TEST(Rollout, OneLayerByHand) {
  Snapshot s = smallSnapshot();
  const RowMatrix mean = meanHeadWeights(s, 0);
  ASSERT_EQ(mean.rows(), 3);
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) EXPECT_NEAR(mean(r, c), 0.5f * (s.weights[static_cast<std::size_t>(r * 3 + c)] + s.weights[static_cast<std::size_t>(9 + r * 3 + c)]), 1e-7f);
  const auto rolled = attentionRollout(s);
  // Rows of mean A sum to 1, so ½ (A + I) needs no renormalising: the rollout of layer 0 is it.
  const RowMatrix want = 0.5f * (mean + RowMatrix::Identity(3, 3));
  EXPECT_TRUE(rolled[0].isApprox(want, 1e-6f));
  const RowMatrix second = 0.5f * (meanHeadWeights(s, 1) + RowMatrix::Identity(3, 3));
  EXPECT_TRUE(rolled[1].isApprox(RowMatrix(second * want), 1e-6f));
  EXPECT_EQ(meanHeadWeights(s, 2).size(), 0);
  Snapshot broken = s;
  broken.weights.pop_back();  // fewer numbers than L h T T: nothing read past the end
  EXPECT_TRUE(attentionRollout(broken).empty());
  EXPECT_EQ(pathRollout(broken, 0, 0, 0).size(), 0);
}

TEST(Rollout, StrongestSourcesAndTheWords) {
  RowMatrix m(2, 4);
  m << 0.1f, 0.4f, 0.4f, 0.1f,
       0.05f, 0.15f, 0.2f, 0.6f;
  const auto top = strongestSources(m, 1, 2);
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[0].first, 3);
  EXPECT_EQ(top[1].first, 2);
  const auto tie = strongestSources(m, 0, 2);
  EXPECT_EQ(tie[0].first, 1);  // ties: the earlier token first
  EXPECT_EQ(tie[1].first, 2);
  EXPECT_TRUE(strongestSources(m, 2, 2).empty());

  // The words name the rollout's three strongest sources of the row and the raw layer's strongest key.
  const Snapshot s = smallSnapshot();
  const auto rolled = attentionRollout(s);
  const RowMatrix raw = meanHeadWeights(s, 1);
  const std::vector<std::string> labels = {"a", "b", "c"};
  const std::string text = rolloutText(rolled, raw, labels, 2);
  for (const auto& [j, share] : strongestSources(rolled.back(), 2, 3)) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "token %d '%s' %.3f", j, labels[static_cast<std::size_t>(j)].c_str(), static_cast<double>(share));
    EXPECT_NE(text.find(buf), std::string::npos) << buf << " in " << text;
  }
  const auto rawTop = strongestSources(raw, 2, 1);
  char buf[96];
  std::snprintf(buf, sizeof buf, "raw weights (mean over heads) put most on token %d", rawTop[0].first);
  EXPECT_NE(text.find(buf), std::string::npos) << text;
  EXPECT_NE(text.find("after all 2 layers"), std::string::npos) << text;
  EXPECT_EQ(rolloutText(rolled, raw, labels, 3), "");
  EXPECT_EQ(rolloutText({}, raw, labels, 0), "");
}
