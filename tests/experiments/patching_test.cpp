// Activation patching and direct logit attribution (core/experiments) against the PyTorch reference of
// scripts/gen_experiment_fixtures.py (tests/fixtures/reference/experiments.json) on the GPT-2 and the Llama (GQA)
// fixture folders and the trained folder, whose repeated-letter prompt must point at its induction head; and the
// forward's hooks (model/forward.hpp) they stand on.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "experiments/attribution.hpp"
#include "experiments/patching.hpp"
#include "model/forward.hpp"

namespace mhascope::experiments {
namespace {

const std::string kFixtures = MHASCOPE_FIXTURES_DIR;

const nlohmann::json& reference() {
  static const nlohmann::json j = [] {
    std::ifstream f(kFixtures + "/reference/experiments.json");
    return nlohmann::json::parse(f);
  }();
  return j;
}

const nlohmann::json& caseNamed(const std::string& name) {
  for (const auto& c : reference()["cases"]) {
    if (c["name"] == name) return c;
  }
  throw std::runtime_error("no case " + name);
}

model::ModelFolder open(const std::string& folder) {
  auto m = model::ModelFolder::open(kFixtures + "/models/" + folder);
  if (!m) throw std::runtime_error(m.error().message);
  return std::move(*m);
}

PatchSite siteOf(const std::string& s) {
  for (PatchSite p : {PatchSite::Resid, PatchSite::Attn, PatchSite::Mlp, PatchSite::Head, PatchSite::HeadPosition,
                      PatchSite::Query, PatchSite::Key, PatchSite::Value, PatchSite::Pattern}) {
    if (s == siteName(p)) return p;
  }
  throw std::runtime_error("unknown site " + s);
}

PatchRequest requestOf(const nlohmann::json& c) {
  PatchRequest r;
  r.clean = c["clean_tokens"].get<std::vector<int>>();
  r.corrupted = c["corrupted_tokens"].get<std::vector<int>>();
  r.answer.right = c["right"];
  r.answer.wrong = c["wrong"];
  return r;
}

// float32 forwards on both sides, a few layers deep (the forward tests' tolerance, on a logit difference)
constexpr double kAtol = 1e-4, kRtol = 1e-4;

class MatchesReference : public ::testing::TestWithParam<const char*> {};

TEST_P(MatchesReference, EverySweep) {
  const nlohmann::json& c = caseNamed(GetParam());
  const model::ModelFolder model = open(c["folder"]);
  for (const auto& s : c["sweeps"]) {
    PatchRequest r = requestOf(c);
    r.site = siteOf(s["site"]);
    r.direction = s["direction"] == "denoise" ? PatchDirection::Denoise : PatchDirection::Noise;
    r.answer.metric = s["metric"] == "prob" ? Metric::Probability : Metric::LogitDiff;
    auto g = patchSweep(model, r);
    ASSERT_TRUE(g.ok()) << g.error().message;
    const std::string what = std::string(GetParam()) + " " + s["site"].get<std::string>() + " " +
                             s["direction"].get<std::string>() + " " + s["metric"].get<std::string>();
    ASSERT_EQ(g->rows, s["rows"].get<int>()) << what;
    ASSERT_EQ(g->cols, s["cols"].get<int>()) << what;
    const auto& m = c[s["metric"].get<std::string>()];
    EXPECT_NEAR(g->cleanMetric, m["clean"].get<double>(), kAtol) << what;
    EXPECT_NEAR(g->corruptedMetric, m["corrupted"].get<double>(), kAtol) << what;
    const std::vector<double> want = s["values"].get<std::vector<double>>();
    double worst = 0;
    int bad = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
      const double err = std::abs(g->metric[i] - want[i]);
      worst = std::max(worst, err);
      if (err > kAtol + kRtol * std::abs(want[i]) && bad++ < 3) {
        ADD_FAILURE() << what << " cell " << i << ": " << g->metric[i] << " vs the reference's " << want[i];
      }
      const double r = (want[i] - m["corrupted"].get<double>()) / (m["clean"].get<double>() - m["corrupted"].get<double>());
      EXPECT_NEAR(g->restored[i], r, 1e-3) << what << " cell " << i;
    }
    EXPECT_EQ(bad, 0) << what << ": " << bad << " cells off, max difference " << worst;
  }
}

TEST_P(MatchesReference, DirectLogitAttribution) {
  const nlohmann::json& c = caseNamed(GetParam());
  const nlohmann::json& d = c["dla"];
  const model::ModelFolder model = open(c["folder"]);
  auto a = attributeLogits(model, c["clean_tokens"].get<std::vector<int>>(), c["right"], c["wrong"]);
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_NEAR(a->modelLogitDiff, d["logit_diff"].get<double>(), kAtol);
  EXPECT_NEAR(a->sum, a->modelLogitDiff, 1e-4) << "the terms do not add up to the model's own logit difference";
  EXPECT_NEAR(a->accumulated.back(), a->sum, 1e-9);
  EXPECT_NEAR(a->tokenEmbedding, d["token_embedding"].get<double>(), kAtol);
  EXPECT_NEAR(a->positionEmbedding, d["position_embedding"].get<double>(), kAtol);
  EXPECT_NEAR(a->finalNormBias, d["final_norm_bias"].get<double>(), kAtol);
  for (int l = 0; l < a->layers; ++l) {
    EXPECT_NEAR(a->outputBias[static_cast<std::size_t>(l)], d["output_bias"][l].get<double>(), kAtol) << l;
    EXPECT_NEAR(a->mlp[static_cast<std::size_t>(l)], d["mlp"][l].get<double>(), kAtol) << l;
    for (int i = 0; i < a->heads; ++i) EXPECT_NEAR(a->headAt(l, i), d["head"][l][i].get<double>(), kAtol) << l << "." << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, MatchesReference, ::testing::Values("gpt2", "llama_gqa", "trained_induction"));

// The trained folder's induction head (the ablation's, in its reference.json) on "qwertyuiqwertyui" against
// "abcdfgihqwertyui": what completes 'q' after the last 'i' is head 1.1 reading the key that head 0.1 (the
// previous-token head) marked.
TEST(TrainedModel, PatchingAndAttributionPointAtTheInductionHead) {
  std::ifstream f(kFixtures + "/models/reference/trained/reference.json");
  const nlohmann::json trained = nlohmann::json::parse(f);
  const int inductionLayer = trained["ablation"]["induction_head"][0], induction = trained["ablation"]["induction_head"][1];
  const int previous = trained["ablation"]["previous_token_head"][1];
  ASSERT_EQ(trained["ablation"]["previous_token_head"][0].get<int>(), 0);
  const nlohmann::json& c = caseNamed("trained_induction");
  const model::ModelFolder model = open("trained");

  PatchRequest r = requestOf(c);
  r.site = PatchSite::Head;
  auto g = patchSweep(model, r);
  ASSERT_TRUE(g.ok()) << g.error().message;
  ASSERT_GT(g->cleanMetric, 5.0);
  ASSERT_LT(g->corruptedMetric, -5.0);
  for (int i = 0; i < g->cols; ++i) {
    if (i != induction) EXPECT_GT(g->at(inductionLayer, induction), g->at(inductionLayer, i) + 0.5);
    if (i != previous) EXPECT_GT(g->at(0, previous), g->at(0, i) + 0.5);
  }
  EXPECT_GT(g->at(inductionLayer, induction), 0.8) << "the induction head's output alone restores the answer";

  r.site = PatchSite::Key;  // the induction head's keys carry it (K-composition with the previous-token head)
  auto k = patchSweep(model, r);
  ASSERT_TRUE(k.ok()) << k.error().message;
  EXPECT_GT(k->at(inductionLayer, induction), 0.8);
  EXPECT_LT(std::abs(k->at(inductionLayer, 1 - induction)), 0.2);

  auto a = attributeLogits(model, r.clean, r.answer.right, r.answer.wrong);
  ASSERT_TRUE(a.ok()) << a.error().message;
  for (int l = 0; l < a->layers; ++l) {
    for (int i = 0; i < a->heads; ++i) {
      if (l != inductionLayer || i != induction) EXPECT_GT(a->headAt(inductionLayer, induction), 5 * std::abs(a->headAt(l, i)));
    }
  }
}

// A hook that only reads leaves every logit as the forward without one computes it, to float rounding: the hooked
// path runs the weighted sums and the merge as passes of their own, and adds the MLP's output as a table of its own
// (a sum in another order).
TEST(ForwardHooks, ReadingChangesNothing) {
  for (const char* folder : {"gpt2", "llama_gqa", "trained"}) {
    const model::ModelFolder model = open(folder);
    const std::vector<int> ids = {3, 14, 15, 92, 65, 35, 89};
    model::ForwardOptions plain;
    auto a = model::runForward(model, ids, plain);
    ASSERT_TRUE(a.ok()) << a.error().message;
    model::ForwardOptions hooked;
    int calls = 0;
    hooked.hook = [&](const model::HookSite&, MatrixMap v) { calls += v.size() > 0; };
    auto b = model::runForward(model, ids, hooked);
    ASSERT_TRUE(b.ok()) << b.error().message;
    EXPECT_EQ(calls, 8 * model.spec().layers) << folder << ": every site of every layer";
    // Every stage recorded (the engine's other path: head outputs merged from their own table) reads the same.
    hooked.recordScores = true;
    hooked.traceLayer = 0;
    auto c = model::runForward(model, ids, hooked);
    ASSERT_TRUE(c.ok()) << c.error().message;
    for (std::size_t i = 0; i < a->logits.data.size(); ++i) {
      ASSERT_NEAR(a->logits.data[i], b->logits.data[i], 1e-5 * std::max(1.0f, std::abs(a->logits.data[i]))) << folder << " logit " << i;
      ASSERT_NEAR(a->logits.data[i], c->logits.data[i], 1e-5 * std::max(1.0f, std::abs(a->logits.data[i]))) << folder << " logit " << i;
    }
  }
}

// Zeroing one head's output through the hook is the ablation: its direct term leaves the logits, exactly what
// patching a zero into HeadOut means.
TEST(ForwardHooks, ReplacingAHeadsOutputChangesTheLogits) {
  const model::ModelFolder model = open("gpt2");
  const std::vector<int> ids = {3, 14, 15, 92, 65};
  auto a = model::runForward(model, ids, {});
  model::ForwardOptions zero;
  const Eigen::Index dk = model.spec().dk();
  zero.hook = [&](const model::HookSite& s, MatrixMap v) {
    if (s.point == model::HookPoint::HeadOut && s.layer == 1) v.middleCols(2 * dk, dk).setZero();
  };
  auto b = model::runForward(model, ids, zero);
  ASSERT_TRUE(a.ok() && b.ok());
  double moved = 0;
  for (std::size_t i = 0; i < a->logits.data.size(); ++i) moved = std::max(moved, double(std::abs(a->logits.data[i] - b->logits.data[i])));
  EXPECT_GT(moved, 1e-3);
  zero.recordScores = true;  // the recording path replaces the same numbers
  zero.traceLayer = 1;
  auto c = model::runForward(model, ids, zero);
  ASSERT_TRUE(c.ok());
  for (std::size_t i = 0; i < b->logits.data.size(); ++i) ASSERT_NEAR(b->logits.data[i], c->logits.data[i], 1e-5) << i;
}

TEST(PatchSweep, DifferentLengthsNameBothCounts) {
  const model::ModelFolder model = open("gpt2");
  PatchRequest r;
  r.clean = {1, 2, 3};
  r.corrupted = {1, 2, 3, 4};
  r.answer = {5, 6, Metric::LogitDiff};
  auto g = patchSweep(model, r);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().message.find("clean text has 3 tokens and the corrupted text 4"), std::string::npos) << g.error().message;
  EXPECT_NE(g.error().message.find("same count"), std::string::npos);
}

TEST(PatchSweep, BadAnswersAndBudgetAreRefused) {
  const model::ModelFolder model = open("gpt2");
  PatchRequest r;
  r.clean = {1, 2, 3};
  r.corrupted = {1, 7, 3};
  r.answer = {100, 6, Metric::LogitDiff};
  auto g = patchSweep(model, r);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().message.find("right answer's token id 100 is outside the vocabulary of 100"), std::string::npos)
      << g.error().message;
  r.answer = {5, 5, Metric::LogitDiff};
  EXPECT_FALSE(patchSweep(model, r).ok());
  r.answer = {5, 6, Metric::LogitDiff};
  r.memoryBudgetBytes = 1000;
  g = patchSweep(model, r);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().message.find("more than the memory budget"), std::string::npos) << g.error().message;
}

