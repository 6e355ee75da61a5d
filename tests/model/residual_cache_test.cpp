// The residual streams a model folder's forward keeps for the next one (model/residual_cache.hpp):
// the pipeline's layer L and the Model tab give the same bits with the cache as without, they
// really read it (a planted stream changes what they give), a changed folder never meets the old
// folder's streams, and the cache keeps within its bytes and sequences.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <unistd.h>
#include <vector>

#include "model/layer_source.hpp"
#include "model/model_view.hpp"
#include "model/residual_cache.hpp"
#include "model_fixtures.hpp"

namespace mhascope::model {
namespace {

const std::vector<int> kResidualIds{5, 17, 3, 9, 5, 17, 3, 22, 1, 8};

Trace traceOfLayer(const ModelFolder& m, int layer, const std::shared_ptr<ResidualCache>& cache) {
  ForwardOptions opt;
  opt.residuals = cache;
  auto la = layerAttention(m, kResidualIds, layer, opt);
  EXPECT_TRUE(la.ok()) << la.error().message;
  Trace t;
  if (la) EXPECT_TRUE(forward(la->inputs, la->weights, la->options, t).ok());
  return t;
}

bool sameStages(const Trace& a, const Trace& b) {
  for (const StageInfo& s : allStages()) {
    if (a.copyOf(s.id).data != b.copyOf(s.id).data) return false;
  }
  return true;
}

class ResidualsOf : public ::testing::TestWithParam<const char*> {};

TEST_P(ResidualsOf, TheLayersInputIsTheSameBitsWithTheCacheAndComesFromIt) {
  auto m = ModelFolder::open(kModels + GetParam());
  ASSERT_TRUE(m.ok()) << m.error().message;
  const int L = m->spec().layers;
  ASSERT_GE(L, 2);
  const Trace plain = traceOfLayer(*m, L - 1, nullptr);
  auto cache = std::make_shared<ResidualCache>();
  const Trace first = traceOfLayer(*m, L - 1, cache);  // fills the streams before layers 1 .. L-1
  EXPECT_EQ(cache->streams(), static_cast<std::size_t>(L - 1));
  const Trace again = traceOfLayer(*m, L - 1, cache);  // starts from the stream before L-1
  EXPECT_TRUE(sameStages(plain, first));
  EXPECT_TRUE(sameStages(plain, again));
  // Read, not recomputed: a planted stream before the last layer changes that layer's input.
  auto kept = cache->at(m->identity(), kResidualIds, L - 1);
  ASSERT_TRUE(kept);
  RowMatrix planted = *kept * 2.0f;
  cache->put(m->identity(), kResidualIds, L - 1, planted);
  const Trace fromPlanted = traceOfLayer(*m, L - 1, cache);
  EXPECT_NE(fromPlanted.copyOf(StageId::Query).data, plain.copyOf(StageId::Query).data);
  // Other tokens: no stream of theirs is kept, so nothing changes for them.
  ForwardOptions opt;
  opt.residuals = cache;
  std::vector<int> other = kResidualIds;
  other.back() = 2;
  auto la = layerAttention(*m, other, L - 1, opt);
  ASSERT_TRUE(la.ok());
  auto ref = layerAttention(*m, other, L - 1, ForwardOptions{});
  ASSERT_TRUE(ref.ok());
  EXPECT_EQ(la->inputs.query.data, ref->inputs.query.data);
}

TEST_P(ResidualsOf, TheModelViewIsTheSameBitsWithTheCacheAndSkipsTheKeptLayersMlps) {
  auto m = ModelFolder::open(kModels + GetParam());
  ASSERT_TRUE(m.ok()) << m.error().message;
  const int L = m->spec().layers;
  ModelViewOptions opt;
  auto plain = computeModelView(*m, kResidualIds, {}, opt);
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  auto cache = std::make_shared<ResidualCache>();
  (void)traceOfLayer(*m, L - 1, cache);  // the pipeline ran up to the last layer
  opt.residuals = cache;
  auto cached = computeModelView(*m, kResidualIds, {}, opt);
  ASSERT_TRUE(cached.ok()) << cached.error().message;
  EXPECT_EQ(cache->streams(), static_cast<std::size_t>(L)) << "the view keeps the stream after the last layer too";
  auto again = computeModelView(*m, kResidualIds, {}, opt);
  ASSERT_TRUE(again.ok());
  for (const ModelView* v : {&*cached, &*again}) {
    ASSERT_EQ(v->headViews.size(), plain->headViews.size());
    for (std::size_t i = 0; i < v->headViews.size(); ++i) {
      const HeadScores &a = v->headViews[i].scores, &b = plain->headViews[i].scores;
      EXPECT_EQ(a.prevToken, b.prevToken);
      EXPECT_EQ(a.induction, b.induction);
      EXPECT_EQ(a.entropy, b.entropy);
      EXPECT_EQ(v->headViews[i].thumbnail, plain->headViews[i].thumbnail);
    }
    // A mixture's routing is said for the layers whose MLP the kept streams stood in for: their router alone runs.
    ASSERT_EQ(v->routing.size(), plain->routing.size());
    for (std::size_t l = 0; l < v->routing.size(); ++l) {
      EXPECT_EQ(v->routing[l].k, plain->routing[l].k);
      EXPECT_EQ(v->routing[l].experts, plain->routing[l].experts);
      EXPECT_EQ(v->routing[l].weights, plain->routing[l].weights);
    }
    ASSERT_EQ(v->predictions.size(), plain->predictions.size());
    for (std::size_t t = 0; t < v->predictions.size(); ++t) {
      ASSERT_EQ(v->predictions[t].size(), plain->predictions[t].size());
      for (std::size_t k = 0; k < v->predictions[t].size(); ++k) {
        EXPECT_EQ(v->predictions[t][k].id, plain->predictions[t][k].id);
        EXPECT_EQ(v->predictions[t][k].probability, plain->predictions[t][k].probability);
      }
    }
  }
  // A planted stream after the last layer is what the predictions are made from.
  auto last = cache->at(m->identity(), kResidualIds, L);
  ASSERT_TRUE(last);
  RowMatrix planted = -*last;
  cache->put(m->identity(), kResidualIds, L, planted);
  auto fromPlanted = computeModelView(*m, kResidualIds, {}, opt);
  ASSERT_TRUE(fromPlanted.ok());
  bool differs = false;
  for (std::size_t t = 0; t < fromPlanted->predictions.size(); ++t) {
    differs = differs || fromPlanted->predictions[t][0].probability != plain->predictions[t][0].probability;
  }
  EXPECT_TRUE(differs);
}

INSTANTIATE_TEST_SUITE_P(Families, ResidualsOf, ::testing::Values("gpt2", "llama_gqa", "mistral", "qwen2", "mixtral"));

TEST(ResidualCache, AChangedConfigIsAnotherFolder) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("mhascope_residuals_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::copy(kModels + "gpt2", dir, fs::copy_options::recursive);
  auto before = ModelFolder::open(dir.string());
  ASSERT_TRUE(before.ok()) << before.error().message;
  auto cache = std::make_shared<ResidualCache>();
  (void)traceOfLayer(*before, 1, cache);
  EXPECT_TRUE(cache->deepest(before->identity(), kResidualIds, 1));
  std::ofstream(dir / "config.json", std::ios::app) << "\n";
  auto after = ModelFolder::open(dir.string());
  ASSERT_TRUE(after.ok()) << after.error().message;
  EXPECT_NE(after->identity(), before->identity());
  EXPECT_FALSE(cache->deepest(after->identity(), kResidualIds, 1));
  fs::remove_all(dir);
}

TEST(ResidualCache, KeepsWithinItsBytesAndSequencesTheNewestFirst) {
  const RowMatrix x = RowMatrix::Constant(4, 8, 1.0f);  // 128 bytes
  ResidualCache cache(3 * 128);
  cache.put("m", {1}, 1, x);
  cache.put("m", {1}, 2, x);
  cache.put("m", {2}, 1, x);
  EXPECT_EQ(cache.bytes(), 3u * 128);
  cache.put("m", {3}, 1, x);  // room from the oldest sequence ({1}), not from this one
  EXPECT_LE(cache.bytes(), 3u * 128);
  EXPECT_FALSE(cache.at("m", {1}, 1));
  EXPECT_TRUE(cache.at("m", {2}, 1));
  EXPECT_TRUE(cache.at("m", {3}, 1));
  cache.put("m", {3}, 2, x);
  cache.put("m", {3}, 3, x);  // the sequence alone fills the cache: its deepest is not added
  EXPECT_LE(cache.bytes(), 3u * 128);
  EXPECT_TRUE(cache.at("m", {3}, 2));
  auto d = cache.deepest("m", {3}, 9);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->first, cache.at("m", {3}, 3) ? 3 : 2);
  EXPECT_FALSE(cache.deepest("m", {3}, 0)) << "layer 0's input is the embedding, never kept";
  ResidualCache small(64);
  small.put("m", {1}, 1, x);  // larger than the whole cache
  EXPECT_EQ(small.bytes(), 0u);
  ResidualCache many;
  for (int s = 0; s < 10; ++s) many.put("m", {s}, 1, x);
  EXPECT_EQ(many.streams(), ResidualCache::kSequences);
}

}  // namespace
}  // namespace mhascope::model
