// `mhascope train`: trains the tiny transformer of core/train on a task, prints progress (a bar
// on a terminal, plain lines otherwise), saves checkpoints (also on Ctrl-C and when the loss
// turns NaN: the last good parameters), writes a CSV log and ends with a table of head roles.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

namespace mhascope::cli {

struct TrainArgs {
  std::string task = "induction";
  int layers = 2, heads = 2, dModel = 64, vocab = 64, seq = 32, batch = 16;
  bool mlp = false;
  std::int64_t steps = 1500;
  float lr = 1e-3f, weightDecay = 1e-4f;
  double clip = 0;
  std::uint64_t seed = 1;
  int evalEvery = 50;
  int periodMin = 6, periodMax = 16;
  std::string text, save, log, init;
  std::string workspace;  // refused with the reason (cli.cpp): train makes a model, a workspace shows one
};

CLI::App* addTrainCommand(CLI::App& app, TrainArgs& a);
int cmdTrain(const TrainArgs& a);

// `mhascope bench --train`: on the reference setting (induction, 2 layers attention-only,
// d_model 64, h 2, vocab 64, T 32, batch 16, AdamW lr 1e-3 wd 1e-4, period 6-16): our median time
// per step; PyTorch's on the same model, init and batches when /usr/bin/python3 has torch; then,
// per seed, the time until the induction circuit forms (probe loss < 0.5, a layer-0 head with
// previous-token score > 0.3, a layer-1 head with induction score > 0.3) within budgetSeconds,
// and the 1-layer control.
int cmdBenchTrain(int seeds, double budgetSeconds, int speedSteps);

}  // namespace mhascope::cli
