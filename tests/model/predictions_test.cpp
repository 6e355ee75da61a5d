// Next-token predictions and the logit lens (core/model/predictions.hpp): top-k order and ties,
// the lens on a fixture folder against the forward's own logits, and its cancel.
#include "model/predictions.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>
#include "model_fixtures.hpp"

namespace mhascope::model {
namespace {

TEST(Predictions, TopKIsOrderedWithTiesToTheSmallerId) {
  const std::vector<float> logits = {1.0f, 3.0f, 3.0f, 0.0f};
  const std::vector<Candidate> top = topK(logits.data(), 4, 3);
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0].id, 1);
  EXPECT_EQ(top[1].id, 2);
  EXPECT_EQ(top[2].id, 0);
  EXPECT_EQ(top[0].logit, 3.0f);
  const double z = std::exp(-2.0) + 2.0 + std::exp(-3.0);  // sum of exp(logit - 3)
  EXPECT_NEAR(top[0].probability, 1.0 / z, 1e-15);
  EXPECT_NEAR(top[2].probability, std::exp(-2.0) / z, 1e-15);
  EXPECT_EQ(topK(logits.data(), 4, 9).size(), 4u);  // k clamped to V
  EXPECT_TRUE(topK(logits.data(), 4, 0).empty());
}

TEST(Predictions, TheLastLayerOfTheLensIsTheModelsOwnPrediction) {
  for (const char* folder : {"gpt2", "llama_gqa"}) {
    SCOPED_TRACE(folder);
    auto model = ModelFolder::open(kModels + folder);
    ASSERT_TRUE(model.ok()) << model.error().message;
    const std::vector<int> ids = {3, 14, 15, 92, 65, 35, 89, 79, 3, 14};
    ForwardOptions fo;
    fo.keepAttention = false;
    auto fr = runForward(*model, ids, fo);
    ASSERT_TRUE(fr.ok()) << fr.error().message;
    const auto predictions = predictNext(fr->logits, 5);
    ASSERT_EQ(predictions.size(), ids.size());
    auto lens = logitLens(*model, *fr);
    ASSERT_TRUE(lens.ok()) << lens.error().message;
    const int L = model->spec().layers;
    ASSERT_EQ(lens->layers, L);
    ASSERT_EQ(lens->positions, static_cast<int>(ids.size()));
    for (int t = 0; t < lens->positions; ++t) {
      EXPECT_EQ(lens->finalTop[static_cast<std::size_t>(t)], predictions[static_cast<std::size_t>(t)][0].id);
      const LensCell& last = lens->at(L - 1, t);
      EXPECT_EQ(last.top.id, predictions[static_cast<std::size_t>(t)][0].id);
      EXPECT_NEAR(last.top.probability, predictions[static_cast<std::size_t>(t)][0].probability, 1e-6);
      EXPECT_EQ(last.finalTopProbability, last.top.probability);
      for (int l = 0; l < L; ++l) {
        // The final top-1 is never more likely than a layer's own top-1.
        EXPECT_LE(lens->at(l, t).finalTopProbability, lens->at(l, t).top.probability);
      }
    }
  }
}

TEST(Predictions, TheLensStopsWhenItsProgressSaysSo) {
  auto model = ModelFolder::open(kModels + "gpt2");
  ASSERT_TRUE(model.ok()) << model.error().message;
  auto fr = runForward(*model, {1, 2, 3});
  ASSERT_TRUE(fr.ok()) << fr.error().message;
  std::vector<int> seen;
  auto lens = logitLens(*model, *fr, [&](int done) {
    seen.push_back(done);
    return false;
  });
  ASSERT_FALSE(lens.ok());
  EXPECT_EQ(lens.error().message, kForwardCancelled);
  EXPECT_EQ(seen, std::vector<int>{1});
  ForwardOptions noHidden;
  noHidden.keepHidden = false;
  auto bare = runForward(*model, {1, 2, 3}, noHidden);
  ASSERT_TRUE(bare.ok());
  auto refused = logitLens(*model, *bare);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("keepHidden"), std::string::npos) << refused.error().message;
}

}  // namespace
}  // namespace mhascope::model
