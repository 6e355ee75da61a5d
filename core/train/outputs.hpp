// The files a training run writes — its checkpoint and its CSV log — checked before anything is
// written, by one function the command line (`train --save/--log`) and the window's Save
// checkpoint both call. The rule:
//   - a checkpoint's name ends in .safetensors, a log's in .csv;
//   - no output is one of the run's inputs (--init, --text) nor the other output, by file
//     identity (same inode: "./x", hard links, symlinks) or, for new files, the same path;
//   - no output is a symbolic link (writing would replace the link by a file);
//   - an existing checkpoint file is replaced only when it is a checkpoint of this same run
//     (same sizes, task, periods, seed and alphabet) at the same or an earlier step; any other
//     existing file (another run's checkpoint, a later step of this run, anything else) and an
//     existing log are replaced only when forced (`train --force`).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "train/checkpoint.hpp"
#include "train/trainer.hpp"

namespace mhascope::train {

// What a checkpoint says about the run that wrote it (no parameters).
struct RunIdentity {
  GptConfig model;
  TaskConfig task;  // kind, periods (vocab, seq: model's)
  std::vector<std::string> alphabet;
  std::uint64_t seed = 0;
  std::int64_t step = 0;
};
RunIdentity runIdentity(const Checkpoint& c);
RunIdentity runIdentity(const Trainer& t);  // its current step

struct TrainOutputs {
  std::string checkpoint, checkpointName = "--save";  // "" = none; the name used in messages
  std::string log, logName = "--log";
  std::vector<std::pair<std::string, std::string>> inputs;  // {"--init", path}, {"--text", path}
  bool force = false;
  std::string forceHint;  // how to force, for the message ("add --force"); "" where there is none
  // How to continue a run from its checkpoint, for the message: the commands' way by default; the
  // window says "load it with Load checkpoint".
  std::string continueHint = "continue it with --init";
};

// `writing`: the run whose checkpoint would be written, at the step of its first write.
Status checkTrainOutputs(const TrainOutputs& o, const RunIdentity& writing);

}  // namespace mhascope::train
