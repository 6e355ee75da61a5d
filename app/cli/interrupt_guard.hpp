// How the command line's long loops (train, bench --train, run --dump) stop on a signal: while an
// InterruptGuard lives, the signals it was given only record themselves, and the loop checks
// InterruptGuard::received() between steps, cleans up (removes its temporary files, or saves) and
// decides how to end. The guard's scope puts back whatever handled those signals before it.
#pragma once

#include <csignal>
#include <initializer_list>
#include <vector>

namespace mhascope::cli {

// Written only by the handler, which does nothing else: a sig_atomic_t is all a handler may touch.
inline volatile std::sig_atomic_t gInterruptSignal = 0;
extern "C" inline void onInterruptSignal(int sig) { gInterruptSignal = sig; }

class InterruptGuard {
 public:
  // `recorded`: the signals that only set received() while the guard lives; `ignored`: signals
  // ignored meanwhile. received() starts at 0.
  explicit InterruptGuard(std::initializer_list<int> recorded, std::initializer_list<int> ignored = {}) {
    gInterruptSignal = 0;
    struct sigaction record {};
    record.sa_handler = onInterruptSignal;
    sigemptyset(&record.sa_mask);
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    for (int sig : recorded) install(sig, record);
    for (int sig : ignored) install(sig, ignore);
  }
  ~InterruptGuard() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) sigaction(it->sig, &it->old, nullptr);
  }
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

  // The last recorded signal, or 0 when none came.
  static int received() { return gInterruptSignal; }

 private:
  struct Saved {
    int sig = 0;
    struct sigaction old {};
  };
  void install(int sig, const struct sigaction& action) {
    Saved s;
    s.sig = sig;
    if (sigaction(sig, &action, &s.old) == 0) saved_.push_back(s);
  }
  std::vector<Saved> saved_;  // in the order installed; put back in reverse
};

}  // namespace mhascope::cli
