// The files a model can be read from instead of (or besides) its text and seed: raw
// query/key/value inputs and masks (.npy), MHA weights (.safetensors), a layer of a training
// checkpoint or a layer of a Hugging Face model folder. One struct for the CLI's MODEL options
// (app/cli/model_options.hpp), the window's open files and the workspace files that remember them.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace mhascope {

struct InputFiles {
  std::string query, key, value;        // --query/--key/--value: (B, T, d_model) .npy
  std::string keyPaddingMask, attnMask;  // --key-padding-mask (B, T_k), --attn-mask (T_q, T_k) .npy
  std::string weights;                   // --weights: in_proj/out_proj .safetensors
  std::string checkpoint;                // --checkpoint: a trained model (core/train/checkpoint.hpp)
  std::string model;                     // --model: a Hugging Face model folder (or its config.json)
  std::optional<int> layer;              // --layer: which of the checkpoint's or model's layers (0-based)

  bool empty() const {
    return query.empty() && key.empty() && value.empty() && keyPaddingMask.empty() && attnMask.empty() &&
           weights.empty() && checkpoint.empty() && model.empty();
  }
  // Every file named, with the command-line flag that names it ("--query", path), in flag order.
  std::vector<std::pair<std::string, std::string>> named() const {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& [flag, path] : {std::pair<const char*, const std::string*>{"--query", &query},
                                     {"--key", &key}, {"--value", &value}, {"--weights", &weights},
                                     {"--attn-mask", &attnMask}, {"--key-padding-mask", &keyPaddingMask},
                                     {"--checkpoint", &checkpoint}, {"--model", &model}}) {
      if (!path->empty()) out.emplace_back(flag, *path);
    }
    return out;
  }
};

}  // namespace mhascope
