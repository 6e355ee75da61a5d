// The model view (core/model/model_view) of the trained fixture folder (tests/fixtures/models/trained)
// against its PyTorch reference (reference/trained/reference.json, scripts/gen_trained_fixture.py),
// on the reference's text and its repeated-letters probe: each head's copying equals the
// reference's, the heads the view calls induction heads are the reference's, and by the one rule
// (analysis/head_roles.hpp) no head is called an induction head that fails it — a layer-0 head
// never, whatever its prefix matching and copying.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "analysis/head_roles.hpp"
#include "model/model_view.hpp"
#include "model_fixtures.hpp"

namespace mhascope::model {
namespace {

nlohmann::json reference() {
  const std::string path = kModels + "reference/trained/reference.json";
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  return nlohmann::json::parse(in);
}

class TrainedModelView : public ::testing::TestWithParam<const char*> {};

TEST_P(TrainedModelView, CopyingAndInductionHeadsAgreeWithTheReference) {
  const nlohmann::json ref = reference();
  const nlohmann::json& seq = ref.at("sequences").at(GetParam());
  auto m = ModelFolder::open(kModels + "trained");
  ASSERT_TRUE(m.ok()) << m.error().message;
  const std::vector<int> ids = seq.at("tokens").get<std::vector<int>>();
  auto view = computeModelView(*m, ids, {}, {});
  ASSERT_TRUE(view.ok()) << view.error().message;
  EXPECT_TRUE(view->copyingEveryHead) << "2 x 2 heads over 257 tokens: cheap, measured for every head";

  std::set<std::pair<int, int>> wantInduction;
  for (const auto& lh : seq.at("induction_heads")) wantInduction.insert({lh.at(0).get<int>(), lh.at(1).get<int>()});
  std::set<std::pair<int, int>> gotInduction;
  for (int l = 0; l < view->layers; ++l) {
    for (int i = 0; i < view->heads; ++i) {
      SCOPED_TRACE("layer " + std::to_string(l) + " head " + std::to_string(i));
      const nlohmann::json& want = seq.at("heads")[static_cast<std::size_t>(l)][static_cast<std::size_t>(i)];
      const HeadScores& s = view->head(l, i).scores;
      ASSERT_TRUE(s.copying.has_value());
      // A count of queries: equal unless a top logit is a near tie, which would move it by one query.
      const double oneQuery = 1.0 / want.at("copyingQueries").get<double>();
      EXPECT_NEAR(*s.copying, want.at("copying").get<double>(), 0.5 * oneQuery);
      EXPECT_NEAR(s.induction, want.at("induction").get<double>(), 1e-4);

      const RoleScores r = roleScoresOf(s, l);
      const RoleVerdict verdict = roleVerdict(r, RuleRole::Induction);
      EXPECT_EQ(verdict.passes, isInductionHead(r));
      if (verdict.passes) gotInduction.insert({l, i});
      // The rule read from the reference's own numbers.
      const bool byRule = l >= 1 && want.at("induction").get<double>() >= kRoleThreshold &&
                          want.at("copying").get<double>() >= kCopyingThreshold;
      EXPECT_EQ(verdict.passes, byRule) << verdict.text;
      // A layer-0 head is never an induction head, even with its prefix matching and copying raised past both thresholds.
      if (l == 0) {
        RoleScores raised = r;
        raised.prefixMatching = 0.95;
        raised.copying = 0.95;
        EXPECT_FALSE(isInductionHead(raised));
        EXPECT_NE(roleVerdict(raised, RuleRole::Induction).text.find("layer 0: no earlier head to compose with"),
                  std::string::npos);
        EXPECT_NE(verdict.text.find("layer 0"), std::string::npos) << verdict.text;
      }
    }
  }
  EXPECT_EQ(gotInduction, wantInduction);
}

INSTANTIATE_TEST_SUITE_P(Reference, TrainedModelView, ::testing::Values("text", "probe"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace mhascope::model
