// `mhascope bench`: one forward with full recording, timed against a GEMM of the same FLOPs on the
// GEMM the engine uses (Eigen's, or OpenBLAS's with MHASCOPE_GEMM=openblas: attention/gemm.hpp).
#pragma once

#include <string>

#include "model_options.hpp"
#include "util/result.hpp"

namespace mhascope::cli {

struct BenchArgs {
  int repeat = 10;
  int threads = 1;   // the forward's threads; > 1 also times the one-thread forward beside it
  std::string gemm;  // "", "eigen" or "openblas": pin the backend instead of the measured choice
  int rounds = 1;    // rounds of `repeat` runs; the figures are medians over the rounds
  bool torch = false;  // also run scripts/bench_forward_torch.py once per round
  int queryBlock = 0;  // 0: the measured choice; 64 or 128: pin the attention's query block rows
};

// Runs a shell command, appending what it prints to `out`; returns pclose's status (-1: no pipe).
int captureCommand(const std::string& cmd, std::string& out);

Status cmdBench(const ModelOptions& mo, const BenchArgs& a);

}  // namespace mhascope::cli
