// What a training run holds at once, estimated from its settings before anything is allocated,
// and the check against its memory budget — one function for `mhascope train`, Trainer::make and
// the window's Train (which calls it before it starts a run).
//   parameters    θ, their gradients and the copy kept to undo a non-finite step (3 × P floats)
//   AdamW state   first and second moments (2 × P floats)
//   activations   one training batch's forward + backward (B sequences): per layer the engine's
//                 recorded attention (its own estimate, which counts more stages than the
//                 trainer records) and the LayerNorm/MLP caches; logits and their gradient (B·T·V)
//   probe         the probe batch's forward and one attention snapshot (L·h·T²)
//   checkpoint    saving: the parameters copied into the checkpoint, its tensors and its bytes (3 × P)
//   text          the text task's characters as tokens (4 bytes each) and the file's bytes
#pragma once

#include <cstdint>
#include <string>

#include "train/trainer.hpp"

namespace mhascope::train {

struct TrainMemoryEstimate {
  double parameters = 0, optimizer = 0, activations = 0, probe = 0, checkpoint = 0, text = 0;
  double total() const { return parameters + optimizer + activations + probe + checkpoint + text; }
  // "parameters 1.2 MiB + AdamW state 0.8 MiB + activations (B = 16) 3.1 MiB + …"
  std::string describe(int batch, int probeBatch) const;
};

// `vocab` is the task's V (the text task: its distinct characters); `textChars` the text task's
// length in characters (0 for the other tasks).
TrainMemoryEstimate estimateTrainingMemory(const TrainSettings& s, int vocab, std::uint64_t textChars);

// The estimate against s.memoryBudgetBytes: an error with the estimate, its parts and the budget
// when it does not fit.
Status checkTrainingMemory(const TrainSettings& s, int vocab, std::uint64_t textChars);
// The same from the settings alone: the task is made first (the text task reads its file, at most
// kMaxTextBytes) to know V and the text's length.
Status checkTrainingMemory(const TrainSettings& s);

}  // namespace mhascope::train
