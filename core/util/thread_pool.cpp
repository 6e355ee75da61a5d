// The pool behind parallelFor: jobs wait in a queue until as many pool threads as they asked for
// have joined them; the caller works on its own job meanwhile and waits at the end only for the
// pool threads that joined. Process-wide (one pool for the engine and the trainer, on whichever
// thread calls), so it is the one static object here; its destructor, at exit, stops the
// threads and joins them.
// Tried and dropped: pool threads and callers polling ~50 us before sleeping (to skip the
// wake-up between a forward's sections) was slower with the machine loaded (a 2-index job of
// 50 us: ~240 us per call against ~200 us sleeping at once, load 8-9), and a poll that yields
// much slower still.
#include "util/thread_pool.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <limits>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace mhascope {
namespace {

struct Job {
  const std::function<void(std::int64_t)>* fn = nullptr;
  std::int64_t n = 0;
  std::atomic<std::int64_t> next{0};  // the next index to hand out
  int seats = 0;                      // pool threads still wanted (under Pool::mutex)
  int inside = 0;                     // pool threads working on it (under Pool::mutex)
  std::mutex errorMutex;
  std::exception_ptr error;  // thrown by the lowest index that threw
  std::int64_t errorAt = std::numeric_limits<std::int64_t>::max();

  void work() {
    for (std::int64_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) {
      try {
        (*fn)(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(errorMutex);
        if (i < errorAt) {
          error = std::current_exception();
          errorAt = i;
        }
        next.store(n);  // hand out no more
      }
    }
  }
};

class Pool {
 public:
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : threads_) t.join();
  }

  void run(int helpers, Job& job) {
    int seats = 0;  // job.seats changes under the lock as pool threads join
    {
      std::lock_guard<std::mutex> lock(mutex_);
      grow(helpers);
      seats = job.seats = std::min(helpers, static_cast<int>(threads_.size()));
      if (seats > 0) queue_.push_back(&job);
    }
    if (seats == 1) wake_.notify_one();
    else if (seats > 1) wake_.notify_all();
    job.work();
    std::unique_lock<std::mutex> lock(mutex_);
    const auto queued = std::find(queue_.begin(), queue_.end(), &job);  // seats nobody took: none will now
    if (queued != queue_.end()) queue_.erase(queued);
    done_.wait(lock, [&job] { return job.inside == 0; });
  }

  int size() {
    std::lock_guard<std::mutex> lock(mutex_);
    return static_cast<int>(threads_.size());
  }

 private:
  // Under mutex_. When the system refuses a thread the pool stays smaller: callers do the rest.
  void grow(int wanted) {
    try {
      while (static_cast<int>(threads_.size()) < wanted) threads_.emplace_back([this] { loop(); });
    } catch (const std::system_error&) {
    }
  }

  void loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      wake_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      Job* job = queue_.front();
      if (--job->seats == 0) queue_.pop_front();
      ++job->inside;
      lock.unlock();
      job->work();
      lock.lock();
      if (--job->inside == 0) done_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;  // a job was queued, or stop
  std::condition_variable done_;  // a job's last pool thread left it
  std::deque<Job*> queue_;        // jobs with seats left
  std::vector<std::thread> threads_;
  bool stop_ = false;
};

Pool& pool() {
  static Pool p;
  return p;
}

}  // namespace

void parallelFor(int threads, std::int64_t n, const std::function<void(std::int64_t)>& fn) {
  const std::int64_t workers = std::max<std::int64_t>(1, std::min<std::int64_t>({threads, n, 64}));
  if (workers == 1) {
    for (std::int64_t i = 0; i < n; ++i) fn(i);
    return;
  }
  Job job;
  job.fn = &fn;
  job.n = n;
  pool().run(static_cast<int>(workers - 1), job);
  if (job.error) std::rethrow_exception(job.error);
}

int poolThreads() { return pool().size(); }

}  // namespace mhascope
