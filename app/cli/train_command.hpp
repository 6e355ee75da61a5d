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
};

CLI::App* addTrainCommand(CLI::App& app, TrainArgs& a);
int cmdTrain(const TrainArgs& a);

}  // namespace mhascope::cli
