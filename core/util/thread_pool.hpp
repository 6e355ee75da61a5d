// parallelFor on one process-wide pool of worker threads, started on first need and kept: the
// engine shares a forward out in several sections (projections, attention blocks, output
// projection), and starting threads for each of them cost more than the sections' imbalance.
#pragma once

#include <cstdint>
#include <functional>

namespace mhascope {

// fn(0) … fn(n − 1), each exactly once, on up to `threads` threads: the caller's and threads − 1
// of the pool's. Indices are handed out one at a time, in order, to whichever thread is free, so
// a thread slowed by another process does not hold the rest up; the work of one index must not
// depend on which thread does it (the engine's results are the same on any number of threads).
// An exception stops the handing out; after every started index has finished, the one thrown by
// the lowest index is rethrown here. Safe to call from several threads at once and from inside fn
// (a caller never waits for a pool thread to become free: it runs the indices nobody took).
void parallelFor(int threads, std::int64_t n, const std::function<void(std::int64_t)>& fn);

// Pool threads started so far (they wait, idle, between calls).
int poolThreads();

}  // namespace mhascope
