// The headless subcommands in one table: each one's name, its one-line summary (its --help, the
// top-level --help and the window's --help list them from here) and what it adds to its own
// CLI11 subcommand. Each subcommand lives in its own file, <name>_command.cpp; cli.cpp parses
// the command line and runs the one parsed.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "io/workspace.hpp"
#include "model_options.hpp"

namespace CLI {
class App;
}

namespace mhascope::cli {

// What the dispatch shares with the subcommands: the MODEL options (filled by the parse when the
// subcommand reads a model) and, once parsed, the workspace --workspace named (none: nullopt).
struct CommandContext {
  ModelOptions model;
  std::optional<Workspace> workspace;
};

// Runs the parsed subcommand; returns the process exit code (0 ok, 1 error).
using CommandRun = std::function<int(CommandContext&)>;

struct Command {
  std::string_view name;
  std::string_view summary;
  // It takes the MODEL options (--preset … --model, --workspace, --save-workspace): they are
  // added to it before its own, and --workspace is read before it runs.
  bool readsModel = false;
  // Adds its own options to its subcommand `cmd`; returns how it runs once parsed.
  CommandRun (*add)(CLI::App& cmd, CommandContext& ctx) = nullptr;
};

// Every subcommand, in the order --help lists them.
std::span<const Command> commands();
// "info, run, export, …" (the table's order).
std::string commandNames();

// Each subcommand's registration, in its own file.
CommandRun addInfoCommand(CLI::App& cmd, CommandContext& ctx);      // info_command.cpp
CommandRun addRunCommand(CLI::App& cmd, CommandContext& ctx);       // run_command.cpp
CommandRun addExportCommand(CLI::App& cmd, CommandContext& ctx);    // export_command.cpp
CommandRun addBenchCommand(CLI::App& cmd, CommandContext& ctx);     // bench_command.cpp
CommandRun addTrainCommand(CLI::App& cmd, CommandContext& ctx);     // train_command.cpp
CommandRun addCircuitsCommand(CLI::App& cmd, CommandContext& ctx);  // circuits_command.cpp
CommandRun addDecodeCommand(CLI::App& cmd, CommandContext& ctx);    // decode_command.cpp
CommandRun addCompareCommand(CLI::App& cmd, CommandContext& ctx);   // compare_command.cpp
CommandRun addPredictCommand(CLI::App& cmd, CommandContext& ctx);   // predict_command.cpp
CommandRun addPatchCommand(CLI::App& cmd, CommandContext& ctx);     // patch_command.cpp
CommandRun addAttributeCommand(CLI::App& cmd, CommandContext& ctx); // attribute_command.cpp
CommandRun addTokensCommand(CLI::App& cmd, CommandContext& ctx);    // tokens_command.cpp
CommandRun addPracticeCommand(CLI::App& cmd, CommandContext& ctx);  // practice_command.cpp

}  // namespace mhascope::cli
