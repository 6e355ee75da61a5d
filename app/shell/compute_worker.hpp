// Runs the engine off the UI thread for configurations too big to finish within a frame.
// Latest request wins: while one job runs, newer requests replace the queued one; the UI keeps
// showing the previous good trace until a result arrives, so it never freezes or goes blank.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "attention/model.hpp"
#include "attention/trace.hpp"
#include "lessons/lessons.hpp"

namespace mhascope::app {

struct ComputeOutcome {
  std::uint64_t requestId = 0;
  bool ok = false;
  std::string error;  // engine/validation message or a caught exception
  double milliseconds = 0.0;
  ModelConfig config;  // what was computed
  std::shared_ptr<const Model> model;  // its inputs and weights: the lessons recompute from them
  std::vector<QuizQuestion> quiz;      // the quiz lesson's questions about this trace
};

// buildModel + forward into `trace` (reusing its buffers) + the quiz of the result, timing
// it; never throws.
ComputeOutcome computeTrace(const ModelConfig& config, std::uint64_t requestId, Trace& trace);

class ComputeWorker {
 public:
  ComputeWorker();
  ~ComputeWorker();  // finishes the running job (it cannot be interrupted) and joins
  ComputeWorker(const ComputeWorker&) = delete;
  ComputeWorker& operator=(const ComputeWorker&) = delete;

  void submit(const ModelConfig& config, std::uint64_t requestId);
  // When a job has finished, swaps its trace into `trace` (the old one goes back to the worker
  // for buffer reuse) and returns the outcome. On failure `trace` is left untouched.
  std::optional<ComputeOutcome> take(Trace& trace);
  bool busy() const;

 private:
  void run();

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::optional<std::pair<ModelConfig, std::uint64_t>> pending_;  // newest request only
  bool running_ = false;
  bool stop_ = false;
  Trace working_;                           // the worker thread's own buffers
  Trace finished_;                          // the last finished result, waiting for take()
  std::optional<ComputeOutcome> outcome_;
  std::thread thread_;  // last: started after every member above exists
};

}  // namespace mhascope::app
