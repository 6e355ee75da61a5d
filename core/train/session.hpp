// A training run on its own thread, driven by play / pause / step / reset and read through
// immutable published views: what a window shows while a model trains. The thread is the only
// one that touches the Trainer while it runs; readers never wait for a step — they take the
// latest view (a shared_ptr to const data, so a view stays valid as long as it is held).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "train/trainer.hpp"

namespace mhascope::train {

enum class RunState { Paused, Running, Finished, Failed };
const char* runStateName(RunState s);  // "paused" | "running" | "finished" | "failed"

// The parameters at one evaluation, for replay, ablation and "open this layer" at that step.
struct ParamsAtStep {
  std::int64_t step = 0;
  std::shared_ptr<const GptParams> params;
};

struct SessionView {
  std::uint64_t version = 0;   // grows with every publish
  RunState state = RunState::Paused;
  bool evaluating = false;     // reset() done, the starting parameters' evaluation still running
  std::int64_t step = 0;       // steps done
  std::int64_t lastStep = 0;   // the run stops (Finished) at this step: settings.steps
  double stepsPerSecond = 0;   // measured while running, over the last ≈0.25 s
  double trainLoss = 0;        // loss of the last training batch (0 before the first step)
  bool trainLossKnown = false; // trainLoss is a real loss: a step ran, or the checkpoint saved it
  // Since the last play(): the steps trained, the time spent inside them (Trainer::step only, as
  // `mhascope train` counts its steps/s) and the wall time on this thread from play() to the last
  // step (evaluations and publishing included). What the window reports when a run finishes.
  std::int64_t runSteps = 0;
  double runStepSeconds = 0, runWallSeconds = 0;
  std::string error;           // why the run failed (state Failed)
  std::shared_ptr<const TrainSettings> settings;
  std::shared_ptr<const Task> task;      // token symbols, alphabet
  std::shared_ptr<const Batch> probe;    // the probe batch every evaluation uses
  std::vector<Evaluation> history;       // one per evaluation, by step (a loaded checkpoint's first;
                                         // empty until the first evaluation, and for old checkpoints)
  std::vector<std::shared_ptr<const Snapshot>> snapshots;  // by step, one per evaluation whose forward ran;
                                                           // thinned like params past kSnapshotsBudgetBytes
  std::vector<ParamsAtStep> params;      // at evaluations; thinned (every other old one dropped)
                                         // when their total passes kParamsBudgetBytes
};

class TrainingSession {
 public:
  static constexpr std::size_t kParamsBudgetBytes = std::size_t{256} << 20;
  // The attention pictures of every evaluation (layers · h · T² floats each: 16 MiB at T = 1024)
  // would grow without end in a long run.
  static constexpr std::size_t kSnapshotsBudgetBytes = std::size_t{256} << 20;

  TrainingSession() = default;
  ~TrainingSession();  // stops the thread (a step in flight finishes first)
  TrainingSession(const TrainingSession&) = delete;
  TrainingSession& operator=(const TrainingSession&) = delete;

  // Stops any run and starts a new one, paused at step 0 (or at the checkpoint's step). The view
  // it publishes has the settings, task and probe but no history yet: the evaluation of the
  // starting parameters is the thread's first job (before any step; a held frame delays it like a
  // step) and is published as history[0] — a window's Train click never waits for it.
  // Invalid settings: the error, and the previous run stays as it was.
  Status reset(TrainSettings s, int evalEvery, const std::optional<Checkpoint>& init = std::nullopt);
  bool started() const;

  void play();           // run until settings.steps, pause() or a failure
  void pause();          // returns once no step is in flight
  void step(int n = 1);  // n more steps, then pause (ignored while running or finished)
  // A window about to draw a frame (with a software renderer the frame needs every core): no
  // new step starts until releaseSteps() or `maxSeconds` from now, whichever comes first; a step
  // in flight finishes. The hold costs the run wall time, not time inside the steps.
  void holdSteps(double maxSeconds);
  void releaseSteps();

  // The latest view (never null after a successful reset(); null before).
  std::shared_ptr<const SessionView> view() const;
  // The current parameters as a checkpoint (waits for a step in flight to finish).
  std::optional<Checkpoint> checkpoint() const;
  // Other limits for the kept parameters and pictures than the defaults above (tests; call before reset).
  void keepWithin(std::size_t paramsBytes, std::size_t snapshotsBytes);

 private:
  void loop();
  void publishLocked(bool evaluated);
  void stopThread();

  mutable std::mutex m_;
  mutable std::condition_variable cv_;
  std::thread thread_;
  std::unique_ptr<Trainer> trainer_;
  int evalEvery_ = kDefaultEvalEvery;
  std::size_t paramsBudget_ = kParamsBudgetBytes, snapshotsBudget_ = kSnapshotsBudgetBytes;
  RunState state_ = RunState::Paused;
  int stepsWanted_ = 0;
  bool busy_ = false;     // the worker is inside a step or an evaluation (trainer_ must not be read)
  bool firstEvaluation_ = false;  // reset() done, its evaluation not yet
  bool quit_ = false;
  std::string error_;
  double trainLoss_ = 0;
  bool trainLossKnown_ = false;
  std::shared_ptr<const SessionView> view_;
  std::chrono::steady_clock::time_point windowStart_{}, lastPublish_{};
  std::chrono::steady_clock::time_point holdUntil_{};  // holdSteps(): no step starts before it
  std::int64_t windowSteps_ = 0;
  double stepsPerSecond_ = 0;
  std::chrono::steady_clock::time_point playedAt_{};
  std::int64_t runSteps_ = 0;
  double runStepSeconds_ = 0, runWallSeconds_ = 0;
};

}  // namespace mhascope::train
