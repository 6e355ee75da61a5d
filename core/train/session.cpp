// The training thread and its published views.
#include "train/session.hpp"

#include <utility>

namespace mhascope::train {

namespace {
using Clock = std::chrono::steady_clock;

std::size_t bytesOf(const ParamsAtStep& p) { return static_cast<std::size_t>(p.params->count()) * sizeof(float); }
std::size_t bytesOf(const std::shared_ptr<const Snapshot>& s) { return s->weights.size() * sizeof(float); }

// Drops every other entry (the first and the last stay) until the kept entries fit: a long run keeps
// its start, its end and an even spread between, in bounded memory.
template <typename T>
void thin(std::vector<T>& kept, std::size_t budget) {
  if (kept.empty()) return;
  const std::size_t each = bytesOf(kept.front());
  while (kept.size() > 2 && kept.size() * each > budget) {
    std::vector<T> out;
    for (std::size_t i = 0; i < kept.size(); ++i) {
      if (i % 2 == 0 || i + 1 == kept.size()) out.push_back(kept[i]);
    }
    kept = std::move(out);
  }
}
}  // namespace

const char* runStateName(RunState s) {
  switch (s) {
    case RunState::Paused: return "paused";
    case RunState::Running: return "running";
    case RunState::Finished: return "finished";
    case RunState::Failed: return "failed";
  }
  return "?";
}

TrainingSession::~TrainingSession() { stopThread(); }

void TrainingSession::keepWithin(std::size_t paramsBytes, std::size_t snapshotsBytes) {
  std::lock_guard<std::mutex> lock(m_);
  paramsBudget_ = paramsBytes;
  snapshotsBudget_ = snapshotsBytes;
}

void TrainingSession::stopThread() {
  {
    std::lock_guard lk(m_);
    quit_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  quit_ = false;
}

Status TrainingSession::reset(TrainSettings s, int evalEvery, const std::optional<Checkpoint>& init) {
  if (evalEvery < 1) return makeError("evaluate every N steps needs N >= 1, got " + std::to_string(evalEvery));
  auto made = Trainer::make(std::move(s), init);
  if (!made) return made.error();
  stopThread();
  std::lock_guard lk(m_);
  trainer_ = std::make_unique<Trainer>(std::move(*made));
  evalEvery_ = evalEvery;
  state_ = trainer_->stepCount() >= trainer_->settings().steps ? RunState::Finished : RunState::Paused;
  stepsWanted_ = 0;
  busy_ = false;
  error_.clear();
  // A run continued from a checkpoint starts with the checkpoint's last training loss, if saved.
  const auto& h = trainer_->history();
  trainLossKnown_ = !h.empty() && h.back().step == trainer_->stepCount() && h.back().trainLoss.has_value();
  trainLoss_ = trainLossKnown_ ? *h.back().trainLoss : 0.0;
  stepsPerSecond_ = 0;
  runSteps_ = 0;
  runStepSeconds_ = runWallSeconds_ = 0;
  windowSteps_ = 0;
  auto v = std::make_shared<SessionView>();
  v->settings = std::make_shared<const TrainSettings>(trainer_->settings());
  v->task = std::make_shared<const Task>(trainer_->task());
  v->probe = std::make_shared<const Batch>(trainer_->probeBatch());
  v->history = trainer_->history();  // a checkpoint's saved evaluations, shown before the first new one
  v->version = view_ ? view_->version + 1 : 1;
  view_ = std::move(v);
  firstEvaluation_ = true;  // the thread's first job: a window's click never waits for it
  publishLocked(false);     // settings, task and probe, no evaluation yet
  thread_ = std::thread([this] { loop(); });
  return Ok{};
}

bool TrainingSession::started() const {
  std::lock_guard lk(m_);
  return trainer_ != nullptr;
}

void TrainingSession::play() {
  {
    std::lock_guard lk(m_);
    if (!trainer_ || state_ == RunState::Finished || state_ == RunState::Failed) return;
    state_ = RunState::Running;
    windowStart_ = playedAt_ = Clock::now();
    windowSteps_ = 0;
    runSteps_ = 0;
    runStepSeconds_ = runWallSeconds_ = 0;
    publishLocked(false);
  }
  cv_.notify_all();
}

void TrainingSession::pause() {
  std::unique_lock lk(m_);
  if (!trainer_) return;
  if (state_ == RunState::Running) state_ = RunState::Paused;
  stepsWanted_ = 0;
  cv_.wait(lk, [&] { return !busy_; });
  stepsPerSecond_ = 0;
  publishLocked(false);
}

void TrainingSession::step(int n) {
  {
    std::lock_guard lk(m_);
    if (!trainer_ || state_ != RunState::Paused || n < 1) return;
    stepsWanted_ += n;
  }
  cv_.notify_all();
}

void TrainingSession::holdSteps(double maxSeconds) {
  std::lock_guard lk(m_);
  holdUntil_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(maxSeconds));
}

void TrainingSession::releaseSteps() {
  {
    std::lock_guard lk(m_);
    holdUntil_ = {};
  }
  cv_.notify_all();
}

std::shared_ptr<const SessionView> TrainingSession::view() const {
  std::lock_guard lk(m_);
  return view_;
}

std::optional<Checkpoint> TrainingSession::checkpoint() const {
  std::unique_lock lk(m_);
  if (!trainer_) return std::nullopt;
  cv_.wait(lk, [&] { return !busy_; });
  return trainer_->checkpoint();
}

void TrainingSession::loop() {
  std::unique_lock lk(m_);
  for (;;) {
    cv_.wait(lk, [&] { return quit_ || firstEvaluation_ || state_ == RunState::Running || stepsWanted_ > 0; });
    if (quit_) return;
    if (Clock::now() < holdUntil_) {  // holdSteps(): wait for the release or the deadline, then look again
      cv_.wait_until(lk, holdUntil_, [&] { return quit_ || Clock::now() >= holdUntil_; });
      continue;
    }
    if (firstEvaluation_) {  // reset()'s evaluation of the starting parameters, before any step
      busy_ = true;
      lk.unlock();
      auto first = trainer_->evaluate();
      lk.lock();
      busy_ = false;
      firstEvaluation_ = false;
      if (!first) {  // e.g. the probe forward does not fit the engine's budget: the run cannot start
        state_ = RunState::Failed;
        error_ = first.error().message;
        stepsWanted_ = 0;
      }
      publishLocked(static_cast<bool>(first));
      cv_.notify_all();
      continue;
    }
    busy_ = true;
    lk.unlock();
    RunStep turn = runStep(*trainer_, evalEvery_);  // the one loop body and rule (trainer.hpp)
    const double stepSeconds = turn.stepSeconds;
    const Result<LossResult>& r = turn.step;
    const bool last = turn.last;
    const Status& evalError = turn.evaluation;
    const bool evaluated = turn.evaluated();
    lk.lock();
    busy_ = false;
    if (stepsWanted_ > 0) --stepsWanted_;
    if (r) {
      trainLoss_ = r->loss;
      trainLossKnown_ = true;
      ++windowSteps_;
      ++runSteps_;
      runStepSeconds_ += stepSeconds;
      runWallSeconds_ = std::chrono::duration<double>(Clock::now() - playedAt_).count();
    } else {
      state_ = RunState::Failed;
      error_ = r.error().message;
      stepsWanted_ = 0;
    }
    if (r && last) {
      state_ = RunState::Finished;
      stepsWanted_ = 0;
    }
    if (!evalError.ok()) {  // the step is kept; the run stops with the reason
      state_ = RunState::Failed;
      error_ = evalError.error().message;
      stepsWanted_ = 0;
    }
    const bool stopped = state_ != RunState::Running && stepsWanted_ == 0;
    const auto now = Clock::now();
    if (evaluated || stopped || now - lastPublish_ > std::chrono::milliseconds(50)) publishLocked(evaluated);
    cv_.notify_all();  // pause() and checkpoint() wait for !busy_
  }
}

void TrainingSession::publishLocked(bool evaluated) {
  const auto now = Clock::now();
  if (state_ == RunState::Running) {
    const double secs = std::chrono::duration<double>(now - windowStart_).count();
    if (secs >= 0.25 && windowSteps_ > 0) {
      stepsPerSecond_ = static_cast<double>(windowSteps_) / secs;
      windowStart_ = now;
      windowSteps_ = 0;
    }
  }
  auto v = std::make_shared<SessionView>(*view_);
  v->version = view_->version + 1;
  v->state = state_;
  v->step = trainer_->stepCount();
  v->lastStep = trainer_->settings().steps;
  v->stepsPerSecond = state_ == RunState::Running ? stepsPerSecond_ : 0.0;
  v->trainLoss = trainLoss_;
  v->trainLossKnown = trainLossKnown_;
  v->error = error_;
  v->evaluating = firstEvaluation_;
  v->runSteps = runSteps_;
  v->runStepSeconds = runStepSeconds_;
  v->runWallSeconds = runWallSeconds_;
  if (evaluated) {
    v->history = trainer_->history();
    for (Snapshot& s : trainer_->takeSnapshots()) {  // kept once: here, not in the trainer too
      v->snapshots.push_back(std::make_shared<const Snapshot>(std::move(s)));
    }
    thin(v->snapshots, snapshotsBudget_);
    if (v->params.empty() || v->params.back().step != v->step) {
      v->params.push_back({v->step, std::make_shared<const GptParams>(trainer_->params())});
      thin(v->params, paramsBudget_);
    }
  }
  view_ = std::move(v);
  lastPublish_ = now;
}

}  // namespace mhascope::train
