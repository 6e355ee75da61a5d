// The induction-circuit rule and the roles lesson (core/train/circuit): which heads it names, the
// steps it reports, and the 1-layer control's explanation.
#include "train/circuit.hpp"

#include <gtest/gtest.h>

namespace mhascope::train {
namespace {

// An evaluation of a 2-head model; scores of (layer, head) set by the caller.
Evaluation eval(std::int64_t step, double loss, int layers, double prev01, double ind10) {
  Evaluation e;
  e.step = step;
  e.loss = loss;
  e.layers = layers;
  e.heads = 2;
  e.scores.assign(static_cast<std::size_t>(layers * 2), HeadScores{0.1, 0.05, 0.1, 0.1, 2.0});
  e.scores[1].prevToken = prev01;  // layer 0 head 1
  if (layers > 1) e.scores[2].induction = ind10;  // layer 1 head 0
  return e;
}

TEST(Circuit, FormsOnlyWithLowLossAndBothHeads) {
  EXPECT_FALSE(inductionCircuit(eval(0, 4.0, 2, 0.1, 0.05)).formed);
  EXPECT_FALSE(inductionCircuit(eval(0, 0.3, 2, 0.45, 0.2)).formed);   // no induction head
  EXPECT_FALSE(inductionCircuit(eval(0, 0.7, 2, 0.45, 0.5)).formed);   // loss too high
  const CircuitCheck c = inductionCircuit(eval(0, 0.3, 2, 0.45, 0.5));
  EXPECT_TRUE(c.formed);
  EXPECT_EQ(c.prevHead, 1);
  EXPECT_EQ(c.inductionHead, 0);
  EXPECT_FALSE(inductionCircuit(eval(0, 0.1, 1, 0.45, 0)).formed);     // one layer never forms it
}

TEST(Circuit, StepsAndLessonNameThisRunsHeads) {
  const std::vector<Evaluation> h = {eval(0, 4.1, 2, 0.1, 0.05), eval(200, 3.0, 2, 0.35, 0.1),
                                     eval(400, 0.4, 2, 0.45, 0.45), eval(600, 0.2, 2, 0.47, 0.5)};
  EXPECT_EQ(circuitFormedAt(h, 3), 400);
  EXPECT_EQ(circuitFormedAt(h, 1), -1);  // not yet at the chosen step
  EXPECT_EQ(firstStepAbove(h, 3, 0, 1, &HeadScores::prevToken), 200);
  EXPECT_EQ(firstStepAbove(h, 3, 1, 0, &HeadScores::induction), 400);
  const auto lesson = circuitLesson(h, 3, TaskKind::Induction);
  ASSERT_EQ(lesson.size(), 3u);
  EXPECT_NE(lesson[0].find("layer 0 head 1 is a previous-token head (0.47 since step 200)"), std::string::npos) << lesson[0];
  EXPECT_NE(lesson[1].find("layer 1 head 0 is an induction head (0.50 since step 400)"), std::string::npos) << lesson[1];
  EXPECT_NE(lesson[2].find("formed at step 400"), std::string::npos) << lesson[2];
  const auto early = circuitLesson(h, 0, TaskKind::Induction);
  EXPECT_NE(early[2].find("has not formed yet"), std::string::npos);
  const auto control = circuitLesson({eval(0, 3.5, 1, 0.4, 0)}, 0, TaskKind::Induction);
  EXPECT_NE(control[0].find("One layer is the control"), std::string::npos);
}

}  // namespace
}  // namespace mhascope::train
