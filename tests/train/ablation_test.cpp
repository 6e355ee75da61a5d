// Head ablation: zeroing a head's W_o columns is the same as zeroing its output before W_o, it
// changes nothing upstream, it changes later layers, and on a trained induction model switching
// off the circuit's heads costs the probe loss the circuit had won.
#include <gtest/gtest.h>

#include "train/ablation.hpp"
#include "train/trainer.hpp"
#include "small_settings.hpp"

using namespace mhascope;
using namespace mhascope::train;

namespace {
TrainSettings small() { return fixtures::smallInduction(); }
}  // namespace

TEST(TrainAblation, ZeroedColumnsEqualAZeroedHeadOutputBeforeWo) {
  auto t = Trainer::make(small());
  ASSERT_TRUE(t.ok()) << t.error().message;
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(t->step().ok());
  const GptParams& p = t->params();
  HeadMask mask = HeadMask::none(p.cfg);
  mask.set(1, 0, true);
  auto ablated = ablateHeads(p, mask);
  ASSERT_TRUE(ablated.ok()) << ablated.error().message;

  ForwardCache full, cut;
  ASSERT_TRUE(forward(p, t->probeBatch(), full).ok());
  ASSERT_TRUE(forward(*ablated, t->probeBatch(), cut).ok());
  // Layer 0 is upstream of the cut: identical attention.
  const Tensor& w0 = full.layers[0].attn.tensor(StageId::Weights);
  const Tensor& w0cut = cut.layers[0].attn.tensor(StageId::Weights);
  ASSERT_EQ(w0.numel(), w0cut.numel());
  for (std::int64_t k = 0; k < w0.numel(); ++k) ASSERT_EQ(w0.ptr()[k], w0cut.ptr()[k]);
  // Layer 1's output = (concat with head 0's columns zeroed) W_o^T + b, from the full run's concat.
  const Trace& tr = full.layers[1].attn;
  const Tensor& concat = tr.tensor(StageId::Concat);   // (B, T, d)
  const Tensor& outCut = cut.layers[1].attn.tensor(StageId::Output);
  const int d = p.cfg.dModel, dk = d / p.cfg.heads;
  const std::int64_t rows = concat.numel() / d;
  const auto& blk = p.blocks[1];
  double worst = 0;
  for (std::int64_t r = 0; r < rows; ++r) {
    for (int o = 0; o < d; ++o) {
      double acc = blk.outB(0, o);
      for (int c = dk; c < d; ++c) acc += static_cast<double>(concat.ptr()[r * d + c]) * blk.outW(o, c);
      worst = std::max(worst, std::abs(acc - outCut.ptr()[r * d + o]));
    }
  }
  EXPECT_LT(worst, 1e-4);
  // …and layer 1's own attention pattern is unchanged (its inputs are), but the logits are not.
  EXPECT_NE(full.logits, cut.logits);
}

TEST(TrainAblation, AnUpstreamHeadChangesTheNextLayersPattern) {
  auto t = Trainer::make(small());
  ASSERT_TRUE(t.ok());
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(t->step().ok());
  HeadMask mask = HeadMask::none(t->params().cfg);
  EXPECT_FALSE(mask.any());
  mask.set(0, 1, true);
  EXPECT_TRUE(mask.any());
  auto ablated = ablateHeads(t->params(), mask);
  ASSERT_TRUE(ablated.ok());
  ForwardCache c1, c2;
  auto a = evaluateOnProbe(t->params(), t->probeBatch(), 20, c1);
  auto b = evaluateOnProbe(*ablated, t->probeBatch(), 20, c2);
  ASSERT_TRUE(a.ok() && b.ok());
  const std::size_t perLayer = a->snapshot.weights.size() / 2;
  // Layer 0 identical, layer 1 different.
  EXPECT_TRUE(std::equal(a->snapshot.weights.begin(), a->snapshot.weights.begin() + static_cast<std::ptrdiff_t>(perLayer),
                         b->snapshot.weights.begin()));
  EXPECT_FALSE(std::equal(a->snapshot.weights.begin() + static_cast<std::ptrdiff_t>(perLayer), a->snapshot.weights.end(),
                          b->snapshot.weights.begin() + static_cast<std::ptrdiff_t>(perLayer)));
  EXPECT_NE(a->evaluation.loss, b->evaluation.loss);
}

TEST(TrainAblation, NoHeadsOffIsTheSameModelAndTheEvaluationMatchesTheTrainers) {
  auto t = Trainer::make(small());
  ASSERT_TRUE(t.ok());
  const Evaluation e = *t->evaluate();
  auto same = ablateHeads(t->params(), HeadMask::none(t->params().cfg));
  ASSERT_TRUE(same.ok());
  ForwardCache c;
  auto r = evaluateOnProbe(*same, t->probeBatch(), 0, c);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->evaluation.loss, e.loss);
  EXPECT_EQ(r->evaluation.accuracy, e.accuracy);
  EXPECT_EQ(r->snapshot.weights, t->snapshots().back().weights);
}

TEST(TrainAblation, AMaskOfOtherSizesIsRefusedWithTheSizes) {
  auto t = Trainer::make(small());
  ASSERT_TRUE(t.ok());
  GptConfig other = t->params().cfg;
  other.heads = 4;
  auto r = ablateHeads(t->params(), HeadMask::none(other));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("2 layers x 4 heads"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("2 layers x 2 heads"), std::string::npos) << r.error().message;
}
