// `mhascope train`: trains the tiny transformer of core/train on a task, prints progress (a bar
// on a terminal, plain lines otherwise), saves checkpoints (also on Ctrl-C and when the loss
// turns NaN: the last good parameters), writes a CSV log and ends with a table of head roles.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "train/tasks.hpp"
#include "train/trainer.hpp"

namespace CLI {
class App;
}

namespace mhascope::cli {

struct TrainArgs {
  train::TrainSettings settings;  // the options write straight into it; its defaults are core/train's
  std::string task = train::taskName(train::TaskConfig{}.kind);  // parsed into settings.task.kind
  // Read as text and checked here: a float must hold them (1e-50 would silently become 0).
  std::string lr = "0.001", weightDecay = "0.0001";
  // --positions learned|rope|alibi (parsed into settings.model.positions) and --rope-base (rope only).
  std::string positions = train::trainPositionsName(train::GptConfig{}.positions);
  std::string ropeBase = "10000";
  int evalEvery = train::kDefaultEvalEvery;
  std::string save, log, init;
  std::string timeline;  // --timeline F.html: the run as one offline page, written at the end
  std::string animation;  // --animation F.gif: the run as an animated GIF, written at the end
  int animationFrames = 40;  // --animation-frames: at most this many kept pictures, evenly spaced
  int animationDelay = 25;   // --animation-delay: 1/100 s per frame
  int animationWidth = 0;    // --animation-width: every frame scaled to this width (0: as drawn)
  bool force = false;  // replace an existing --save/--log that the rule would keep (train/outputs.hpp)
  std::optional<std::uint64_t> memoryBudgetMib;
  std::string workspace;  // refused with the reason (cli.cpp): train makes a model, a workspace shows one
  const CLI::App* command = nullptr;  // which options were given (ignored ones are refused)
};

// Its options on `c` (the table registers the subcommand: commands.cpp).
void addTrainOptions(CLI::App* c, TrainArgs& a);
int cmdTrain(const TrainArgs& a);

// `mhascope bench --train`: on the reference setting (induction, 2 layers attention-only,
// d_model 64, h 2, vocab 64, T 32, batch 16, AdamW lr 1e-3 wd 1e-4, period 6-16): our median time
// per step; PyTorch's on the same model, init and batches when /usr/bin/python3 has torch; then,
// per seed, the time until the induction circuit forms (probe loss < 0.5, a layer-0 head with
// previous-token score > 0.3, a layer-1 head with induction score > 0.3) within budgetSeconds,
// and the 1-layer control.
// Its setting is fixed: any option of `bench` other than --train, --seeds, --budget and
// --train-steps is refused (it would be ignored). An interrupt (Ctrl-C, SIGTERM) removes its
// temporary checkpoint and exits 128 + the signal.
int cmdBenchTrain(const CLI::App& bench, int seeds, double budgetSeconds, int speedSteps);

}  // namespace mhascope::cli
