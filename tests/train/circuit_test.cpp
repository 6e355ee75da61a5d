// The induction-circuit rule and the roles lesson (core/train/circuit): which heads and layers it
// names, the steps it reports, that every sentence holds for the scores it sits under (checked
// over many random histories), and the ablation lesson's claims.
#include "train/circuit.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <regex>
#include "test_support.hpp"

namespace mhascope::train {
namespace {

// An evaluation of a 2-head model; layer 0 head 1 is the previous-token candidate (its score at
// first occurrences `prev01`), layer 1 head 0 the induction candidate (prefix matching `ind10`,
// copying `copy10`).
Evaluation eval(std::int64_t step, double loss, int layers, double prev01, double ind10, double copy10 = 0.9) {
  Evaluation e;
  e.step = step;
  e.loss = loss;
  e.layers = layers;
  e.heads = 2;
  HeadScores base;
  base.prevToken = base.prevTokenNew = base.prevTokenSeen = 0.1;
  base.induction = 0.05;
  base.copying = 0.05;
  base.self = base.firstToken = 0.1;
  base.entropy = 2.0;
  e.scores.assign(static_cast<std::size_t>(layers * 2), base);
  e.scores[1].prevTokenNew = prev01;  // layer 0 head 1
  e.scores[1].prevToken = prev01 / 2;
  e.scores[1].prevTokenSeen = 0.2;
  if (layers > 1) {
    e.scores[2].induction = ind10;  // layer 1 head 0
    e.scores[2].copying = copy10;
  }
  return e;
}

using fixtures::joined;

TEST(Circuit, FormsOnlyWithLowLossPrefixMatchingCopyingAndAPreviousTokenHeadBelow) {
  EXPECT_FALSE(inductionCircuit(eval(0, 4.0, 2, 0.1, 0.05)).formed);
  EXPECT_FALSE(inductionCircuit(eval(0, 0.3, 2, 0.6, 0.2)).formed);        // no prefix matching
  EXPECT_FALSE(inductionCircuit(eval(0, 0.7, 2, 0.6, 0.8)).formed);        // loss too high
  EXPECT_FALSE(inductionCircuit(eval(0, 0.3, 2, 0.6, 0.8, 0.3)).formed);   // matches but does not copy
  EXPECT_FALSE(inductionCircuit(eval(0, 0.3, 2, 0.4, 0.8)).formed);        // no previous-token head
  const CircuitCheck c = inductionCircuit(eval(0, 0.3, 2, 0.6, 0.8));
  EXPECT_TRUE(c.formed);
  EXPECT_EQ(c.prevLayer, 0);
  EXPECT_EQ(c.prevHead, 1);
  EXPECT_EQ(c.inductionLayer, 1);
  EXPECT_EQ(c.inductionHead, 0);
  EXPECT_FALSE(inductionCircuit(eval(0, 0.1, 1, 0.6, 0)).formed);  // one layer never forms it
}

TEST(Circuit, FoundInAnyLayersAndTheLessonNamesThem) {
  // 3 layers: the previous-token head in layer 1, the induction head in layer 2.
  Evaluation e = eval(500, 0.2, 3, 0.1, 0.1, 0.1);
  auto set = [&](int l, int i) -> HeadScores& { return e.scores[static_cast<std::size_t>(l * 2 + i)]; };
  set(1, 1).prevTokenNew = 0.9;
  set(2, 0).induction = 0.85;
  set(2, 0).copying = 0.9;
  const CircuitCheck c = inductionCircuit(e);
  EXPECT_TRUE(c.formed);
  EXPECT_EQ(c.prevLayer, 1);
  EXPECT_EQ(c.inductionLayer, 2);
  const std::string text = joined(circuitLesson({e}, 0, TaskKind::Induction));
  EXPECT_NE(text.find("layer 1 head 1 is a previous-token head"), std::string::npos) << text;
  EXPECT_NE(text.find("layer 2 head 0 is an induction head"), std::string::npos) << text;
  // A previous-token head ABOVE the induction head cannot feed its keys: not counted.
  Evaluation above = eval(500, 0.2, 3, 0.1, 0.1, 0.1);
  above.scores[2 * 2 + 1].prevTokenNew = 0.9;  // layer 2 head 1
  above.scores[1 * 2 + 0].induction = 0.85;    // layer 1 head 0
  above.scores[1 * 2 + 0].copying = 0.9;
  EXPECT_FALSE(inductionCircuit(above).formed);
}

TEST(Circuit, StepsAndLessonNameThisRunsHeadsInTimeOrder) {
  const std::vector<Evaluation> h = {eval(0, 4.1, 2, 0.1, 0.05, 0.05), eval(200, 3.9, 2, 0.55, 0.1, 0.1),
                                     eval(300, 2.0, 2, 0.7, 0.6, 0.3), eval(400, 0.4, 2, 0.8, 0.7),
                                     eval(600, 0.2, 2, 0.9, 0.9)};
  EXPECT_EQ(circuitFormedAt(h, 4), 400);
  EXPECT_EQ(circuitFormedAt(h, 1), -1);  // not yet at the chosen step
  EXPECT_EQ(firstStepAbove(h, 4, 0, 1, &HeadScores::prevTokenNew), 200);
  EXPECT_EQ(firstStepAbove(h, 4, 1, 0, &HeadScores::induction), 300);
  const LossFall f = lossFall(h, 4);
  EXPECT_EQ(f.left, 300);  // first below 90 % of 4.1
  EXPECT_EQ(f.fallFrom, 200);  // 3.9 → 2.0, the largest drop between two evaluations
  EXPECT_EQ(f.fallTo, 300);
  const auto lesson = circuitLesson(h, 4, TaskKind::Induction);
  ASSERT_EQ(lesson.size(), 3u);
  EXPECT_NE(lesson[0].find("layer 0 head 1 is a previous-token head at first occurrences since step 200"),
            std::string::npos) << lesson[0];
  EXPECT_NE(lesson[0].find("0.20 where it repeats"), std::string::npos) << lesson[0];
  EXPECT_NE(lesson[0].find("not a previous-token head everywhere"), std::string::npos) << lesson[0];
  EXPECT_NE(lesson[1].find("layer 1 head 0 is an induction head"), std::string::npos) << lesson[1];
  EXPECT_NE(lesson[1].find("prefix matching passed 0.50 at step 300, copying at step 400"), std::string::npos)
      << lesson[1];
  EXPECT_NE(lesson[2].find("formed at step 400"), std::string::npos) << lesson[2];
  EXPECT_NE(lesson[2].find("fell fastest between steps 200 and 300"), std::string::npos) << lesson[2];
  EXPECT_NE(lesson[2].find("neither head lowers the loss alone"), std::string::npos) << lesson[2];
  // At step 300 copying is below its threshold: "forming", and nothing read from a head not yet there.
  const auto mid = circuitLesson(h, 2, TaskKind::Induction);
  EXPECT_NE(mid[1].find("is forming as an induction head"), std::string::npos) << mid[1];
  EXPECT_NE(mid[2].find("has not formed yet"), std::string::npos);
  const auto early = circuitLesson(h, 0, TaskKind::Induction);
  EXPECT_NE(early[0].find("no head below layer 1 is a previous-token head (best: "), std::string::npos) << early[0];
  const auto control = circuitLesson({eval(0, 3.5, 1, 0.4, 0)}, 0, TaskKind::Induction);
  EXPECT_NE(control[0].find("One layer is the control"), std::string::npos);
}

// Every sentence the lesson makes is checked against the scores it describes, over random
// histories of 2-4 layers and 1-4 heads.
TEST(Circuit, EverySentenceHoldsForTheScoresOverManyRandomHistories) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const std::regex named("(layer (\\d+) head (\\d+)) is (a previous-token head|an induction head|forming)");
  int checked = 0;
  for (int run = 0; run < 400; ++run) {
    const int layers = 2 + run % 3, heads = 1 + (run / 3) % 4, evals = 1 + run % 7;
    std::vector<Evaluation> h;
    double loss = 4.2;
    for (int k = 0; k < evals; ++k) {
      Evaluation e;
      e.step = 50 * k;
      loss = std::max(0.01, loss - u(rng) * 1.5);
      e.loss = loss;
      e.layers = layers;
      e.heads = heads;
      for (int n = 0; n < layers * heads; ++n) {
        HeadScores s;
        s.prevTokenNew = u(rng);
        s.prevTokenSeen = u(rng);
        s.prevToken = 0.5 * (s.prevTokenNew + s.prevTokenSeen);
        s.induction = u(rng);
        s.copying = u(rng);
        s.self = u(rng) * 0.3;
        s.firstToken = u(rng) * 0.3;
        s.entropy = u(rng) * 3;
        e.scores.push_back(s);
      }
      h.push_back(e);
    }
    const std::size_t at = h.size() - 1;
    const Evaluation& e = h[at];
    const CircuitCheck c = inductionCircuit(e);
    const auto lesson = circuitLesson(h, at, TaskKind::Induction);
    const std::string text = joined(lesson);
    for (std::sregex_iterator m(text.begin(), text.end(), named), end; m != end; ++m) {
      const int l = std::stoi((*m)[2]), i = std::stoi((*m)[3]);
      const HeadScores& s = e.at(l, i);
      const std::string what = (*m)[4];
      if (what == "a previous-token head") {
        EXPECT_GE(s.prevTokenNew, kRoleThreshold) << text;
        EXPECT_LT(l, c.inductionLayer) << text;
      } else if (what == "an induction head") {
        EXPECT_TRUE(isInductionHead(s, l)) << text;
        EXPECT_GE(l, 1) << text;
      } else {
        EXPECT_FALSE(isInductionHead(s, l)) << text;
      }
      ++checked;
    }
    // Reading what the previous-token head writes is claimed only once that head exists.
    if (text.find("writes into the residual stream") != std::string::npos) {
      EXPECT_GE(c.prev, kRoleThreshold) << text;
    }
    const std::int64_t formed = circuitFormedAt(h, at);
    if (formed >= 0) {
      EXPECT_NE(text.find("formed at step " + std::to_string(formed)), std::string::npos) << text;
      const Evaluation& f = *std::find_if(h.begin(), h.end(), [&](const Evaluation& x) { return x.step == formed; });
      const CircuitCheck fc = inductionCircuit(f);
      EXPECT_TRUE(fc.loss < 0.5 && fc.prev >= kRoleThreshold && fc.induction >= kRoleThreshold &&
                  fc.copying >= kCopyingThreshold);
    } else {
      EXPECT_NE(text.find("has not formed yet"), std::string::npos) << text;
    }
    // "since step N" / "at step N" never name a step after the one shown.
    const std::regex stepRe("step (\\d+)");
    for (std::sregex_iterator m(text.begin(), text.end(), stepRe), end; m != end; ++m) {
      EXPECT_LE(std::stoll((*m)[1]), e.step) << text;
    }
  }
  EXPECT_GT(checked, 300);
}

TEST(Circuit, OtherTasksSayWhatToLookForAndMeasureInductionTheSameWay) {
  Evaluation e = eval(100, 1.0, 2, 0.2, 0.7, 0.8);
  const std::string sort = joined(circuitLesson({e}, 0, TaskKind::Sort));
  EXPECT_NE(sort.find("the smallest input not yet written"), std::string::npos) << sort;
  EXPECT_EQ(sort.find("next-larger"), std::string::npos) << sort;
  const std::string rev = joined(circuitLesson({e}, 0, TaskKind::Reverse));
  EXPECT_NE(rev.find("rows after SEP and the columns before it"), std::string::npos) << rev;
  EXPECT_EQ(rev.find("right of SEP"), std::string::npos) << rev;
  const std::string text = joined(circuitLesson({e}, 0, TaskKind::Text));
  EXPECT_NE(text.find("On repeated random tokens"), std::string::npos) << text;
  EXPECT_NE(text.find("an induction head."), std::string::npos) << text;
  e.scores[2].copying = 0.1;
  EXPECT_NE(joined(circuitLesson({e}, 0, TaskKind::Text)).find("no induction head"), std::string::npos);
}

TEST(Circuit, AblationLessonSaysConfidentlyWrongAboveLnVAndRedundancy) {
  const Evaluation full = eval(0, 0.003, 2, 0.9, 0.94);
  HeadMask mask;
  mask.layers = 2;
  mask.heads = 2;
  mask.off.assign(4, false);
  mask.off[2] = mask.off[3] = true;  // both layer-1 heads
  Evaluation both = full;
  both.loss = 4.86;
  Evaluation a = full, b = full;
  a.loss = 0.05;
  b.loss = 0.16;
  const std::string text = joined(ablationLesson(full, both, mask, 64, {a, b}));
  EXPECT_NE(text.find("above ln V = 4.16"), std::string::npos) << text;
  EXPECT_NE(text.find("confidently wrong"), std::string::npos) << text;
  EXPECT_NE(text.find("partly redundant"), std::string::npos) << text;
  EXPECT_NE(text.find("layer 1 head 0 alone 0.050"), std::string::npos) << text;
  // Below ln V it never says "confidently wrong".
  both.loss = 3.0;
  EXPECT_EQ(joined(ablationLesson(full, both, mask, 64, {a, b})).find("confidently wrong"), std::string::npos);
  // A keys-only cut that takes the induction head's prefix matching away: K-composition.
  HeadMask cut = mask;
  cut.off.assign(4, false);
  cut.reads.assign(4, 0);
  cut.reads[1] = kReadKey;
  Evaluation keys = full;
  keys.scores[2].induction = 0.1;
  keys.loss = 6.9;
  const std::string k = joined(ablationLesson(full, keys, cut, 64, {}));
  EXPECT_NE(k.find("layer 0 head 1 cut from later layers' keys"), std::string::npos) << k;
  EXPECT_NE(k.find("prefix matching 0.94 → 0.10"), std::string::npos) << k;
  EXPECT_NE(k.find("K-composition"), std::string::npos) << k;
  cut.reads[1] = kReadQuery;
  EXPECT_EQ(joined(ablationLesson(full, keys, cut, 64, {})).find("K-composition"), std::string::npos);
}

// The bound against the value computed independently (scripts/alibi_previous_token.py, Python's
// math.exp: 0.31131773626 for m = 1/16 over periods 6 … 16; 0.50197060616 for m = 1/2), and a
// first-principles check of one period: k = 3 has queries t = 1 (weight 1) and t = 2 (1 / (1 + e^−m)).
TEST(AlibiBound, MatchesTheFormulaAndAnIndependentSum) {
  EXPECT_NEAR(alibiPreviousTokenBound(1.0 / 16, 6, 16), 0.31131773626, 1e-9);
  EXPECT_NEAR(alibiPreviousTokenBound(0.5, 6, 16), 0.50197060616, 1e-9);
  const double m = 0.25;
  EXPECT_NEAR(alibiPreviousTokenBound(m, 3, 3), (1.0 + 1.0 / (1.0 + std::exp(-m))) / 2, 1e-12);
  EXPECT_EQ(alibiPreviousTokenBound(m, 1, 1), 0.0);  // no first-occurrence query after position 0
}

TEST(AlibiBound, TheNoteIsForAlibiInductionRunsOfTwoLayersOrMore) {
  GptConfig model;
  TaskConfig task;
  EXPECT_EQ(alibiPreviousTokenNote(model, task), "");  // learned positions
  model.positions = TrainPositions::Alibi;
  model.heads = 2;
  model.layers = 2;
  const std::string note = alibiPreviousTokenNote(model, task);
  EXPECT_NE(note.find("on average 0.31 over the first occurrences with this model's steepest slope m = 0.0625 (h = 2, "
                      "periods 6-16), below the 0.50"),
            std::string::npos)
      << note;
  model.heads = 8;  // steepest slope 1/2: the bound is 0.502
  EXPECT_NE(alibiPreviousTokenNote(model, task).find("enough for the 0.50"), std::string::npos);
  model.layers = 1;
  EXPECT_EQ(alibiPreviousTokenNote(model, task), "");
  model.layers = 2;
  task.kind = TaskKind::Reverse;
  EXPECT_EQ(alibiPreviousTokenNote(model, task), "");
}

}  // namespace
}  // namespace mhascope::train
