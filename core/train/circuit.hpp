// The induction circuit and what a run's heads became, in words: one rule shared by
// `mhascope bench --train` and the window's training lab.
//   formed: probe loss < 0.5, a layer-0 head with previous-token score > 0.3 and a layer-1 head
//           with induction score > 0.3 (the targets).
// The lesson text names *this run's* heads and the step each one first passed its threshold.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "train/probes.hpp"
#include "train/tasks.hpp"

namespace mhascope::train {

struct CircuitCheck {
  bool formed = false;
  double loss = 0, prev = 0, induction = 0;  // probe loss, best layer-0 prev-token, best layer-1 induction score
  int prevHead = -1, inductionHead = -1;     // the heads with those best scores (-1: no such layer)
};
CircuitCheck inductionCircuit(const Evaluation& e);

// The step of the first evaluation in `history` (up to and including index `upTo`) where the
// circuit had formed; -1 when it never did.
std::int64_t circuitFormedAt(const std::vector<Evaluation>& history, std::size_t upTo);

// The first step at which head (layer, head) had `score` (a HeadScores member) >= kRoleThreshold,
// within history[0 .. upTo]; -1 when never.
std::int64_t firstStepAbove(const std::vector<Evaluation>& history, std::size_t upTo, int layer, int head,
                            double HeadScores::*score);

// Paragraphs of the roles lesson for this run at history[upTo]: which head is the previous-token
// head, which the induction head, since when, and how the first feeds the second; for a 1-layer
// model, why it cannot form the circuit; for the other tasks, what pattern to look for.
std::vector<std::string> circuitLesson(const std::vector<Evaluation>& history, std::size_t upTo, TaskKind task);

}  // namespace mhascope::train
