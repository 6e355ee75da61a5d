// What each head does, measured from the attention weights the engine recorded (Trace stage
// "weights", (B, h, T, T)); every score but the entropy is in [0, 1].
// On the task's probe batch:
//   previous-token   mean weight on key t-1 over queries t >= 1; also split by whether the
//                    query's token occurred before: prevTokenNew (its first occurrence — in the
//                    induction task, the first period) and prevTokenSeen (a repeat)
//   self             mean weight on key t;  first-token: mean weight on key 0 (queries t >= 1)
//   entropy          mean over rows of -sum_k a_k ln a_k (nats)
// On the repeated-random-token probe (repeatedTokensProbe: n = T/2 uniform random tokens, then
// the same n again), the same for every task, so a head is scored on induction where copying an
// earlier continuation is the only way to predict — not on text, where a doubled letter would
// credit a head for attending to itself:
//   induction (prefix matching, as Olsson et al. 2022 define it) — for a query t, the TOTAL weight
//                    on the keys j+1 of every earlier copy j of its token (x_j = x_t, j+1 < t);
//                    the mean over the queries that have such a copy (the others are left out,
//                    not counted as 0)
//   copying          over those same queries: the share whose head output, read straight into the
//                    logits (through the final LayerNorm's weights and the unembedding, bias-free),
//                    ranks first the token of the key the head attends to most — whether what
//                    the head moves is the attended token itself
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/head_roles.hpp"
#include "analysis/rollout.hpp"  // AttentionStack
#include "train/model.hpp"

namespace mhascope::train {

struct HeadScores {
  double prevToken = 0, induction = 0, self = 0, firstToken = 0, entropy = 0;
  double copying = 0;
  double prevTokenNew = 0, prevTokenSeen = 0;  // prevToken split by the query's token: first occurrence / repeat
};

struct Evaluation {
  std::int64_t step = 0;
  double loss = 0;      // probe batch, predictable positions only
  double accuracy = 0;  // fraction of predictable positions whose argmax is right
  // Loss of the last training batch before this evaluation; none before the first step.
  std::optional<double> trainLoss;
  int layers = 0, heads = 0;
  std::vector<HeadScores> scores;  // layers * heads, index layer * heads + head
  // Every (layer, head) has its scores: at() may be called. Code that reads scores checks this,
  // so an evaluation from elsewhere (a file) never makes it read past the end.
  bool complete() const {
    return layers > 0 && heads > 0 && scores.size() == static_cast<std::size_t>(layers) * static_cast<std::size_t>(heads);
  }
  const HeadScores& at(int layer, int head) const { return scores[static_cast<std::size_t>(layer * heads + head)]; }
};

// The probe sequence's (batch item 0) attention of every head at one step: (L, h, T, T).
struct Snapshot : analysis::AttentionStack {
  std::int64_t step = 0;
};

// B sequences of T tokens: n = T/2 tokens drawn uniformly from the whole vocabulary (seeded, the
// same on every machine), repeated to fill T. Targets are -1: it is scored through attention only.
Batch repeatedTokensProbe(int vocab, int seq, int batch);

// Previous-token, self, first-token and entropy scores of every (layer, head) from a forward's
// traces on the task's probe `batch` (induction and copying left 0).
std::vector<HeadScores> headScores(const ForwardCache& cache, const Batch& batch);
// Induction and copying scores into `scores` from a forward of `p` on a batch with repeats
// (repeatedTokensProbe). `scores` has one entry per (layer, head).
void inductionScores(const GptParams& p, const ForwardCache& cache, const Batch& batch, std::vector<HeadScores>& scores);
Snapshot takeSnapshot(const ForwardCache& cache, std::int64_t step);

// The role rule and its words are the one rule of analysis/head_roles.hpp (kRoleThreshold,
// kCopyingThreshold, the induction rule), which a model folder's view uses too; these read a
// Train-mode head's scores into it. `layer`: the head's layer (a layer-0 head is never an
// induction head).
RoleScores roleScoresOf(const HeadScores& s, int layer);
// "previous-token 0.97", "previous-token at first occurrences 0.96", "induction 0.88 copying 0.93",
// "prefix matching 0.88, not copying (0.10)", "diffuse (entropy 1.20)" (head_roles.hpp roleOf).
std::string roleOf(const HeadScores& s, int layer);
bool isInductionHead(const HeadScores& s, int layer);

}  // namespace mhascope::train
