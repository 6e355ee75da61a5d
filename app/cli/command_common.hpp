// What the subcommands share: the error line and the traced forward with its warnings.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "attention/trace.hpp"
#include "model_options.hpp"
#include "util/result.hpp"

namespace mhascope::cli {

// "mhascope: error: <message>" on stderr; returns the exit code 1.
int fail(const std::string& message);
// A --json output file: never one of `inputs` (flag, path) — --force replaces an earlier output,
// never an input — nor a symbolic link; an existing file only with --force.
Status checkJsonOutput(const std::string& json, bool force, const std::vector<std::pair<std::string, std::string>>& inputs);
// The forward of a resolved model, warning on stderr about overflowed stages and fully masked rows.
Result<Trace> computeTrace(const ResolvedModel& r);

}  // namespace mhascope::cli
