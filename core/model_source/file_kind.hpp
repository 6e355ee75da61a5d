// What kind of file a path is, for the window's Open popup and dropped files: read from its
// header only (a few bytes to a bounded JSON header), so a huge file is classified at once and
// read in full later, on the compute worker.
//   .safetensors → MHA weights (in_proj_weight …) or a training checkpoint (metadata
//                  format=mhascope-gpt, with its layer count); .npy → an array whose role the user
//                  picks; .json → a preset, or a workspace (a top-level "mhascope_workspace" key);
//   a folder with a config.json, or that config.json (a "model_type" key) → a Hugging Face model
//                  folder (its config is read and checked now; the weights later).
#pragma once

#include <string>
#include <vector>

#include "attention/tensor.hpp"
#include "util/result.hpp"

namespace mhascope {

enum class FileKind { Weights, Checkpoint, Array, Preset, Workspace, Model };

struct FileInfo {
  FileKind kind = FileKind::Weights;
  int layers = 0;       // Checkpoint, Model: layers 0 .. layers-1
  std::string folder;   // Model: the model folder (the path itself, or the folder of its config.json)
  Shape shape;          // Array: the .npy's shape; Weights: in_proj_weight's
  std::string summary;  // one line for the popup: "MHA weights, d_model = 12, with biases"
};

// Errors name the path and the reason (missing, a folder without a config.json, unreadable, not a
// known kind, a damaged header, a model config this program cannot run).
Result<FileInfo> inspectFile(const std::string& path);

// Extensions the window opens (lower case, with the dot).
const std::vector<std::string>& openableExtensions();
bool hasOpenableExtension(const std::string& path);

}  // namespace mhascope
