// What the subcommands share: the error line and the traced forward with its warnings.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "attention/trace.hpp"
#include "model_options.hpp"
#include "util/result.hpp"

namespace mhascope::cli {

// A token for a table cell, columns counting characters, not bytes ('␣' is three bytes, one
// column): at most `width` columns (cut with '…'), padded to `width`.
std::string cell(const std::string& token, std::size_t width);
// "mhascope: error: <message>" on stderr; returns the exit code 1.
int fail(const std::string& message);
// "mhascope: warning: <message>" on stderr.
void warn(const std::string& message);
// A --json output file: never one of `inputs` (flag, path) — --force replaces an earlier output,
// never an input — nor a symbolic link; an existing file only with --force.
Status checkJsonOutput(const std::string& json, bool force, const std::vector<std::pair<std::string, std::string>>& inputs);
// A command's output file written atomically (writeFileAtomic), then "<lead>wrote PATH" on stdout.
// SIGINT, SIGTERM and SIGHUP meanwhile are held until the file is whole or abandoned: the process
// then says which, and dies of the signal.
Status writeOutputFile(const std::string& path, const std::string& bytes, const char* lead = "");
// Outputs of a --model command never go inside the model folder, whatever their name: a file the
// commands do not read (generation_config.json, the user's notes) is still the user's. `flag` and
// `path` name the output in the message.
Status refuseInsideModelFolder(const std::string& flag, const std::string& path, const std::string& modelDir);
// The forward of a resolved model, warning on stderr about overflowed stages and fully masked rows.
Result<Trace> computeTrace(const ResolvedModel& r);

}  // namespace mhascope::cli
