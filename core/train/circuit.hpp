// The induction circuit and what a run's heads became, in words: one rule shared by
// `mhascope train`, `mhascope bench --train` and the window's training lab.
//   formed: probe loss < 0.5; an induction head in some layer l >= 1 (prefix matching and copying
//           both >= their thresholds, probes.hpp) and, in a layer below it, a previous-token head
//           (previous-token score at a token's first occurrence >= kRoleThreshold: the positions
//           after an earlier copy, where the induction head's keys look, are first occurrences
//           in the first period).
// The lesson text names *this run's* heads and layers, says only what the scores at the chosen
// step show, and tells events in the order they happened.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "train/ablation.hpp"
#include "train/params.hpp"
#include "train/probes.hpp"
#include "train/tasks.hpp"

namespace mhascope::train {

struct CircuitCheck {
  bool formed = false;
  double loss = 0;       // probe loss
  double prev = 0;       // the previous-token head's score at first occurrences (prevTokenNew)
  double induction = 0;  // the induction head's prefix-matching score
  double copying = 0;    // and its copying score
  int prevLayer = -1, prevHead = -1;            // -1: no layer below the induction head
  int inductionLayer = -1, inductionHead = -1;  // best prefix matching in layers >= 1; -1: one layer
};
CircuitCheck inductionCircuit(const Evaluation& e);

// The step of the first evaluation in `history` (up to and including index `upTo`) where the
// circuit had formed; -1 when it never did.
std::int64_t circuitFormedAt(const std::vector<Evaluation>& history, std::size_t upTo);

// The first step at which head (layer, head) had `score` (a HeadScores member) >= `threshold`,
// within history[0 .. upTo]; -1 when never.
std::int64_t firstStepAbove(const std::vector<Evaluation>& history, std::size_t upTo, int layer, int head,
                            double HeadScores::*score, double threshold = kRoleThreshold);

// Where the probe loss left its starting plateau in history[0 .. upTo]: `left` is the first
// evaluation whose loss is below 90 % of the first one's (-1: not yet), and [fallFrom, fallTo] the
// two consecutive evaluations with the largest drop (-1 when fewer than two evaluations).
struct LossFall {
  std::int64_t left = -1, fallFrom = -1, fallTo = -1;
  double start = 0, lossFrom = 0, lossTo = 0;
};
LossFall lossFall(const std::vector<Evaluation>& history, std::size_t upTo);

// The most a layer-0 head under ALiBi can put on the previous token at a token's first occurrence,
// in expectation over the induction task's periods k (uniform on [periodMin, periodMax]): with no
// position table only the bias −m (t − j) orders the keys; at a first occurrence every earlier key
// holds a distinct random token, so content cannot prefer key t − 1 to an earlier one, and a head
// that pushes its own key away and weighs the others alike gives key t − 1 the weight
// (1 − e^−m) / (1 − e^−m·t). The mean of that over the queries t = 1 … k − 1 of every period.
double alibiPreviousTokenBound(double slope, int periodMin, int periodMax);
// For an ALiBi model on the induction task (two layers or more): whether its layer-0 heads can
// reach the previous-token threshold at all, with the steepest slope and that bound; "" otherwise.
std::string alibiPreviousTokenNote(const GptConfig& model, const TaskConfig& task);

// Paragraphs of the roles lesson for this run at history[upTo]: the previous-token head, the
// induction head (or that they are forming), when each passed its thresholds, where the loss
// fell and why abruptly; for a 1-layer model, why it cannot form the circuit; for the other tasks,
// what pattern to look for.
std::vector<std::string> circuitLesson(const std::vector<Evaluation>& history, std::size_t upTo, TaskKind task);

// What switching heads off or cutting their reads does, from evaluations of the same parameters:
// `full` without the mask, `ablated` with it, and `alone[k]` with only the k-th switched-off head
// of the mask off (in mask order; may be empty). Says the loss change against ln V (a loss above
// it is confidently wrong), how several heads off compare with each alone (redundancy), and for
// read cuts which later heads' prefix matching moved and what that shows. `vocab` is V.
std::vector<std::string> ablationLesson(const Evaluation& full, const Evaluation& ablated, const HeadMask& mask,
                                        int vocab, const std::vector<Evaluation>& alone);
// Runs those evaluations on `probe` (one forward pair per switched-off head when two or more are
// off) and returns the lesson.
Result<std::vector<std::string>> ablationLesson(const GptParams& p, const HeadMask& mask, const Batch& probe,
                                                ForwardCache& cache);

}  // namespace mhascope::train
