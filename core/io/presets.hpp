// Presets: the strict JSON format of a ModelConfig, and the bundled preset files in assets/presets/.
// File reading lives here in io/; the engine and the model take configs, never paths.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "attention/model.hpp"
#include "util/result.hpp"

namespace mhascope {

inline constexpr int kPresetVersion = 1;
// Strict: unknown/duplicate keys, wrong types, negative sizes, future versions are errors that
// name the JSON path. Nothing is half-applied: either a whole config or an error.
Result<ModelConfig> parsePresetJson(std::string_view json, const std::string& what);
std::string presetToJson(const ModelConfig& cfg);
// A bundled preset by name ("cat") or a path to a .json file.
Result<ModelConfig> loadPreset(const std::string& nameOrPath);
std::vector<std::string> presetNames();  // bundled, sorted, "default" first
std::string assetsDir();  // $MHASCOPE_ASSETS, <prefix>/share/mhascope/assets beside the binary, or the source tree's

}  // namespace mhascope
