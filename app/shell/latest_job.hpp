// One background thread that runs the newest submitted job: while a job runs, a newer submit
// replaces the queued one, and only the last finished result waits for take(). The recomputing
// lessons run here. (The trace has its own ComputeWorker: it also hands trace buffers back and
// forth for reuse, which a plain job cannot do without a second lock and a race between them.)
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

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
    }
  }

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::function<Out()> pending_;
  bool running_ = false;
  bool stop_ = false;
  std::optional<Out> done_;
  std::thread thread_;  // last: started after every member above exists
};

}  // namespace mhascope::app
