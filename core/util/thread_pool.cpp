// The pool behind parallelFor: jobs wait in a queue until as many pool threads as they asked for
// have joined them; the caller works on its own job meanwhile and waits at the end only for the
// pool threads that joined. Process-wide (one pool for the engine and the trainer, on whichever
// thread calls), so it is the one static object here; its destructor, at exit, stops the
// threads and joins them.
#include "util/thread_pool.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
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

// How long a pool thread that finished a job, or a caller waiting for a pool thread to finish,
// polls before it sleeps on a condition variable: a forward's sections follow each other within
// microseconds, and waking a sleeping thread costs tens of microseconds on a virtual machine.
// (Yielding while it polls made it worse under load: a yielding thread waits behind every other
// runnable one, a sleeping one is woken ahead of them.)
constexpr std::chrono::microseconds kPoll{50};

template <class Done>
bool pollFor(Done done) {
  const auto until = std::chrono::steady_clock::now() + kPoll;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();  // tells the core this is a spin: less power, the sibling thread runs
#endif
  }
  return true;
}

struct Job {
  const std::function<void(std::int64_t)>* fn = nullptr;
  std::int64_t n = 0;
  std::atomic<std::int64_t> next{0};  // the next index to hand out
  int seats = 0;                      // pool threads still wanted (under Pool::mutex)
  std::atomic<int> inside{0};         // pool threads working on it (changed under Pool::mutex)
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
      queued_.store(static_cast<int>(queue_.size()));
    }
    if (seats == 1) wake_.notify_one();
    else if (seats > 1) wake_.notify_all();
    job.work();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      const auto queued = std::find(queue_.begin(), queue_.end(), &job);  // seats nobody took: none will now
      if (queued != queue_.end()) {
        queue_.erase(queued);
        queued_.store(static_cast<int>(queue_.size()));
      }
    }
    // A pool thread leaves the job (inside − 1, under the lock) without touching it afterwards, so
    // once inside is 0 the job may go.
    if (pollFor([&job] { return job.inside.load() == 0; })) return;
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [&job] { return job.inside.load() == 0; });
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
      if (queue_.empty() && !stop_) {
        lock.unlock();
        pollFor([this] { return queued_.load() > 0; });
        lock.lock();
      }
      wake_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      Job* job = queue_.front();
      if (--job->seats == 0) {
        queue_.pop_front();
        queued_.store(static_cast<int>(queue_.size()));
      }
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
  std::atomic<int> queued_{0};    // queue_.size(), for polling without the lock
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
