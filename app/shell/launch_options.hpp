// Options of the window mode (no subcommand): screenshots, the frame benchmark, input scripts.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "cli/model_options.hpp"

namespace mhascope::app {

// The main tabs, by id, in the tab strip's order: each is a --view name, as is each lesson's id (the
// Lessons tab at that lesson) and "train" (the Train mode). The panel list gives these ids to its tabs (a
// test checks the two agree).
inline constexpr std::array<const char*, 9> kMainTabIds = {"heatmap", "grid",     "lessons",    "model",
                                                           "learned", "compare",  "circuits",   "predictions",
                                                           "experiments"};

struct LaunchOptions {
  // The MODEL options of info/run/export (cli/model_options.hpp): the same command line opens the
  // same model. preset and memoryBudgetMib below are copies of model.preset / --memory-budget.
  cli::ModelOptions model;
  bool modelGiven = false;     // any MODEL option besides --preset and --memory-budget
  std::string preset = "default";
  std::string stage;           // stage name to open at ("weights"); empty = weights
  std::string view = "heatmap";  // a main tab's id (kMainTabIds, a lesson's id) or "train"
  int head = 0;                // counted from 0, like every index a person types
  int width = 1600, height = 1000;
  std::string screenshotPath;  // render, save this PNG, exit
  int frames = 8;              // frames rendered before the screenshot
  int benchFrames = 0;         // > 0: print median / p95 frame time and exit
  std::string scriptPath;      // input script (tests): see input_script.hpp
  float uiScale = 0.0f;        // 0: the monitor's content scale
  std::uint64_t memoryBudgetMib = 0;  // 0: defaultMemoryBudget() (half of the available memory)
  int maxTextureSize = 0;      // 0: GL_MAX_TEXTURE_SIZE (tests lower it)
  bool hidden = false;         // no visible window (set for screenshots and benchmarks)
  // The last session comes back at launch (shell/session_store.hpp); an option given on the
  // command line wins over its saved counterpart. --fresh: neither restore nor save it.
  bool presetGiven = false, stageGiven = false, viewGiven = false, headGiven = false;
  bool fresh = false;
  std::string workspacePath;   // --workspace FILE: open it (instead of the last workspace)
};

struct ParsedLaunch {
  LaunchOptions options;
  std::optional<int> exitCode;  // set when parsing already finished the run (--help, bad option)
};

ParsedLaunch parseLaunchOptions(int argc, char** argv);

// `mhascope --model DIR` with no --text, --text-file or --workspace: what the window opens on
// (the commands, which print what the text gives, still ask for one): the default preset's
// sentence through the model's tokenizer, or, when the folder has no tokenizer, repeated random
// tokens in the Model tab. `note` says which under the text box, and how to change it. nullopt
// when a text is given or no model folder is.
struct ModelStartText {
  std::string text;          // the pipeline's text either way
  bool randomProbe = false;  // the folder has no tokenizer: the Model tab runs on random tokens
  std::string note;
};
std::optional<ModelStartText> modelStartText(const cli::ModelOptions& m);

}  // namespace mhascope::app
