// `run --dump DIR`: the folder a dump may replace and the dump written as one unit — every
// recorded stage as <stage>.npy, trace.json, and any extra files (token_ids.npy with --model) —
// as an output folder (output_folder.hpp): a failure or a signal leaves the earlier dump as it was
// and no temporary folder behind.
#pragma once

#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "attention/trace.hpp"
#include "output_folder.hpp"
#include "util/result.hpp"

namespace mhascope::cli {

// The one file a dump may hold besides trace.json and the stage files: the token ids of
// `run --model` (an earlier model dump is replaceable like any other).
inline constexpr const char* kTokenIdsFile = "token_ids.npy";

// What a dump folder holds: trace.json, <stage>.npy files, token_ids.npy.
extern const OutputFolderKind kDumpFolder;

// The folder a dump replaces (outputFolderTarget for kDumpFolder).
Result<std::filesystem::path> dumpTarget(const std::string& dumpDir);

struct DumpExtraFile {
  std::string name;   // a file name inside the dump (kTokenIdsFile)
  std::string bytes;  // its whole content
};

// Writes the dump of `t` into `target` (from dumpTarget(dumpDir)); trace.json is
// makeDoc(the list of stage files). Returns the number of stage files written.
Result<int> writeDump(const Trace& t, const std::string& dumpDir, const std::filesystem::path& target,
                      const std::function<nlohmann::json(nlohmann::json)>& makeDoc,
                      const std::vector<DumpExtraFile>& extra = {});

}  // namespace mhascope::cli
