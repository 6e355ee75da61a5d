// The command line's flags (CLI11): the MODEL options every subcommand shares and the validators
// and parse-error rule of every subcommand. Only the command-line files include this (CLI11 is
// large: the window's code never parses it).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "model_options.hpp"

namespace mhascope::cli {

void addModelOptions(CLI::App& cmd, ModelOptions& o);
// --save-workspace's help (info, run, export).
inline constexpr const char* kSaveWorkspaceHelp =
    "write a workspace .json of this command's model (configuration, files with their SHA-256, the picture) for the "
    "window or --workspace";

// Integer options are decimal only (a leading zero is not octal: "032" is 32), range-checked
// ("--head 4294967298" is an error, not head 2), and say what they accept. For CLI::Option::transform.
CLI::Validator decimalInteger(long long lo, unsigned long long hi);

// A file or folder option given as '' (e.g. --checkpoint "" from an unset shell variable) is an
// error, never the same as leaving the option out. For CLI::Option::check.
CLI::Validator nonEmptyPath();

// Every command-line parse error reads "mhascope: error: <CLI11's message>" plus where to find
// the options, and exits 1 like every other error (CLI11's own codes, 104-114, would tell a
// script nothing an exit 1 and the message do not). --help prints to stdout and exits 0, or 1
// with "cannot write to standard output" when stdout fails.
int exitForParseError(CLI::App& app, const CLI::ParseError& e, const std::string& helpCommand);

}  // namespace mhascope::cli