TEST(PatchSweep, ProgressCountsAndCancelStops) {
  const model::ModelFolder model = open("gpt2");
  PatchRequest r;
  r.clean = {1, 2, 3, 4};
  r.corrupted = {1, 9, 3, 4};
  r.answer = {5, 6, Metric::LogitDiff};
  r.site = PatchSite::Resid;
  std::vector<int> seen;
  auto g = patchSweep(model, r, [&](int done, int total) {
    seen.push_back(done);
    EXPECT_EQ(total, 2 * 4);
    return true;
  });
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_EQ(seen, (std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8}));
  // Position 0 is the same token in both runs: patching it restores nothing; the changed position 1 before layer 0
  // is the whole difference: it restores everything.
  EXPECT_NEAR(g->at(0, 0), 0.0, 1e-6);
  EXPECT_NEAR(g->at(0, 1), 1.0, 1e-5);
  int calls = 0;
  auto stopped = patchSweep(model, r, [&](int, int) { return ++calls < 3; });
  ASSERT_FALSE(stopped.ok());
  EXPECT_EQ(stopped.error().message, model::kForwardCancelled);
  EXPECT_EQ(calls, 3);
}

// The sites shared out over threads give the very numbers of one thread, and a cancel still stops the sweep.
TEST(PatchSweep, ThreadsChangeNothingButTheTime) {
  const nlohmann::json& c = caseNamed("llama_gqa");
  const model::ModelFolder model = open("llama_gqa");
  PatchRequest r = requestOf(c);
  r.site = PatchSite::HeadPosition;
  auto one = patchSweep(model, r);
  r.threads = 2;
  int calls = 0, last = 0;
  bool ordered = true;
  auto two = patchSweep(model, r, [&](int done, int) {
    ++calls;
    ordered = ordered && done == last + 1;
    last = done;
    return true;
  });
  ASSERT_TRUE(one.ok() && two.ok());
  EXPECT_EQ(one->metric, two->metric);
  EXPECT_EQ(calls, one->rows * one->cols);
  EXPECT_TRUE(ordered) << "the count of sites done goes up by one per call";
  int seen = 0;
  auto stopped = patchSweep(model, r, [&](int, int) { return ++seen < 5; });
  ASSERT_FALSE(stopped.ok());
  EXPECT_EQ(stopped.error().message, model::kForwardCancelled);
  EXPECT_EQ(seen, 5);
}

TEST(Attribution, PostNormFamiliesAreRefusedWithTheReason) {
  const model::ModelFolder model = open("olmo2");
  auto a = attributeLogits(model, {1, 2, 3}, 4, 5);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.error().message.find("norms each sublayer's output"), std::string::npos) << a.error().message;
}

}  // namespace
}  // namespace mhascope::experiments
