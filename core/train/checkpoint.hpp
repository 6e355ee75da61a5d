// Checkpoints: .safetensors holding the model's tensors under their PyTorch state_dict names
// (scripts/mhascope_model.py loads them with load_state_dict(strict=True)) and, in
// "__metadata__", the sizes and the task:
//   format=mhascope-gpt version=1 vocab seq d_model heads layers mlp(0|1) task step seed
//   period_min period_max [alphabet: JSON array of the text task's characters]
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "util/result.hpp"
#include "train/params.hpp"
#include "train/tasks.hpp"

namespace mhascope::train {

struct Checkpoint {
  GptParams params;
  TaskConfig task;                      // kind, vocab, seq, periods (textPath empty)
  std::vector<std::string> alphabet;    // text task
  std::int64_t step = 0;
  std::uint64_t seed = 0;
};

std::map<std::string, std::string> checkpointMetadata(const Checkpoint& c);
// Bytes of the .safetensors file.
std::string encodeCheckpoint(Checkpoint c);
// Atomic write (an existing file is kept if writing fails).
Status saveCheckpoint(const std::string& path, const Checkpoint& c);
// Parses and checks: metadata keys and values, then every expected tensor name and shape for
// those sizes, and no extra tensor. One error lists every problem found.
Result<Checkpoint> decodeCheckpoint(std::string_view bytes, const std::string& what);
Result<Checkpoint> loadCheckpoint(const std::string& path);

}  // namespace mhascope::train
