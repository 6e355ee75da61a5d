// Runs the engine off the UI thread for configurations too big to finish within a frame.
// Latest request wins: while one job runs, newer requests replace the queued one; the UI keeps
// showing the previous good trace until a result arrives, so it never freezes or goes blank.
//
// Memory: at most two recorded traces exist at once for long sequences — the one on screen and
// the one being computed. A finished result waits (one frame) until the UI takes it, and a
// replaced trace larger than kKeepTraceBytes stays on the worker as the next job's buffers for
// kSpareKeepSeconds and is then freed there (unmapping gigabytes takes long enough to drop
// frames), so a window idle for that long holds one trace.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "attention/model.hpp"
#include "attention/trace.hpp"
#include "lessons/lessons.hpp"
#include "model_source/model_source.hpp"
#include "shell/jobs.hpp"
#include "state/compute_status.hpp"  // FirstHead, ComputeProgress

namespace mhascope::app {

// Traces up to this size keep their buffers for the next compute (reuse saves the allocation,
// ~45 % of a forward at T = 512); larger ones only for kSpareKeepSeconds after they are replaced.
inline constexpr std::uint64_t kKeepTraceBytes = 256ull << 20;
// A replaced larger trace stays on the worker as the next job's buffers for this long, then is
// freed: a change at T = 4096 then writes over 2.1 GiB that is already mapped (0.4 s) instead of
// having the kernel clear fresh pages (≈ 5 s here). Meanwhile the window holds two traces, which
// its memory estimate counts anyway.
inline constexpr double kSpareKeepSeconds = 20.0;

// Traces whose (T_q, T_k) tables hold more than this get a first picture: the viewed head alone
// (attentionHead), computed and shown before the whole trace. At T = 4096, h = 8 the whole trace
// is 1.1 GiB of new memory, which this machine's host took 1.5-2.5 s to back; the one head is
// 1/8 of a table.
inline constexpr std::uint64_t kFirstHeadTableBytes = 256ull << 20;

// Which head the window shows, for a big job's first picture.
struct ViewedHead {
  StageId stage = StageId::Weights;  // first pictures are made for the four (T_q, T_k) stages only
  int batch = 0, head = 0;           // clamped to the new sizes
};

// What to compute: config + files through the model source the CLI shares, or a trained layer
// already in memory (the Train mode's "Open in pipeline").
struct ComputeRequest {
  ModelRequest source;
  std::shared_ptr<const SourcedModel> trainedLayer;  // set: used as is, source ignored
  std::optional<ViewedHead> firstHead;               // set: a big job shows this head first
};

struct ComputeOutcome {
  std::uint64_t requestId = 0;
  bool ok = false;
  std::string error;  // engine/validation message or a caught exception
  double milliseconds = 0.0;
  int threads = 1;     // the forward's threads (computeThreads()): results equal one thread's
  ModelConfig config;  // what was computed (sizes and bias as the files decided them)
  bool seedUsed = true;      // for the subtitle (configSummary)
  std::string describeNote;  // "; trained layer 1 of 2 (…)"
  std::shared_ptr<const Model> model;  // its inputs and weights: the lessons recompute from them
  // Set when the pass is a model forward's record (a latent layer: `model` has no W_q, W_k, W_v): why what re-runs
  // the layer (the Rerun lessons, the lessons that read the weights) refuses.
  std::string rerunRefusal;
  std::vector<QuizQuestion> quiz;      // the quiz lesson's questions about this trace
};

// Where a running job is, written by computeTrace and read by the UI thread.
struct JobStatus {
  std::atomic<int> phase{0};      // ComputePhase
  std::atomic<double> flops{0.0}; // of the forward under way, once the sizes are known
  // A model folder's layers run before the one shown (layers = 0: not a model folder's job).
  std::atomic<int> layersDone{0}, layers{0};
  // Set when a newer request came: a model folder's forward stops at its next layer (latest wins).
  std::atomic<bool> superseded{false};
};

// Threads a window's forward uses: the machine's cores (1 … 64). The engine's results are
// bit-identical to one thread's, so the window shows the CLI's numbers, only sooner.
int computeThreads();

// The model (modelFromSource: reading its files here, on the worker for big jobs) + forward into
// `trace` (reusing its buffers) + the quiz of the result, timing the forward; never throws.
// `status` (may be null) follows the work, and its `superseded` stops a model folder's forward
// between layers (the outcome's error is then "cancelled"). With request.firstHead set and tables over
// kFirstHeadTableBytes, the viewed head is computed alone first and handed to `firstHead`.
ComputeOutcome computeTrace(const ComputeRequest& request, std::uint64_t requestId, Trace& trace,
                            JobStatus* status = nullptr,
                            const std::function<void(std::shared_ptr<const FirstHead>)>& firstHead = {});

// Bytes the recorded tensors of a trace hold (its stages, weights and mask flags).
std::uint64_t traceBytes(const Trace& trace);

// The trace's job: a LatestJob (shell/jobs.hpp) whose results hold their trace, one result at a
// time, with the buffers handed back and forth for reuse and big ones freed on the job's thread.
class ComputeWorker {
 public:
  ComputeWorker();
  ~ComputeWorker();  // a model folder's forward stops at its next layer; then the job's thread joins
  ComputeWorker(const ComputeWorker&) = delete;
  ComputeWorker& operator=(const ComputeWorker&) = delete;

  // Called on the worker thread when a result waits for take(): wakes the UI's loop, which
  // sleeps between the progress line's frames, so the picture follows the forward at once.
  void setResultReady(std::function<void()> wake);
  void submit(const ComputeRequest& request, std::uint64_t requestId);
  // When a job has finished, swaps its trace into `trace` (what `trace` held goes to the worker
  // as the next job's buffers) and returns the outcome. On failure `trace` is left untouched.
  std::optional<ComputeOutcome> take(Trace& trace);
  // The running job's first picture, once (null: none new).
  std::shared_ptr<const FirstHead> takeFirstHead();
  // A trace the UI no longer shows: when larger than kKeepTraceBytes it is moved to the worker
  // and freed there (`trace` is left empty); a small one stays for reuse. Either way it lets go
  // of its weights (shared with the replaced model, which it would keep alive).
  void releaseLater(Trace& trace);
  bool busy() const;
  ComputeProgress progress() const;

 private:
  struct Result {
    ComputeOutcome outcome;
    Trace trace;  // the job's buffers, holding the result when the outcome is ok
  };
  Result run(const ComputeRequest& request, std::uint64_t requestId, const std::shared_ptr<JobStatus>& status);
  void freeOnWorker(Trace trace);

  std::shared_ptr<JobStatus> latest_;  // the last submitted job's (UI thread only)
  // Shared by the UI thread and the job's thread:
  mutable std::mutex mutex_;
  Trace spare_;                                       // the next job's buffers
  std::chrono::steady_clock::time_point spareSince_;  // when a big spare was kept
  std::shared_ptr<const FirstHead> firstHead_;        // set: a first picture waits for takeFirstHead()
  std::shared_ptr<const JobStatus> running_;          // the job under way (null: none)
  std::chrono::steady_clock::time_point startedAt_;
  double lastFlopsPerSecond_ = 0.0;
  std::function<void()> resultReady_;
  LatestJob<Result> job_{LatestJobOptions{true}};  // last: its thread joins before the above go
};

}  // namespace mhascope::app
