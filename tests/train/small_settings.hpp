// The small induction run the trainer, ablation and session tests share: 2 layers × 2 heads,
// d_model 16, T 12, periods 3–5, seed 3 — trains in well under a second.
#pragma once

#include "train/trainer.hpp"

namespace mhascope::train::fixtures {

inline TrainSettings smallInduction(std::int64_t steps = 1500) {
  TrainSettings s;
  s.task = {TaskKind::Induction, 16, 12, 3, 5, ""};
  s.model.dModel = 16;
  s.model.heads = 2;
  s.model.layers = 2;
  s.batch = 8;
  s.probeBatch = 4;
  s.steps = steps;
  s.adam.lr = 1e-2f;
  s.seed = 3;
  return s;
}

}  // namespace mhascope::train::fixtures
