// How many query rows the forward's attention takes per block (attendRows in engine.cpp): 128 or
// 64, chosen by measuring once per process. Which is faster depends on the CPU's caches, not on
// anything the engine can read off it: some machines run 128-row blocks faster, others 64-row ones
// (docs/performance.md, **Query blocks by measurement**). The rows of a block are computed the same
// way whichever size it has, so the numbers never depend on the choice (with the head kernels or
// Eigen's GEMM; OpenBLAS's own blocking depends on the number of rows it is given).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

namespace mhascope {

constexpr std::int64_t kMaxQueryBlock = 128;  // the larger candidate: the block's per-row arrays are this long

struct QueryBlockChoice {
  std::int64_t rows = kMaxQueryBlock;
  double seconds64 = 0, seconds128 = 0;  // the best round of each, when measured
  std::string how = "not measured yet";  // "measured", "MHASCOPE_QUERY_BLOCK=64", "set by the program",
                                         // "general path: no head kernels"
};

// Rows per block now: the choice made so far, else 128. Never measures (one head alone, small forwards).
std::int64_t queryBlockRows();
// The same for a forward that may measure first: `scratch` are buffers of its own that the measurement
// may overwrite (the forward's scores and weights tables, before it writes them). What makes 64 rows
// faster where they are is tables that do not fit in the caches (docs/performance.md), so the measurement writes
// its tables into 64 MiB of the scratch in turn, and runs only when the scratch holds that much: a
// forward with smaller tables is no faster either way and gets the choice so far (else 128).
// The first call that can measures (~20 ms, thread-safe); later ones return the choice.
struct ScratchSpan {
  float* data;
  std::int64_t floats;
};
std::int64_t queryBlockRows(std::initializer_list<ScratchSpan> scratch);
// The choice as it stands, without measuring.
QueryBlockChoice queryBlockChoice();
// Forces 64 or 128 for the rest of the process (tests compare the two; bench may pin one).
// Returns false, changing nothing, for any other value.
bool setQueryBlockRows(std::int64_t rows);

// Rows per block of a projection X W + b over `rows` rows: 256, 512 from 1024 rows on, 1024 from
// 2048 on (a larger block packs the (d_model, d_model) matrix fewer times; 1024 rows still give two
// blocks per projection for two threads). It depends on the row count only, never on the thread
// count: a GEMM's rounding may depend on its sizes, and the threaded forward must give the same
// bits as the one-thread forward.
std::int64_t projectionBlockRows(std::int64_t rows);
// Threads worth starting for `flops` of work when `wanted` are allowed: none below ~4 MFLOP (a
// thread start costs about what that does), at most 64.
int threadsWorthStarting(int wanted, double flops);

}  // namespace mhascope
