// Path patching (core/experiments/path_patching.hpp) against the PyTorch reference of
// scripts/gen_experiment_fixtures.py (tests/fixtures/reference/path_patching.json) on the GPT-2 and the Llama (GQA)
// fixture folders and the trained folder, whose previous-token head must reach its induction head through the keys;
// and every value a user can get wrong, refused with that value named.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "experiments/path_patching.hpp"
#include "experiments/sweep_steps.hpp"
#include "model/forward.hpp"

namespace mhascope::experiments {
namespace {

const std::string kFixtures = MHASCOPE_FIXTURES_DIR;

const nlohmann::json& reference() {
  static const nlohmann::json j = [] {
    std::ifstream f(kFixtures + "/reference/path_patching.json");
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

PathInput inputOf(const std::string& s) { return s == "q" ? PathInput::Query : (s == "k" ? PathInput::Key : PathInput::Value); }
HeadRef headOf(const nlohmann::json& j) { return {j[0].get<int>(), j[1].get<int>()}; }

PathRequest requestOf(const nlohmann::json& c) {
  PathRequest r;
  r.clean = c["clean_tokens"].get<std::vector<int>>();
  r.corrupted = c["corrupted_tokens"].get<std::vector<int>>();
  r.answer = {c["right"].get<int>(), c["wrong"].get<int>(), Metric::LogitDiff};
  return r;
}

// float32 forwards on both sides, a few layers deep (activation patching's tolerance)
constexpr double kAtol = 1e-4, kRtol = 1e-4;

class PathMatchesReference : public ::testing::TestWithParam<const char*> {};

TEST_P(PathMatchesReference, EveryEdge) {
  const nlohmann::json& c = caseNamed(GetParam());
  const model::ModelFolder model = open(c["folder"]);
  for (const auto& e : c["edges"]) {
    PathRequest r = requestOf(c);
    r.sender = headOf(e["sender"]);
    r.receiver = headOf(e["receiver"]);
    r.into = inputOf(e["into"]);
    r.direction = e["direction"] == "noise" ? PatchDirection::Noise : PatchDirection::Denoise;
    auto g = pathPatch(model, r);
    ASSERT_TRUE(g.ok()) << g.error().message;
    const std::string what = std::string(GetParam()) + " " + e.dump();
    ASSERT_EQ(g->rows * g->cols, 1) << what;
    EXPECT_EQ(g->edges, 1);
    EXPECT_NEAR(g->cleanMetric, c["clean"].get<double>(), kAtol) << what;
    EXPECT_NEAR(g->corruptedMetric, c["corrupted"].get<double>(), kAtol) << what;
    const double want = e["value"].get<double>();
    EXPECT_NEAR(g->metric[0], want, kAtol + kRtol * std::abs(want)) << what;
    EXPECT_NEAR(g->restored[0], (want - c["corrupted"].get<double>()) / (c["clean"].get<double>() - c["corrupted"].get<double>()), 1e-3) << what;
  }
}

TEST_P(PathMatchesReference, EverySweep) {
  const nlohmann::json& c = caseNamed(GetParam());
  const model::ModelFolder model = open(c["folder"]);
  for (const auto& s : c["sweeps"]) {
    PathRequest r = requestOf(c);
    r.sweep = s["sweep"] == "senders" ? PathSweep::Senders : PathSweep::Receivers;
    (r.sweep == PathSweep::Senders ? r.receiver : r.sender) = headOf(s["fixed"]);
    r.into = inputOf(s["into"]);
    r.threads = 2;  // the numbers do not depend on it
    auto g = pathPatch(model, r);
    ASSERT_TRUE(g.ok()) << g.error().message;
    const std::string what = std::string(GetParam()) + " " + s["sweep"].get<std::string>() + " " + s["fixed"].dump() + " " +
                             s["into"].get<std::string>();
    ASSERT_EQ(g->rows, s["rows"].get<int>()) << what;
    ASSERT_EQ(g->cols, s["cols"].get<int>()) << what;
    int edges = 0, bad = 0;
    for (std::size_t i = 0; i < s["values"].size(); ++i) {
      const auto& v = s["values"][i];
      if (v.is_null()) {
        EXPECT_TRUE(std::isnan(g->metric[i]) && std::isnan(g->restored[i])) << what << " cell " << i << " is no edge";
        continue;
      }
      ++edges;
      const double want = v.get<double>();
      if (std::abs(g->metric[i] - want) > kAtol + kRtol * std::abs(want) && bad++ < 3) {
        ADD_FAILURE() << what << " cell " << i << ": " << g->metric[i] << " vs the reference's " << want;
      }
    }
    EXPECT_EQ(g->edges, edges) << what;
    EXPECT_EQ(bad, 0) << what;
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, PathMatchesReference, ::testing::Values("gpt2", "llama_gqa", "trained_induction"));

// The trained folder's previous-token head 0.1 → induction head 1.1 on "qwertyuiqwertyui" against
// "abcdfgihqwertyui". Through the keys the edge carries nearly all of the answer: at each key position of the second
// period head 0.1 wrote the token before it, which differs in the first period of the two texts, and the induction
// head finds the key whose previous token is the query's token. Through the queries it carries nothing: the metric
// reads the last position only, whose query is the induction head's at 'i', and head 0.1's output there (the
// previous token 'u') is the same in both runs, so the sender's change at that row is zero. Through the values next
// to nothing: the induction head's values hold the attended token itself, which head 0.1 does not write.
TEST(TrainedModel, PreviousTokenHeadReachesTheInductionHeadThroughItsKeys) {
  std::ifstream f(kFixtures + "/models/reference/trained/reference.json");
  const nlohmann::json trained = nlohmann::json::parse(f);
  const HeadRef previous{trained["ablation"]["previous_token_head"][0].get<int>(), trained["ablation"]["previous_token_head"][1].get<int>()};
  const HeadRef induction{trained["ablation"]["induction_head"][0].get<int>(), trained["ablation"]["induction_head"][1].get<int>()};
  const model::ModelFolder model = open("trained");
  PathRequest r = requestOf(caseNamed("trained_induction"));
  r.sender = previous;
  r.receiver = induction;
  double through[3] = {0, 0, 0};
  for (PathInput in : {PathInput::Query, PathInput::Key, PathInput::Value}) {
    r.into = in;
    auto g = pathPatch(model, r);
    ASSERT_TRUE(g.ok()) << g.error().message;
    through[static_cast<int>(in)] = g->at(0, 0);
  }
  EXPECT_GT(through[1], 0.85) << "via K";
  EXPECT_LT(std::abs(through[0]), 1e-4) << "via Q: the sender's output at the last row is the same in both runs";
  EXPECT_LT(std::abs(through[2]), 0.05) << "via V";
  // The other head of the induction layer gains next to nothing from the same sender through its keys.
  r.into = PathInput::Key;
  r.receiver = {induction.layer, 1 - induction.head};
  auto other = pathPatch(model, r);
  ASSERT_TRUE(other.ok()) << other.error().message;
  EXPECT_LT(std::abs(other->at(0, 0)), 0.1);
}

// Two identical texts: the sender's change is zero, so the edge leaves the run as it is (the metric the clean one) and
// there is nothing to restore (NaN), in both directions.
TEST(PathPatching, IdenticalTextsLeaveTheRunAsItIs) {
  const model::ModelFolder model = open("gpt2");
  PathRequest r;
  r.clean = {3, 14, 15, 92, 65};
  r.corrupted = r.clean;
  r.answer = {5, 6, Metric::LogitDiff};
  r.sender = {0, 1};
  r.receiver = {1, 2};
  for (PatchDirection d : {PatchDirection::Denoise, PatchDirection::Noise}) {
    for (PathInput in : {PathInput::Query, PathInput::Key, PathInput::Value}) {
      r.direction = d;
      r.into = in;
      auto g = pathPatch(model, r);
      ASSERT_TRUE(g.ok()) << g.error().message;
      EXPECT_NEAR(g->metric[0], g->cleanMetric, 1e-6) << pathInputName(in);
      EXPECT_TRUE(std::isnan(g->restored[0])) << "nothing to restore";
    }
  }
}

TEST(PathPatching, EveryBadValueIsNamed) {
  const model::ModelFolder model = open("gpt2");  // 2 layers of 4 heads
  ASSERT_EQ(model.spec().layers, 2);
  PathRequest r;
  r.clean = {1, 2, 3};
  r.corrupted = {1, 7, 3};
  r.answer = {5, 6, Metric::LogitDiff};
  auto refused = [&](const std::string& want) {
    auto g = pathPatch(model, r);
    ASSERT_FALSE(g.ok()) << "accepted, wanted: " << want;
    EXPECT_NE(g.error().message.find(want), std::string::npos) << g.error().message;
  };
  r.sender = {1, 0};
  r.receiver = {1, 2};
  refused("the sender 1.0 must be in an earlier layer than the receiver 1.2");
  r.sender = {0, 4};
  refused("the sender 0.4: head 4 is outside the layer's 4 heads (0 .. 3)");
  r.sender = {0, 1};
  r.receiver = {2, 0};
  refused("the receiver 2.0: layer 2 is outside the model's 2 layers (0 .. 1)");
  r.receiver = {1, -1};
  refused("head -1 is outside");
  r.sweep = PathSweep::Senders;
  r.receiver = {0, 1};
  refused("the receiver 0.1 is in layer 0: no earlier head can send to it");
  r.sweep = PathSweep::Receivers;
  r.sender = {1, 1};
  refused("the sender 1.1 is in the last layer (1)");
  r.sweep = PathSweep::Edge;
  r.sender = {0, 1};
  r.receiver = {1, 1};
  r.corrupted = {1, 2};
  refused("the clean text has 3 tokens and the corrupted text 2");
  r.corrupted = {1, 7, 3};
  r.memoryBudgetBytes = 1000;
  refused("more than the memory budget");
}

TEST(PathPatching, KvReceiversAreKvHeads) {
  const model::ModelFolder model = open("llama_gqa");
  const int N = model.spec().kvHeads;
  ASSERT_LT(N, model.spec().heads);
  PathRequest r;
  r.clean = {1, 2, 3};
  r.corrupted = {1, 7, 3};
  r.answer = {5, 6, Metric::LogitDiff};
  r.sender = {0, 0};
  r.receiver = {1, N};
  r.into = PathInput::Key;
  auto g = pathPatch(model, r);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().message.find("head " + std::to_string(N) + " is outside the layer's " + std::to_string(N) + " K/V heads"),
            std::string::npos) << g.error().message;
  r.into = PathInput::Query;  // a query head of that number exists
  EXPECT_TRUE(pathPatch(model, r).ok());
}

TEST(PathPatching, PostNormFamiliesAreRefusedWithTheReason) {
  const model::ModelFolder model = open("olmo2");
  PathRequest r;
  r.clean = {1, 2, 3};
  r.corrupted = {1, 7, 3};
  r.answer = {5, 6, Metric::LogitDiff};
  r.sender = {0, 0};
  r.receiver = {1, 0};
  auto g = pathPatch(model, r);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().message.find("norms each sublayer's output before adding it"), std::string::npos) << g.error().message;
}

TEST(PathPatching, ProgressCountsEdgesAndCancelStops) {
  const model::ModelFolder model = open("gpt2");
  PathRequest r;
  r.clean = {1, 2, 3, 4};
  r.corrupted = {1, 9, 3, 4};
  r.answer = {5, 6, Metric::LogitDiff};
  r.sweep = PathSweep::Senders;
  r.receiver = {1, 3};
  std::vector<int> seen;
  auto g = pathPatch(model, r, [&](int done, int total) {
    seen.push_back(done);
    EXPECT_EQ(total, 4) << "the 4 heads of layer 0 send to layer 1";
    return true;
  });
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_EQ(seen, (std::vector<int>{1, 2, 3, 4}));
  EXPECT_EQ(g->edges, 4);
  int calls = 0;
  auto stopped = pathPatch(model, r, [&](int, int) { return ++calls < 2; });
  ASSERT_FALSE(stopped.ok());
  EXPECT_EQ(stopped.error().message, model::kForwardCancelled);
  EXPECT_EQ(calls, 2);
}

}  // namespace
}  // namespace mhascope::experiments

namespace mhascope::experiments {
namespace {

// The sweeps' stacked forward (sweep_steps.hpp, ForwardState::batch): each sequence of a stack ends where its forward
// alone ends — its own causal attention, window and RoPE positions from 0, its own experts, nothing leaking between
// sequences — on every family whose sweeps stack (a latent-attention model runs one sequence at a time).
TEST(StackedForward, EachSequenceEndsAsItsForwardAlone) {
  for (const char* folder : {"gpt2", "llama_gqa", "llama3_scaled", "mistral", "mixtral", "phi3", "qwen2", "qwen3",
                             "qwen3_moe", "smollm3", "gemma2", "gemma3", "olmo2", "gpt_oss", "trained"}) {
    const model::ModelFolder m = open(folder);
    const std::vector<int> a = {3, 14, 15, 92, 65, 35}, b = {2, 71, 82, 81, 8, 28};
    const detail::PartialRunner ra{m, a, nullptr, detail::sweepForwardOptions(kDefaultMemoryBudget)};
    const detail::PartialRunner rb{m, b, nullptr, detail::sweepForwardOptions(kDefaultMemoryBudget)};
    std::vector<RowMatrix> sa(static_cast<std::size_t>(m.spec().layers)), sb(sa.size());
    auto endA = ra.run(0, RowMatrix(), detail::keepAt(model::HookPoint::ResidPre, sa));
    auto endB = rb.run(0, RowMatrix(), detail::keepAt(model::HookPoint::ResidPre, sb));
    ASSERT_TRUE(endA.ok() && endB.ok()) << folder;
    ASSERT_GT(detail::cellsPerForward(m.spec(), 6, 2), 1) << folder;
    RowMatrix xs(2 * sa[1].rows(), sa[1].cols());
    xs << sa[1], sb[1];
    auto both = ra.runBatch(1, xs, 2, {});
    ASSERT_TRUE(both.ok()) << folder << ": " << both.error().message;
    ASSERT_EQ(both->rows(), 2);
    EXPECT_LT((both->row(0) - *endA).cwiseAbs().maxCoeff(), 1e-5) << folder;
    EXPECT_LT((both->row(1) - *endB).cwiseAbs().maxCoeff(), 1e-5) << folder;
  }
  EXPECT_EQ(detail::cellsPerForward(open("deepseek_v2").spec(), 6, 12), 1);
}

TEST(PathPatching, LatentAttentionIsRefusedWithTheReason) {
  const model::ModelFolder model = open("deepseek_v2");
  PathRequest r;
  r.clean = {1, 2, 3};
  r.corrupted = {1, 7, 3};
  r.answer = {5, 6, Metric::LogitDiff};
  r.sender = {0, 0};
  r.receiver = {1, 0};
  auto g = pathPatch(model, r);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().message.find("multi-head latent attention"), std::string::npos) << g.error().message;
}

}  // namespace
}  // namespace mhascope::experiments
