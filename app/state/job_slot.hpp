// What the window keeps of one kind of background work (the UI thread's side of the one job system,
// shell/jobs.hpp): the last good result and what it was made from, the job under way with its
// progress and cancel flag, the last error, and the inputs whose job failed or was cancelled, so
// they are said again rather than rerun by themselves. The previous result stays on screen while a
// new one is computed and when the new one fails: the error is shown beside it. Panels read this;
// only the update step (KeyedJob::collect and KeyedJob::request) changes what runs.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace mhascope::app {

// A running job's progress and cancel flag, shared by the worker (writes done/total, reads cancel)
// and the UI thread (reads done/total, sets cancel).
struct JobTicket {
  std::atomic<int> done{0};
  std::atomic<int> total{0};  // 0: not started its steps yet (reading its inputs)
  std::atomic<bool> cancel{false};
  double progress() const {
    const int t = total.load();
    return t > 0 ? static_cast<double>(done.load()) / t : 0.0;
  }
  // "step 3 of 40", or `before` while there are no steps yet.
  std::string stepText(const std::string& before) const {
    const int t = total.load();
    if (t <= 0) return before;
    return "step " + std::to_string(done.load()) + " of " + std::to_string(t);
  }
  // The core progress callbacks' shape: record (done, total), go on unless cancelled.
  bool step(int d, int t) {
    total = t;
    done = d;
    return !cancel.load();
  }
};

// What a job hands back: its result, or why there is none.
template <class Key, class Result, class Ticket = JobTicket>
struct JobOutcome {
  std::shared_ptr<Ticket> ticket;          // which job this was (a replaced job's outcome is dropped)
  Key key;
  std::shared_ptr<const Result> result;    // null: error or cancelled
  std::string error;
  bool cancelled = false;
};

template <class Key, class Result, class Ticket = JobTicket>
struct JobSlot {
  using Outcome = JobOutcome<Key, Result, Ticket>;

  std::shared_ptr<const Result> result;    // the last good result (null until the first)
  Key resultKey;                           // what it was made from
  std::uint64_t resultSerial = 0;          // ++ whenever `result` is replaced (texture keys)
  std::shared_ptr<Ticket> job;             // the job under way (null when none runs)
  Key jobKey;
  // The last job with these inputs failed or was cancelled: not started again by itself
  // (computeAgain() clears it), so a file that cannot be read is not reread every frame.
  std::optional<Key> stoppedKey;
  std::string stoppedError;                // why ("" = cancelled), said again on a return to them
  std::string error;                       // the last job's error ("" = none); the result stays
  bool cancelled = false;                  // the last job was cancelled

  bool busy() const { return job != nullptr; }
  double progress() const { return job ? job->progress() : 0.0; }
  void requestCancel() {
    if (job) job->cancel = true;
  }
  // "Compute again" / "Run again": the stopped inputs may run once more.
  void computeAgain() {
    stoppedKey.reset();
    stoppedError.clear();
    error.clear();
    cancelled = false;
  }
  // Drops what is shown (the source went away: nothing is said about it any more).
  void clearResult() {
    if (result) ++resultSerial;
    result.reset();
    error.clear();
    cancelled = false;
  }
  // A finished job's outcome, on the UI thread: a result replaces the shown one; an error or a
  // cancel keeps it and remembers the inputs. Returns whether the result was replaced.
  bool apply(Outcome out) {
    if (out.ticket != job) return false;  // a replaced job's: its successor is running
    job.reset();
    cancelled = out.cancelled;
    if (out.result) {
      result = std::move(out.result);
      resultKey = std::move(out.key);
      ++resultSerial;
      error.clear();
      // Other inputs that failed or were cancelled stay remembered: going back to them says so
      // again instead of rerunning them because something else succeeded meanwhile.
      if (stoppedKey && *stoppedKey == resultKey) {
        stoppedKey.reset();
        stoppedError.clear();
      }
      return true;
    }
    error = out.cancelled ? std::string() : out.error;
    stoppedKey = std::move(out.key);
    stoppedError = error;
    return false;
  }
  // What the work is doing, in the words every tab uses: "computing: <progress>", "error: …",
  // "cancelled", "ready" (the result is of `want`) or "none".
  std::string status(const Key& want, const std::string& progressWords) const {
    if (busy()) return "computing: " + progressWords;
    if (!error.empty()) return "error: " + error;
    if (cancelled) return "cancelled";
    if (result && resultKey == want) return "ready";
    return "none";
  }
};

}  // namespace mhascope::app
