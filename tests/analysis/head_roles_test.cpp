// The one role rule (core/analysis/head_roles.hpp): the induction rule's three parts (layer 1 or
// later, prefix matching, copying) each decide; the words name the numbers and why a head fails;
// and the Train mode (train::roleOf, train::isInductionHead) and a model folder's scores
// (roleScoresOf an analysis HeadScores) give the same verdict on the same numbers.
#include "analysis/head_roles.hpp"

#include <gtest/gtest.h>

#include <string>

#include "analysis/head_scores.hpp"
#include "train/probes.hpp"

namespace mhascope {
namespace {

RoleScores inductionLike(int layer, double matching, std::optional<double> copying) {
  RoleScores s;
  s.layer = layer;
  s.prevToken = 0.1;
  s.prevTokenNew = 0.1;
  s.self = 0.05;
  s.firstToken = 0.2;
  s.entropy = 1.5;
  s.prefixMatching = matching;
  s.copying = copying;
  return s;
}

TEST(HeadRoles, TheInductionRuleNeedsALaterLayerMatchingAndCopying) {
  EXPECT_TRUE(isInductionHead(inductionLike(1, 0.88, 0.93)));
  EXPECT_TRUE(isInductionHead(inductionLike(3, kRoleThreshold, kCopyingThreshold)));  // at the thresholds
  EXPECT_FALSE(isInductionHead(inductionLike(0, 0.95, 0.99))) << "a layer-0 head has no earlier head to compose with";
  EXPECT_FALSE(isInductionHead(inductionLike(1, 0.49, 0.93)));
  EXPECT_FALSE(isInductionHead(inductionLike(1, 0.88, 0.49)));
  EXPECT_FALSE(isInductionHead(inductionLike(1, 0.88, std::nullopt))) << "copying not measured: not shown to copy";
  EXPECT_FALSE(isInductionHead(inductionLike(1, 0.0, 0.9)));
  RoleScores none = inductionLike(1, 0.0, 0.9);
  none.prefixMatching.reset();
  EXPECT_FALSE(isInductionHead(none));

  EXPECT_TRUE(inductionNeedsCopying(1, 0.5));
  EXPECT_FALSE(inductionNeedsCopying(0, 0.99));
  EXPECT_FALSE(inductionNeedsCopying(2, 0.49));
  EXPECT_FALSE(inductionNeedsCopying(2, std::nullopt));
}

TEST(HeadRoles, TheWordsNameTheNumbersAndWhyAHeadFails) {
  const auto text = [](const RoleScores& s) { return roleVerdict(s, RuleRole::Induction).text; };
  EXPECT_EQ(text(inductionLike(1, 0.88, 0.93)), "induction 0.88 copying 0.93");
  EXPECT_EQ(text(inductionLike(1, 0.88, 0.10)), "prefix matching 0.88, not copying (0.10)");
  EXPECT_EQ(text(inductionLike(1, 0.19, 0.10)), "prefix matching 0.19, not copying (0.10)");
  EXPECT_EQ(text(inductionLike(1, 0.19, 0.93)), "prefix matching 0.19, copying 0.93");
  EXPECT_EQ(text(inductionLike(1, 0.19, std::nullopt)), "prefix matching 0.19; copying not checked: prefix matching below 0.50");
  EXPECT_EQ(text(inductionLike(0, 0.95, 0.99)),
            "prefix matching 0.95, copying 0.99; layer 0: no earlier head to compose with — it cannot be an induction head");
  EXPECT_EQ(text(inductionLike(0, 0.95, std::nullopt)),
            "prefix matching 0.95; layer 0: no earlier head to compose with — it cannot be an induction head");
  RoleScores none = inductionLike(1, 0.0, std::nullopt);
  none.prefixMatching.reset();
  EXPECT_EQ(text(none), "prefix matching n/a: no token repeats");
  EXPECT_FALSE(roleVerdict(none, RuleRole::Induction).measured);

  RoleScores prev = inductionLike(0, 0.1, std::nullopt);
  prev.prevToken = 0.97;
  EXPECT_TRUE(roleVerdict(prev, RuleRole::PreviousToken).passes);
  EXPECT_EQ(roleVerdict(prev, RuleRole::PreviousToken).text, "previous-token 0.97");
  EXPECT_EQ(roleOf(prev), "previous-token 0.97");
  // Both pass with the split higher: the plain score (the one the grid shows) first, the split named.
  prev.prevToken = 0.56;
  prev.prevTokenNew = 0.89;
  EXPECT_EQ(roleVerdict(prev, RuleRole::PreviousToken).text, "previous-token 0.56 (at first occurrences 0.89)");
  EXPECT_EQ(roleVerdict(prev, RuleRole::PreviousToken).score, 0.89) << "ranked by the larger";
  prev.prevToken = 0.12;
  prev.prevTokenNew = 0.3;
  EXPECT_FALSE(roleVerdict(prev, RuleRole::PreviousToken).passes);
  EXPECT_EQ(roleVerdict(prev, RuleRole::PreviousToken).text, "previous-token 0.12 (at first occurrences 0.30), below 0.50");
  EXPECT_EQ(roleVerdict(prev, RuleRole::FirstToken).text, "first-token 0.20, below 0.50");
  EXPECT_EQ(roleOf(prev), "diffuse (entropy 1.50)");
  // A layer-0 head whose strongest pattern is prefix matching is named by it, with why it is not
  // an induction head.
  EXPECT_EQ(roleOf(inductionLike(0, 0.8, std::nullopt)),
            "prefix matching 0.80; layer 0: no earlier head to compose with — it cannot be an induction head");
  EXPECT_EQ(inductionRuleText(), "prefix matching ≥ 0.50 and copying ≥ 0.50, in layer 1 or later");
}

// The Train mode's scores and a model folder's scores of the same numbers: one verdict.
TEST(HeadRoles, TheTrainModeAndTheModelViewGiveTheSameVerdict) {
  struct Case {
    double prev, prevNew, matching, copying, self, first, entropy;
  };
  const Case cases[] = {{0.1, 0.1, 0.88, 0.93, 0.0, 0.1, 1.0},  {0.1, 0.1, 0.88, 0.2, 0.0, 0.1, 1.0},
                        {0.97, 0.96, 0.1, 0.0, 0.0, 0.0, 0.2}, {0.48, 0.97, 0.1, 0.0, 0.0, 0.1, 0.9},
                        {0.1, 0.1, 0.2, 0.9, 0.7, 0.1, 0.5},   {0.1, 0.1, 0.2, 0.1, 0.1, 0.8, 0.4},
                        {0.2, 0.2, 0.3, 0.3, 0.2, 0.2, 2.3},   {0.1, 0.1, 0.6, 0.7, 0.0, 0.0, 1.1}};
  int induction = 0;
  for (const Case& c : cases) {
    for (int layer : {0, 1, 2}) {
      train::HeadScores t;
      t.prevToken = c.prev;
      t.prevTokenNew = c.prevNew;
      t.induction = c.matching;
      t.copying = c.copying;
      t.self = c.self;
      t.firstToken = c.first;
      t.entropy = c.entropy;
      HeadScores m;
      m.prevToken = c.prev;
      m.prevTokenNew = c.prevNew;
      m.induction = c.matching;
      m.inductionQueries = 10;
      m.copying = c.copying;
      m.self = c.self;
      m.sink = c.first;
      m.entropy = c.entropy;
      const RoleScores fromModel = roleScoresOf(m, layer);
      SCOPED_TRACE(train::roleOf(t, layer) + " in layer " + std::to_string(layer));
      EXPECT_EQ(train::roleOf(t, layer), roleOf(fromModel));
      EXPECT_EQ(train::isInductionHead(t, layer), isInductionHead(fromModel));
      EXPECT_EQ(train::isInductionHead(t, layer), roleVerdict(fromModel, RuleRole::Induction).passes);
      induction += isInductionHead(fromModel) ? 1 : 0;
    }
  }
  EXPECT_EQ(induction, 4) << "two cases pass, each in layers 1 and 2 only";
}

}  // namespace
}  // namespace mhascope
