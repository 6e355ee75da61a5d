// The attention's query block size, measured once per process (block_rows.hpp).
#include "kernels/block_rows.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "kernels/head_kernels.hpp"
#include "kernels/row_kernels.hpp"
#include "attention/tensor.hpp"

namespace mhascope {
namespace {

// One head's attention as attendRows runs it — the scores with the scale and the row maxima
// (the recorded scores streamed out), each row's softmax, then A V — for T_q = 256 query rows
// against T_k = 2048 keys of d_k = 64, in blocks of `rows`, ~67 MFLOP. Each run writes its scores
// and weights (2 MiB each) into the next two chunks of the scratch, 64 MiB in all, so that a run
// finds its tables as cold as a big forward does: with the same tables every run (in the caches)
// the two sizes measured the same on the Intel Xeon, with 64 MiB in turn 64 rows took 0.79x the time.
struct Workload {
  static constexpr std::int64_t Tq = 256, Tk = 2048, dk = 64, kChunk = Tq * Tk, kChunks = 32;
  FloatBuffer q, k, kPacked, v, out;
  std::vector<float*> chunks;
  std::size_t next = 0;
  explicit Workload(std::vector<float*> c)
      : q(Tq * dk), k(Tk * dk), kPacked(packedKeysFloats(Tk, dk)), v(Tk * dk), out(Tq * dk), chunks(std::move(c)) {
    for (std::size_t i = 0; i < q.size(); ++i) q[i] = static_cast<float>(i % 19) * 0.01f - 0.09f;
    for (std::size_t i = 0; i < k.size(); ++i) k[i] = static_cast<float>(i % 23) * 0.01f - 0.11f;
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 29) * 0.01f - 0.14f;
    packKeyChunks(k.data(), Tk, dk, 0, Tk / 64, kPacked.data());  // once, as the forward does (packKeysFor)
  }
  double seconds(std::int64_t rows) {
    float* scores = chunks[next % chunks.size()];
    float* weights = chunks[(next + 1) % chunks.size()];
    next += 2;
    const auto t0 = std::chrono::steady_clock::now();
    BlockedKeys none[kMaxQueryBlock];
    float rowMax[kMaxQueryBlock];
    for (std::int64_t q0 = 0; q0 < Tq; q0 += rows) {
      const std::int64_t nq = std::min(rows, Tq - q0);
      scoresBlock(q.data() + q0 * dk, k.data(), nq, Tk, dk, 0.125f, none, scores + q0 * Tk, weights + q0 * Tk, Tk,
                  rowMax, kPacked.data());
      for (std::int64_t r = 0; r < nq; ++r) {
        float* row = weights + (q0 + r) * Tk;
        softmaxRow(row, rowMax[r], none[r], false, row, Tk);
      }
      weightedSumBlock(weights + q0 * Tk, Tk, v.data(), nq, Tk, dk, out.data() + q0 * dk, dk);
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
};

// The scratch cut into whole chunks (each starts 64-byte aligned when its span does: a chunk is 2 MiB).
std::vector<float*> chunksOf(std::initializer_list<ScratchSpan> scratch) {
  std::vector<float*> out;
  for (const ScratchSpan& s : scratch) {
    for (std::int64_t at = 0; s.data && at + Workload::kChunk <= s.floats; at += Workload::kChunk) {
      out.push_back(s.data + at);
    }
  }
  return out;
}

std::mutex choiceMutex;
QueryBlockChoice choice;  // guarded by choiceMutex
bool decided = false;     // measured or set

// Under choiceMutex. Decides unless the scratch is too small to measure.
void decide(std::initializer_list<ScratchSpan> scratch) {
  if (const char* env = std::getenv("MHASCOPE_QUERY_BLOCK")) {
    if (std::strcmp(env, "64") == 0 || std::strcmp(env, "128") == 0) {
      choice.rows = std::atoi(env);
      choice.how = std::string("MHASCOPE_QUERY_BLOCK=") + env;
      decided = true;
      return;
    }
  }
  if (!headKernelsEnabled()) {  // blocks on sgemm: the size they were tuned at, not measured
    choice.rows = kMaxQueryBlock;
    choice.how = "general path: no head kernels";
    decided = true;
    return;
  }
  std::vector<float*> chunks = chunksOf(scratch);
  if (static_cast<std::int64_t>(chunks.size()) < Workload::kChunks) return;
  chunks.resize(Workload::kChunks);
  Workload w(std::move(chunks));
  w.seconds(128);  // first use of the code and the small buffers
  w.seconds(64);
  double best64 = 1e30, best128 = 1e30;
  for (int round = 0; round < 4; ++round) {  // interleaved, each one's best: a burst of load decides nothing
    best128 = std::min(best128, w.seconds(128));
    best64 = std::min(best64, w.seconds(64));
  }
  choice.seconds64 = best64;
  choice.seconds128 = best128;
  // 64 only when clearly faster: 128 is the size everything else was tuned at, and a tie is noise.
  choice.rows = best64 < 0.95 * best128 ? 64 : 128;
  choice.how = "measured";
  decided = true;
}

}  // namespace

QueryBlockChoice queryBlockChoice() {
  std::lock_guard<std::mutex> lock(choiceMutex);
  return choice;
}

std::int64_t queryBlockRows() { return queryBlockChoice().rows; }

std::int64_t queryBlockRows(std::initializer_list<ScratchSpan> scratch) {
  std::lock_guard<std::mutex> lock(choiceMutex);
  if (!decided) decide(scratch);
  return choice.rows;
}

bool setQueryBlockRows(std::int64_t rows) {
  if (rows != 64 && rows != 128) return false;
  std::lock_guard<std::mutex> lock(choiceMutex);
  choice = QueryBlockChoice{};
  choice.rows = rows;
  choice.how = "set by the program";
  decided = true;
  return true;
}

std::int64_t projectionBlockRows(std::int64_t rows) { return rows >= 2048 ? 1024 : rows >= 1024 ? 512 : 256; }

int threadsWorthStarting(int wanted, double flops) {
  if (wanted <= 1 || flops < 4e6) return 1;
  return std::min(wanted, 64);
}

}  // namespace mhascope
