#include "shell/compute_worker.hpp"

#include <chrono>
#include <exception>
#include <new>
#include <utility>

namespace mhascope::app {

ComputeOutcome computeTrace(const ModelConfig& config, std::uint64_t requestId, Trace& trace) {
  ComputeOutcome out;
  out.requestId = requestId;
  out.config = config;
  const auto t0 = std::chrono::steady_clock::now();
  try {
    auto model = buildModel(config, MemoryUse::app());
    if (!model) {
      out.error = model.error().message;
    } else if (auto st = forward(model->inputs, model->weights, model->options, trace); !st) {
      out.error = st.error().message;
    } else {
      // "last compute" is the forward pass as before; the quiz comes after the clock stops.
      out.milliseconds = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      out.model = std::make_shared<const Model>(std::move(model).value());
      out.quiz = makeQuiz(trace, out.model->weights);
      out.ok = true;
    }
  } catch (const std::bad_alloc&) {
    out.error = "out of memory while computing this configuration; try fewer tokens, heads or batch items";
  } catch (const std::exception& e) {
    out.error = std::string("compute failed: ") + e.what();
  }
  if (!out.ok) out.milliseconds = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

ComputeWorker::ComputeWorker() : thread_([this] { run(); }) {}

ComputeWorker::~ComputeWorker() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void ComputeWorker::submit(const ModelConfig& config, std::uint64_t requestId) {
  {
    std::lock_guard lock(mutex_);
    pending_ = std::make_pair(config, requestId);  // replaces any older queued request
  }
  wake_.notify_one();
}

std::optional<ComputeOutcome> ComputeWorker::take(Trace& trace) {
  std::lock_guard lock(mutex_);
  if (!outcome_) return std::nullopt;
  std::optional<ComputeOutcome> out = std::move(outcome_);
  outcome_.reset();
  if (out->ok) std::swap(trace, finished_);
  return out;
}

bool ComputeWorker::busy() const {
  std::lock_guard lock(mutex_);
  return running_ || pending_.has_value();
}

void ComputeWorker::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return stop_ || pending_.has_value(); });
    if (stop_) return;
    auto [config, id] = std::move(*pending_);
    pending_.reset();
    running_ = true;
    lock.unlock();
    ComputeOutcome out = computeTrace(config, id, working_);  // the long part, unlocked
    lock.lock();
    running_ = false;
    if (out.ok) std::swap(working_, finished_);  // the older buffers come back for reuse
    outcome_ = std::move(out);
  }
}

}  // namespace mhascope::app
