// `mhascope bench`: one forward with full recording, timed against a GEMM of the same FLOPs on the
// GEMM the engine uses (Eigen's, or OpenBLAS's with MHASCOPE_GEMM=openblas: attention/gemm.hpp).
// `mhascope bench --model DIR`: the whole model's forward with every layer's attention recorded.
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
  bool json = false;   // --model: one JSON object on stdout instead of the text lines
};

// Runs a shell command, appending what it prints to `out`; returns pclose's status (-1: no pipe).
int captureCommand(const std::string& cmd, std::string& out);

// With mo.files.model set and no --layer, times the model folder's whole forward (cmdBenchModel)
// instead; with --layer L, that layer's attention like any other model.
Status cmdBench(const ModelOptions& mo, const BenchArgs& a);

// The whole forward of a Hugging Face model folder (model::runForward, every layer's attention and
// hidden states kept, as the window and `predict` run it) on --text through the folder's tokenizer
// or on --tokens T seeded ids: the open, one untimed first forward, then min and median of
// --repeat forwards and the median split into the layers' attention, their MLPs and the logits.
Status cmdBenchModel(const ModelOptions& mo, const BenchArgs& a);

}  // namespace mhascope::cli
