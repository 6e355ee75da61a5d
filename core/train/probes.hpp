// What each head does, measured on the probe batch from the attention weights the engine
// recorded (Trace stage "weights", (B, h, T, T)); every score is a mean weight in [0, 1].
//   previous-token  weight on key t-1 (queries t >= 1)
//   induction       weight on the key right after the previous occurrence of the query's token
//                   (queries whose token occurred before, at j < t: key j+1)
//   self            weight on key t;  first-token: weight on key 0 (queries t >= 1)
//   entropy         mean over rows of -sum_k a_k ln a_k (nats)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "train/model.hpp"

namespace mhascope::train {

struct HeadScores {
  double prevToken = 0, induction = 0, self = 0, firstToken = 0, entropy = 0;
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
struct Snapshot {
  std::int64_t step = 0;
  int layers = 0, heads = 0, seq = 0;
  std::vector<float> weights;
};

// Scores of every (layer, head) from a forward's traces on `batch`.
std::vector<HeadScores> headScores(const ForwardCache& cache, const Batch& batch);
Snapshot takeSnapshot(const ForwardCache& cache, std::int64_t step);

// The role a head's scores suggest, with the threshold it passed ("previous-token 0.47"), or
// "diffuse" when none reaches kRoleThreshold.
inline constexpr double kRoleThreshold = 0.3;
std::string roleOf(const HeadScores& s);

}  // namespace mhascope::train
