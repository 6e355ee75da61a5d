// The QK score decomposition (core/experiments/score_decomposition.hpp): its terms sum to the forward's own score on
// every family it accepts, equal the PyTorch reference of scripts/gen_experiment_fixtures.py
// (tests/fixtures/reference/score_decomposition.json) cell by cell, and on the trained folder's induction head the
// key side's largest head term is the previous-token head; the requests it must refuse, each with its values.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "experiments/attribution.hpp"
#include "experiments/score_decomposition.hpp"
#include "model/forward.hpp"

namespace mhascope::experiments {
namespace {

const std::string kFixtures = MHASCOPE_FIXTURES_DIR;

model::ModelFolder open(const std::string& folder) {
  auto m = model::ModelFolder::open(kFixtures + "/models/" + folder);
  if (!m) throw std::runtime_error(m.error().message);
  return std::move(*m);
}

// Read once and kept: a range-for over a member of a returned temporary would outlive it.
const nlohmann::json& reference() {
  static const nlohmann::json j = [] {
    std::ifstream f(kFixtures + "/reference/score_decomposition.json");
    return nlohmann::json::parse(f);
  }();
  return j;
}

ScoreRequest requestOf(const nlohmann::json& c) {
  ScoreRequest r;
  r.layer = c["layer"];
  r.head = c["head"];
  r.query = c["query"];
  r.key = c["key"];
  r.versus = c["versus"];
  return r;
}

// Relative to the score's size: the forward is float32, the decomposition double.
void expectSumsToScore(const ScoreDecomposition& d, const std::string& what) {
  double magnitude = 1e-3;
  for (double v : d.table) magnitude = std::max(magnitude, std::abs(v));
  EXPECT_NEAR(d.sum, d.modelValue, 1e-5 * std::max({std::abs(d.modelValue), magnitude, 1.0})) << what;
}

TEST(ScoreDecomposition, EqualsTheReferenceCellByCellAndSumsToTheModelsScore) {
  for (const auto& c : reference()["cases"]) {
    const std::string name = c["name"];
    SCOPED_TRACE(name);
    const model::ModelFolder m = open(c["folder"]);
    auto d = decomposeScore(m, c["tokens"].get<std::vector<int>>(), requestOf(c));
    ASSERT_TRUE(d) << d.error().message;
    const auto qn = c["query_terms"].get<std::vector<std::string>>(), kn = c["key_terms"].get<std::vector<std::string>>();
    ASSERT_EQ(d->queryTerms.size(), qn.size());
    ASSERT_EQ(d->keyTerms.size(), kn.size());
    for (std::size_t i = 0; i < qn.size(); ++i) EXPECT_EQ(sideTermName(d->queryTerms[i], true), qn[i]);
    for (std::size_t j = 0; j < kn.size(); ++j) EXPECT_EQ(sideTermName(d->keyTerms[j], false), kn[j]);
    const auto table = c["table"].get<std::vector<double>>();
    ASSERT_EQ(d->table.size(), table.size());
    double worst = 0;
    std::size_t at = 0;
    for (std::size_t i = 0; i < table.size(); ++i) {
      const double diff = std::abs(d->table[i] - table[i]);
      if (diff > worst) worst = diff, at = i;
    }
    EXPECT_LT(worst, 1e-4) << "cell " << at << ": " << d->table[at] << " vs the reference's " << table[at];
    EXPECT_NEAR(d->modelValue, c["model_value"].get<double>(), 1e-4);
    expectSumsToScore(*d, name);
    EXPECT_LT(d->streamGap, 1e-4);
  }
}

TEST(ScoreDecomposition, SumsToTheModelsScoreOnEveryFamilyItAccepts) {
  const std::vector<int> tokens = {5, 17, 42, 3, 99, 8, 61, 17, 42, 23};
  // q/k norm per head (Qwen3) and over the whole projection is refused only with post-norm blocks (OLMo 2);
  // biases (Qwen2, gpt-oss), scaled RoPE (Llama 3.1), mixtures (Mixtral, Qwen3-MoE), wider heads, fused projections.
  for (const char* folder : {"gpt2", "gpt2_f16", "llama_gqa", "llama_wide", "llama3_scaled", "mistral", "mixtral", "phi3",
                             "qwen2", "qwen3", "qwen3_moe", "smollm3", "gpt_oss"}) {
    SCOPED_TRACE(folder);
    const model::ModelFolder m = open(folder);
    const int L = m.spec().layers, h = m.spec().heads;
    for (int layer : {0, L - 1}) {
      ScoreRequest r{layer, h - 1, 9, 7, -1};
      auto d = decomposeScore(m, tokens, r);
      ASSERT_TRUE(d) << d.error().message;
      expectSumsToScore(*d, std::string(folder) + " layer " + std::to_string(layer));
      EXPECT_GT(d->weight, 0.0);
      r.versus = 9;
      auto v = decomposeScore(m, tokens, r);
      ASSERT_TRUE(v) << v.error().message;
      expectSumsToScore(*v, std::string(folder) + " versus");
      EXPECT_NEAR(v->modelValue, d->modelScore - v->modelScoreVersus, 1e-9);
    }
  }
}

TEST(ScoreDecomposition, TheInductionHeadsKeySideNamesThePreviousTokenHead) {
  const model::ModelFolder m = open("trained");
  // "qwertyuiqwertyui": at the second 't' (12) the induction head 1.1 looks at 'y' (5), the token after the first 't'.
  const std::vector<int> tokens = {80, 86, 68, 81, 83, 88, 84, 72, 80, 86, 68, 81, 83, 88, 84, 72};
  // The previous-token head: the layer-0 head whose weight on the token just before is largest on average.
  auto run = model::runForward(m, tokens);
  ASSERT_TRUE(run) << run.error().message;
  const Tensor& A = run->attention[0];  // (h, T, T)
  const int h = m.spec().heads;
  const std::int64_t T = static_cast<std::int64_t>(tokens.size());
  int previous = -1;
  double best = 0;
  for (int i = 0; i < h; ++i) {
    double w = 0;
    for (std::int64_t t = 1; t < T; ++t) w += A.data[static_cast<std::size_t>((i * T + t) * T + t - 1)];
    if (w / static_cast<double>(T - 1) > best) best = w / static_cast<double>(T - 1), previous = i;
  }
  ASSERT_GT(best, 0.5) << "the trained folder has no previous-token head in layer 0";
  for (std::int64_t q = 9; q < T; ++q) {
    SCOPED_TRACE("query " + std::to_string(q));
    auto d = decomposeScore(m, tokens, {1, 1, q, q - 7, -1});
    ASSERT_TRUE(d) << d.error().message;
    expectSumsToScore(*d, "trained");
    std::ptrdiff_t largest = -1;
    for (std::size_t j = 0; j < d->keyTerms.size(); ++j) {
      if (d->keyTerms[j].writer.kind != WriterKind::Head || d->keyTerms[j].kind != SideKind::Writer) continue;
      if (largest < 0 || std::abs(d->keyTotals[j]) > std::abs(d->keyTotals[static_cast<std::size_t>(largest)])) {
        largest = static_cast<std::ptrdiff_t>(j);
      }
    }
    ASSERT_GE(largest, 0);
    EXPECT_EQ(d->keyTerms[static_cast<std::size_t>(largest)].writer.head, previous);
    EXPECT_GT(d->keyTotals[static_cast<std::size_t>(largest)], 0.0);
    const std::string words = describeScore(*d, {});
    EXPECT_NE(words.find("key side's largest head term: head 0." + std::to_string(previous) + " (K-composition"),
              std::string::npos)
        << words;
  }
}

TEST(ScoreDecomposition, TheSentenceNamesTheTokensAndTheLargestCell) {
  const model::ModelFolder m = open("gpt2");
  const std::vector<int> tokens = {1, 2, 3, 4, 5};
  auto d = decomposeScore(m, tokens, {1, 0, 4, 1, -1});
  ASSERT_TRUE(d) << d.error().message;
  const auto top = largestCells(*d, 3);
  ASSERT_EQ(top.size(), 3u);
  EXPECT_GE(std::abs(d->at(top[0].first, top[0].second)), std::abs(d->at(top[1].first, top[1].second)));
  const std::string words = describeScore(*d, {"a", "b", "c", "d", "e"});
  EXPECT_NE(words.find("head 1.0 attends from «e» (4) to «b» (1)"), std::string::npos) << words;
  EXPECT_NE(words.find(sideTermName(d->keyTerms[top[0].second], false)), std::string::npos) << words;
}

TEST(ScoreDecomposition, RefusesWhatItCannotSplitNamingTheValues) {
  const std::vector<int> tokens = {5, 17, 42, 3, 99, 8, 61, 17, 42, 23};
  const model::ModelFolder gpt2 = open("gpt2");
  auto message = [&](const model::ModelFolder& m, ScoreRequest r) {
    auto d = decomposeScore(m, tokens, r);
    return d ? std::string("(accepted)") : d.error().message;
  };
  EXPECT_NE(message(gpt2, {2, 0, 5, 1, -1}).find("layer 2 is outside 0 .. 1"), std::string::npos);
  EXPECT_NE(message(gpt2, {1, 4, 5, 1, -1}).find("head 4 is outside 0 .. 3"), std::string::npos);
  EXPECT_NE(message(gpt2, {1, 0, 10, 1, -1}).find("query position 10 is outside 0 .. 9"), std::string::npos);
  EXPECT_NE(message(gpt2, {1, 0, 3, 6, -1}).find("key position 6 is after the query position 3"), std::string::npos);
  EXPECT_NE(message(gpt2, {1, 0, 3, 1, 4}).find("versus key position 4 is after"), std::string::npos);
  EXPECT_NE(message(gpt2, {1, 0, 3, 1, 1}).find("the versus key 1 is the key itself"), std::string::npos);
  EXPECT_NE(message(open("mistral"), {1, 0, 8, 2, -1}).find("outside layer 1's sliding window of 4"), std::string::npos);
  EXPECT_NE(message(open("olmo2"), {1, 0, 3, 1, -1}).find("norms each sublayer's output"), std::string::npos);
  EXPECT_NE(message(open("gemma2"), {1, 0, 3, 1, -1}).find("norms each sublayer's output"), std::string::npos);
  EXPECT_NE(message(open("deepseek_v2"), {1, 0, 3, 1, -1}).find("latent attention"), std::string::npos);
  EXPECT_EQ(decomposeScore(gpt2, {}, {0, 0, 0, 0, -1}).error().message, "enter at least one token");
  auto small = decomposeScore(gpt2, tokens, {1, 0, 3, 1, -1}, 1, 1024);
  ASSERT_FALSE(small);
  EXPECT_NE(small.error().message.find("the stream's terms at 2 positions take"), std::string::npos) << small.error().message;
}

}  // namespace
}  // namespace mhascope::experiments
