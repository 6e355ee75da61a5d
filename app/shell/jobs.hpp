// The window's one way to run work off the UI thread.
//   LatestJob<Out>  one background thread that runs the newest submitted job: while a job runs, a
//                   newer submit replaces the queued one, and only the last finished result waits
//                   for take(). Options: one result at a time (the next job starts once the last
//                   result is taken, for results that hold big buffers), a callback when a result
//                   is ready (wakes the loop), and chores — work that must run on this thread,
//                   now or at a time (freeing buffers the UI thread should not spend time on).
//                   The pipeline's trace (shell/compute_worker.hpp), the recomputing lessons and
//                   the Train mode's jobs run on one.
//   KeyedJob<K, R>  a LatestJob driven from the app's update step for one JobSlot
//                   (state/job_slot.hpp): latest request wins (a changed key cancels the running
//                   job and starts the new one), progress and cancel through the job's ticket, the
//                   previous result kept with the error beside it, failed or cancelled inputs
//                   remembered and not rerun by themselves. The Model tab, the model Circuits tab
//                   and the checkpoint Circuits tab run on one.
// Jobs are started from the update step only, never from a draw call: a panel reads the slot.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "state/job_slot.hpp"

namespace mhascope::app {

struct LatestJobOptions {
  bool oneResultAtATime = false;  // a job waits to start until the last result was taken
};

template <class Out>
class LatestJob {
 public:
  using Clock = std::chrono::steady_clock;

  explicit LatestJob(LatestJobOptions options = {}) : options_(options), thread_([this] { run(); }) {}
  ~LatestJob() {  // finishes the running job (it cannot be interrupted) and joins; chores not yet
                  // run are dropped here
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  LatestJob(const LatestJob&) = delete;
  LatestJob& operator=(const LatestJob&) = delete;

  // Called on the worker's thread (unlocked) each time a finished job's result waits for take().
  void setOnResult(std::function<void()> onResult) {
    std::lock_guard lock(mutex_);
    onResult_ = std::move(onResult);
  }
  // The job must not throw (catch inside it) and must own or share everything it reads.
  void submit(std::function<Out()> job) {
    {
      std::lock_guard lock(mutex_);
      pending_ = std::move(job);
    }
    wake_.notify_one();
  }
  // Work for this thread that is not a job: runs before the next job starts (or at once when
  // idle), never replaced by a newer submit. `at`: not before then (a chore due later waits
  // while jobs run, and runs between them once due). Must not throw.
  void post(std::function<void()> chore, std::optional<Clock::time_point> at = std::nullopt) {
    {
      std::lock_guard lock(mutex_);
      chores_.push_back({at.value_or(Clock::time_point{}), std::move(chore)});
    }
    wake_.notify_one();
  }
  std::optional<Out> take() {
    std::optional<Out> out;
    {
      std::lock_guard lock(mutex_);
      out = std::move(done_);
      done_.reset();
    }
    if (out && options_.oneResultAtATime) wake_.notify_one();  // a queued job may start now
    return out;
  }
  bool busy() const {
    std::lock_guard lock(mutex_);
    return running_ || static_cast<bool>(pending_);
  }
  bool running() const {  // a job is under way (not only queued)
    std::lock_guard lock(mutex_);
    return running_;
  }
  bool resultWaiting() const {  // a finished job's result waits for take()
    std::lock_guard lock(mutex_);
    return done_.has_value();
  }
  // Blocks until nothing runs or waits to run (tests; the window polls take() instead).
  void waitUntilIdle() {
    std::unique_lock lock(mutex_);
    idle_.wait(lock, [this] { return !running_ && !startable(); });
  }

 private:
  struct Chore {
    Clock::time_point at;
    std::function<void()> work;
  };

  bool startable() const { return static_cast<bool>(pending_) && !(options_.oneResultAtATime && done_); }

  void run() {
    std::unique_lock lock(mutex_);
    for (;;) {
      const auto now = Clock::now();
      auto due = std::find_if(chores_.begin(), chores_.end(), [&](const Chore& c) { return c.at <= now; });
      if (stop_) return;
      if (due != chores_.end()) {
        std::function<void()> chore = std::move(due->work);
        chores_.erase(due);
        lock.unlock();
        chore();  // e.g. unmapping gigabytes: here, not on the UI thread
        chore = nullptr;
        lock.lock();
        continue;
      }
      if (!startable()) {
        auto ready = [this] {
          const auto t = Clock::now();
          return stop_ || startable() ||
                 std::any_of(chores_.begin(), chores_.end(), [&](const Chore& c) { return c.at <= t; });
        };
        if (chores_.empty()) {
          wake_.wait(lock, ready);
        } else {
          const auto next = std::min_element(chores_.begin(), chores_.end(),
                                             [](const Chore& x, const Chore& y) { return x.at < y.at; })->at;
          wake_.wait_until(lock, next, ready);
        }
        continue;
      }
      std::function<Out()> job = std::move(pending_);
      pending_ = nullptr;
      running_ = true;
      lock.unlock();
      Out out = job();  // the long part, unlocked
      job = nullptr;    // what it captured goes here, on this thread
      lock.lock();
      running_ = false;
      done_ = std::move(out);
      if (!startable()) idle_.notify_all();
      if (onResult_) {
        std::function<void()> onResult = onResult_;
        lock.unlock();
        onResult();
        lock.lock();
      }
    }
  }

  const LatestJobOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable idle_;
  std::function<Out()> pending_;
  std::vector<Chore> chores_;
  std::function<void()> onResult_;
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
  void setWake(std::function<void()> wake) {
    wake_ = std::move(wake);
    worker_.setOnResult(wake_);
  }
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
    worker_.submit([work = std::move(work), ticket] {
      Outcome out = work(ticket);
      out.ticket = ticket;  // marks it as this job's: a replaced job's outcome is dropped
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
