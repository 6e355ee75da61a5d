// `mhascope bench`: one forward with full recording, timed against a GEMM of the same FLOPs on the
// GEMM the engine uses (Eigen's or OpenBLAS's, measured at start-up: attention/gemm.hpp).
#pragma once

#include <string>

#include "model_options.hpp"
#include "util/result.hpp"

namespace mhascope::cli {

struct BenchArgs {
  int repeat = 10;
  int threads = 1;   // the forward's threads; > 1 also times the one-thread forward beside it
  std::string gemm;  // "", "eigen" or "openblas": pin the backend instead of the measured choice
};

Status cmdBench(const ModelOptions& mo, const BenchArgs& a);

}  // namespace mhascope::cli
