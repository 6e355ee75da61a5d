// The training loop: seeded batches, forward, backward, optional clipping, AdamW; evaluation
// on a fixed probe batch with head-role scores and (unless turned off) an attention snapshot per
// evaluation. A run started from a checkpoint continues the checkpoint's evaluation history.
// A step whose loss, gradients or updated parameters are not finite is refused and the error
// says what happened; the parameters go back to those of the last step whose loss was finite.
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include "train/checkpoint.hpp"
#include "train/model.hpp"
#include "train/optimizer.hpp"
#include "train/probes.hpp"
#include "train/tasks.hpp"

namespace mhascope::train {

// Every training setting with its default: `mhascope train` and the window's Train form start
// from these (TrainArgs holds one; TrainForm copies them into its widgets' types).
struct TrainSettings {
  GptConfig model;        // vocab/seq are set from the task
  TaskConfig task;
  int batch = 16;
  // The step the run ends at, counted from the run's start at step 0: a run continued from a
  // checkpoint at step s trains the steps after s up to it (RunStep below has the rule).
  std::int64_t steps = 1500;
  AdamWOptions adam;
  double clip = 0;        // max global gradient norm; 0 = off
  std::uint64_t seed = 1;
  int probeBatch = 16;
  // Everything the run holds at once must fit (train/memory.hpp); Trainer::make refuses settings
  // whose estimate does not, before allocating the parameters. Also each forward's engine budget.
  std::uint64_t memoryBudgetBytes = kDefaultMemoryBudget;
};
// How often `mhascope train` and the Train mode evaluate on the probe batch unless told otherwise.
inline constexpr int kDefaultEvalEvery = 50;

// The one rule of a run, `mhascope train`'s and the Train mode's alike: it ends at step
// settings.steps; the probe is evaluated at the start, after every step that is a multiple of
// `evalEvery` counted from step 0 (a continued run's evaluations fall where the run it continues
// would have had them) and after the last step.
bool evaluationDue(std::int64_t step, std::int64_t lastStep, int evalEvery);

class Trainer;

// One turn of the one training loop (the window's session and `mhascope train` both turn it): a
// step, then the evaluation the rule asks for after it.
struct RunStep {
  Result<LossResult> step = makeError("no step");
  double stepSeconds = 0.0;       // the step alone, without the evaluation
  bool evaluationDue = false;     // the rule asked for one (it ran when the step succeeded)
  Status evaluation = Ok{};       // its error, if it failed (the step is kept)
  bool evaluated() const { return step && evaluationDue && evaluation.ok(); }
  bool last = false;              // the run has reached settings.steps
};
// What a caller does around the turn: after a successful step (its loss and time), and the
// evaluation itself when it is due (empty: Trainer::evaluate; `mhascope train` also logs and saves).
struct RunHooks {
  std::function<void(const LossResult&, double stepSeconds)> stepped;
  std::function<Status()> evaluate;
};
RunStep runStep(Trainer& t, int evalEvery, const RunHooks& hooks = {});

class Trainer {
 public:
  // Validates everything (model, task, batch, the memory estimate against the budget); `init`
  // starts from a checkpoint's parameters, which must have the same sizes (and, for the text
  // task, the same alphabet), and continues its history.
  static Result<Trainer> make(TrainSettings s, const std::optional<Checkpoint>& init = std::nullopt);

  // One step on batch(seed, stepCount()). Returns the training loss, or an error (NaN/Inf).
  Result<LossResult> step();
  // Probe loss, accuracy and head scores at the current step; appends to history() (replacing an
  // entry of the same step, e.g. the checkpoint's last) and a snapshot to snapshots(). An
  // evaluation that cannot run (the engine refuses the probe forward) is an error and records
  // nothing: history() never holds an evaluation without scores.
  Result<Evaluation> evaluate();
  // `mhascope train` reads no snapshot: it turns them off (one (L, h, T, T) table per evaluation).
  void keepSnapshots(bool keep) { keepSnapshots_ = keep; }

  std::int64_t stepCount() const { return step_; }
  const GptParams& params() const { return params_; }
  const Task& task() const { return task_; }
  const TrainSettings& settings() const { return s_; }
  const Batch& probeBatch() const { return probe_; }
  const std::vector<Evaluation>& history() const { return history_; }
  const std::vector<Snapshot>& snapshots() const { return snapshots_; }
  // Hands the snapshots kept so far to the caller (snapshots() is empty afterwards): a
  // TrainingSession keeps them once, as shared views, instead of a second copy here.
  std::vector<Snapshot> takeSnapshots() { return std::exchange(snapshots_, {}); }
  Checkpoint checkpoint() const;

 private:
  Trainer(TrainSettings s, Task task, GptParams p);
  TrainSettings s_;
  Task task_;
  GptParams params_, grads_, backup_;  // backup_: the parameters before the last update
  bool hasBackup_ = false;
  AdamW adam_;
  ForwardCache cache_;
  Batch probe_;
  std::int64_t step_ = 0;
  std::vector<Evaluation> history_;
  std::vector<Snapshot> snapshots_;
  bool keepSnapshots_ = true;
  std::optional<double> lastTrainLoss_;  // the last step's loss, recorded with the next evaluation
};

}  // namespace mhascope::train
