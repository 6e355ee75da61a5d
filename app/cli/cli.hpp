// The headless command line: `mhascope <command> [options]`, the commands listed once in
// commands.cpp. It drives core with no window at all, so it works on servers, in notebooks and in
// tests.
#pragma once

#include <string_view>

namespace mhascope::cli {

// True for a subcommand's name (commands()) — main() sends those here.
bool isCommand(std::string_view arg);
// Parses and runs one subcommand; returns the process exit code (0 ok, 1 error, 2 usage).
int run(int argc, char** argv);

}  // namespace mhascope::cli
