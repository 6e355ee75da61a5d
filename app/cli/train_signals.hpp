// What `train` and `bench --train` do on SIGINT/SIGTERM/SIGXFSZ while they train (one guard for
// both: the training loop sees the signal between steps and saves or cleans up).
#pragma once

#include <csignal>

namespace mhascope::cli {

// SIGINT/SIGTERM: the handler only records the signal; the loop sees it between steps, saves
// (the handler stays installed through the final save, so a second Ctrl-C cannot cut the save
// short and leave a temporary file) and exits 128 + the signal. SIGXFSZ (a file-size limit,
// `ulimit -f`) is ignored meanwhile, so a write past the limit fails with EFBIG and its
// temporary file is removed instead of the process being killed.
inline volatile std::sig_atomic_t gStopSignal = 0;
extern "C" inline void onTrainStopSignal(int sig) { gStopSignal = sig; }

class TrainSignalGuard {
 public:
  TrainSignalGuard() {
    gStopSignal = 0;
    struct sigaction sa {};
    sa.sa_handler = onTrainStopSignal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &oldInt_);
    sigaction(SIGTERM, &sa, &oldTerm_);
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    sigaction(SIGXFSZ, &ignore, &oldXfsz_);
  }
  ~TrainSignalGuard() {
    sigaction(SIGINT, &oldInt_, nullptr);
    sigaction(SIGTERM, &oldTerm_, nullptr);
    sigaction(SIGXFSZ, &oldXfsz_, nullptr);
  }
  TrainSignalGuard(const TrainSignalGuard&) = delete;
  TrainSignalGuard& operator=(const TrainSignalGuard&) = delete;
  static int stopSignal() { return gStopSignal; }

 private:
  struct sigaction oldInt_ {}, oldTerm_ {}, oldXfsz_ {};
};

}  // namespace mhascope::cli
