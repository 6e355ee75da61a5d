// The window's one way to run work off the UI thread.
//   LatestJob<Out>  one background thread that runs the newest submitted job: while a job runs, a
//                   newer submit replaces the queued one, and only the last finished result waits
//                   for take(). The recomputing lessons and the Train mode's jobs run on one.
//   KeyedJob<K, R>  a LatestJob driven from the app's update step for one JobSlot
//                   (state/job_slot.hpp): latest request wins (a changed key cancels the running
//                   job and starts the new one), progress and cancel through the job's ticket, the
//                   previous result kept with the error beside it, failed or cancelled inputs
//                   remembered and not rerun by themselves. The Model tab, the model Circuits tab
//                   and the checkpoint Circuits tab run on one.
// (The trace has its own ComputeWorker: it also hands trace buffers back and forth for reuse,
// which a plain job cannot do without a second lock and a race between them.)
// Jobs are started from the update step only, never from a draw call: a panel reads the slot.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include "state/job_slot.hpp"

namespace mhascope::app {

template <class Out>
class LatestJob {
 public:
  LatestJob() : thread_([this] { run(); }) {}
  ~LatestJob() {  // finishes the running job (it cannot be interrupted) and joins
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  LatestJob(const LatestJob&) = delete;
  LatestJob& operator=(const LatestJob&) = delete;

  // The job must not throw (catch inside it) and must own or share everything it reads.
  void submit(std::function<Out()> job) {
    {
      std::lock_guard lock(mutex_);
      pending_ = std::move(job);
    }
    wake_.notify_one();
  }
  std::optional<Out> take() {
    std::lock_guard lock(mutex_);
    std::optional<Out> out = std::move(done_);
    done_.reset();
    return out;
  }
  bool busy() const {
    std::lock_guard lock(mutex_);
    return running_ || static_cast<bool>(pending_);
  }
  // Blocks until nothing runs or waits to run (tests; the window polls take() instead).
  void waitUntilIdle() {
    std::unique_lock lock(mutex_);
    idle_.wait(lock, [this] { return !running_ && !pending_; });
  }

 private:
  void run() {
    std::unique_lock lock(mutex_);
    for (;;) {
      wake_.wait(lock, [this] { return stop_ || static_cast<bool>(pending_); });
      if (stop_) return;
      std::function<Out()> job = std::move(pending_);
      pending_ = nullptr;
      running_ = true;
      lock.unlock();
      Out out = job();  // the long part, unlocked
      lock.lock();
      running_ = false;
      done_ = std::move(out);
      if (!pending_) idle_.notify_all();
    }
  }

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable idle_;
  std::function<Out()> pending_;
  bool running_ = false;
  bool stop_ = false;
  std::optional<Out> done_;
  std::thread thread_;  // last: started after every member above exists
};

// How KeyedJob::request treats the running job and an idle source.
struct JobRule {
  bool hold = false;           // a running job goes on even when the wanted key differs (the
                               // inputs are about to change back, e.g. an open not yet accepted)
  bool clearWhenIdle = false;  // nothing wanted: the shown result goes too (else it stays)
  bool sync = false;           // run here, now (tests, screenshots: this frame's picture)
};

template <class Key, class Result, class Ticket = JobTicket>
class KeyedJob {
 public:
  using Slot = JobSlot<Key, Result, Ticket>;
  using Outcome = typename Slot::Outcome;
  // The job: runs on the worker (or here when sync); must not throw and must own what it reads.
  using Work = std::function<Outcome(const std::shared_ptr<Ticket>&)>;

  KeyedJob() = default;
  ~KeyedJob() {  // the running job stops at its next step; then the worker joins
    if (running_) running_->cancel = true;
  }
  KeyedJob(const KeyedJob&) = delete;
  KeyedJob& operator=(const KeyedJob&) = delete;

  // Called on the worker's thread when a job ends (wakes the loop, which may be asleep).
  void setWake(std::function<void()> wake) { wake_ = std::move(wake); }
  const std::function<void()>& wake() const { return wake_; }

  // A finished job's outcome into `s`; `seen` (may be empty) looks at it first. Returns whether
  // the shown result was replaced.
  bool collect(Slot& s, const std::function<void(const Outcome&)>& seen = {}) {
    std::optional<Outcome> out = worker_.take();
    if (!out) return false;
    if (seen) seen(*out);
    return s.apply(std::move(*out));
  }

  // Starts the job of `want` (nullopt: nothing is wanted) unless it is running, shown, or stopped.
  // `makeWork(key)` is called only when a job starts and returns its Work.
  template <class MakeWork>
  void request(Slot& s, const std::optional<Key>& want, const MakeWork& makeWork, const JobRule& rule = {}) {
    if (s.job) {
      if (want && s.jobKey == *want) return;  // the running job is the wanted one
      if (rule.hold) return;
      s.job->cancel = true;  // latest wins: it stops at its next step, its outcome is dropped
      s.job.reset();
    }
    if (!want) {
      if (rule.clearWhenIdle) s.clearResult();
      return;
    }
    if (s.result && s.resultKey == *want) {  // back to what is on screen
      s.error.clear();
      s.cancelled = false;
      return;
    }
    if (s.stoppedKey && *s.stoppedKey == *want) {  // said again, not rerun
      s.error = s.stoppedError;
      s.cancelled = s.stoppedError.empty();
      return;
    }
    auto ticket = std::make_shared<Ticket>();
    s.job = ticket;
    s.jobKey = *want;
    s.cancelled = false;
    s.error.clear();  // about other inputs: the new job's own outcome says what happened to these
    running_ = ticket;
    Work work = makeWork(*want);
    if (rule.sync) {
      Outcome out = work(ticket);
      out.ticket = ticket;
      s.apply(std::move(out));
      return;
    }
    worker_.submit([work = std::move(work), ticket, wake = wake_] {
      Outcome out = work(ticket);
      out.ticket = ticket;  // marks it as this job's: a replaced job's outcome is dropped
      if (wake) wake();
      return out;
    });
  }

  bool busy() const { return worker_.busy(); }

 private:
  std::function<void()> wake_;
  std::shared_ptr<Ticket> running_;  // the last job handed to the worker
  LatestJob<Outcome> worker_;        // last: its thread starts after the members above exist
};

}  // namespace mhascope::app
