#include "shell/launch_options.hpp"

#include <CLI/CLI.hpp>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <climits>
#include <string>
#include <vector>

#include "cli/model_options.hpp"
#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "attention/model.hpp"
#include "io/presets.hpp"
#include "lessons/lessons.hpp"
#include "tokenize/tokenizer_files.hpp"

namespace mhascope::app {

namespace {

// --ui-scale: a finite decimal number from 0.5 to 4. CLI11's Range lets NaN through (every
// comparison with NaN is false), and a scale of NaN, inf, 0 or less has no font size.
CLI::Validator uiScaleCheck() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const char* begin = text.c_str();
        char* end = nullptr;
        errno = 0;
        const double v = std::strtod(begin, &end);
        const bool number = end != begin && *end == '\0' && errno == 0;
        if (number && std::isfinite(v) && v >= 0.5 && v <= 4.0) return {};
        return "must be a number from 0.5 to 4, got '" + text + "'";
      },
      "0.5 .. 4");
}

}  // namespace

ParsedLaunch parseLaunchOptions(int argc, char** argv) {
  ParsedLaunch out;
  LaunchOptions& o = out.options;
  // The headless commands from their one table (cli/commands.cpp), each with its summary.
  std::string commandsHelp = "Headless commands (no display needed; each has --help):";
  for (const cli::Command& c : cli::commands()) {
    commandsHelp += "\n  mhascope " + std::string(c.name) + std::string(c.name.size() < 9 ? 9 - c.name.size() : 1, ' ') +
                    std::string(c.summary);
  }
  CLI::App cli{"mhascope: see inside multi-head attention. With no command it opens the window; with --model DIR "
               "and no --text, on the default sentence through the model's tokenizer (or, when the folder has none, "
               "with the Model tab on repeated random tokens).\n" + commandsHelp};
  cli.name("mhascope");
  std::string size;
  cli::addModelOptions(cli, o.model);  // --preset, --text, --weights …: as for `mhascope export`
  cli.add_option("--stage", o.stage, "stage to open at (query, q_proj, q_heads, scores, weights, output, ...)");
  // The lessons' ids come from their one list (AllLessons), so each lesson is a --view name.
  std::vector<std::string> views(kMainTabIds.begin(), kMainTabIds.end());
  std::string lessonIds;
  AllLessons::forEach([&](auto lesson) {
    views.emplace_back(decltype(lesson)::kId);
    lessonIds += (lessonIds.empty() ? "" : ", ") + views.back();
  });
  views.emplace_back("train");
  views.emplace_back("practice");
  cli.add_option("--view", o.view, "main tab to open: heatmap, grid (all heads), lessons (the list of lessons), model (every layer and head of --model DIR; "
                                   "the default with --model), learned, compare, circuits, predictions (its next tokens and logit "
                                   "lens), or a lesson (the Lessons tab at it): " + lessonIds + "; or train (the Train mode), practice (the Practice mode)")
      ->check(CLI::IsMember(views));
  auto* headOpt = cli.add_option("--head", o.head, "head to show in the heatmap, counted from 0 (0 .. h-1)")
                      ->transform(cli::decimalInteger(0, INT_MAX));
  cli.add_option("--size", size, "window size WxH, e.g. 1600x1000");
  cli.add_option("--screenshot", o.screenshotPath, "render, save the window as this PNG and exit");
  cli.add_option("--frames", o.frames, "frames to render before --screenshot")
      ->transform(cli::decimalInteger(1, 100000));
  cli.add_option("--bench-frames", o.benchFrames, "render N frames of the all-heads grid at T=512, h=16 and "
                                                  "print the median and p95 frame time")
      ->transform(cli::decimalInteger(1, 1000000));
  cli.add_option("--script", o.scriptPath, "drive the window from an input script (tests)");
  cli.add_option("--ui-scale", o.uiScale, "UI scale instead of the monitor's content scale, 0.5 .. 4")
      ->check(uiScaleCheck());
  cli.add_option("--max-texture-size", o.maxTextureSize, "pretend the GPU's texture limit is this (tests)")
      ->transform(cli::decimalInteger(1, 1 << 20));
  cli.add_flag("--hidden", o.hidden, "do not show the window");
  cli.add_flag("--fresh", o.fresh, "start from the preset, not from the last workspace, and do not save this one");
  try {
    cli.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    out.exitCode = cli::exitForParseError(cli, e, "mhascope");  // "mhascope: error: …", exit 1, as the commands
    return out;
  }
  if (!size.empty()) {
    std::smatch m;
    if (!std::regex_match(size, m, std::regex(R"((\d+)x(\d+))"))) {
      std::fprintf(stderr, "mhascope: error: --size must look like 1600x1000 (width x height in pixels), got \"%s\"\n",
                   size.c_str());
      out.exitCode = 1;  // an option error, as the commands' (exit 2 is the window failing to start)
      return out;
    }
    // A window (and the screenshot's framebuffer) larger than a GPU's texture limit cannot be drawn.
    constexpr long kMaxSide = 16384;
    const auto side = [](const std::string& digits) {
      return digits.size() > 6 ? kMaxSide + 1 : std::stol(digits);
    };
    const long w = side(m[1]), h = side(m[2]);
    if (w < 1 || h < 1 || w > kMaxSide || h > kMaxSide) {
      std::fprintf(stderr, "mhascope: error: --size %s: width and height must each be 1 to %ld pixels\n", size.c_str(),
                   kMaxSide);
      out.exitCode = 1;  // an option error, as the commands' (exit 2 is the window failing to start)
      return out;
    }
    o.width = static_cast<int>(w);
    o.height = static_cast<int>(h);
  }
  if (!o.screenshotPath.empty()) {
    std::string ext = o.screenshotPath.size() >= 4 ? o.screenshotPath.substr(o.screenshotPath.size() - 4) : "";
    for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (ext != ".png") {
      std::fprintf(stderr, "mhascope: error: --screenshot '%s': screenshots are written as PNG, so the name must end in "
                           ".png\n", o.screenshotPath.c_str());
      out.exitCode = 1;  // an option error, as the commands' (exit 2 is the window failing to start)
      return out;
    }
  }
  o.preset = o.model.preset;
  // --workspace (a MODEL option): the window opens it instead of the last workspace; --preset,
  // --stage, --view and --head given with it win over its own.
  o.workspacePath = o.model.workspace;
  o.memoryBudgetMib = o.model.memoryBudgetMib.value_or(0);
  if (!o.model.saveWeightsFile.empty()) {
    std::fprintf(stderr, "mhascope: error: --save-weights is for the commands (e.g. `mhascope run --save-weights F`), "
                         "not the window\n");
    out.exitCode = 1;  // an option error, as the commands' (exit 2 is the window failing to start)
    return out;
  }
  const cli::ModelOptions& m = o.model;
  o.modelGiven = m.text || m.kvText || m.dModel || m.heads || m.tokens || m.batch || m.padLast || m.seed || m.bias ||
                 m.noBias || m.mask || m.scale || m.noPositions || !m.files.empty() || m.files.layer || m.positions ||
                 m.ropeBase || m.ropeStyle || m.kvHeads || m.headDim || m.window || m.sinks ||
                 m.softcap || m.qkNorm || m.sink;
  if (headOpt->count() > 0 && !o.modelGiven && o.workspacePath.empty()) {  // with MODEL options it is checked once they are resolved  // an index the window would have to clamp is an error, said before it opens
    auto preset = loadPreset(o.preset);
    if (preset) {
      const int heads = o.benchFrames > 0 ? 16 : preset->heads;
      if (o.head >= heads) {
        std::fprintf(stderr, "mhascope: error: --head %d is out of range: preset '%s' has h = %d head%s, indices 0 .. %d\n",
                     o.head, o.preset.c_str(), heads, heads == 1 ? "" : "s", heads - 1);
        out.exitCode = 1;  // an option error, as the commands' (exit 2 is the window failing to start)
        return out;
      }
    }
  }
  if (!o.screenshotPath.empty() || o.benchFrames > 0) o.hidden = true;
  o.presetGiven = cli.count("--preset") > 0 || o.modelGiven;
  o.stageGiven = cli.count("--stage") > 0;
  o.viewGiven = cli.count("--view") > 0;
  // A model folder opens on its Model tab (every layer and head), over the saved session's tab;
  // --view picks another.
  if (!o.model.files.model.empty() && !o.viewGiven) {
    o.view = "model";
    o.viewGiven = true;
  }
  o.headGiven = cli.count("--head") > 0;
  return out;
}

std::optional<ModelStartText> modelStartText(const cli::ModelOptions& m) {
  if (m.files.model.empty() || m.text || !m.textFile.empty() || !m.workspace.empty()) return std::nullopt;
  namespace fs = std::filesystem;
  std::error_code ec;
  // --model takes the folder or its config.json.
  const std::string dir = fs::is_directory(m.files.model, ec) ? m.files.model : fs::path(m.files.model).parent_path().string();
  ModelStartText out;
  auto preset = loadPreset("default");
  out.text = preset ? preset->text : ModelConfig{}.text;
  if (tokenize::hasTokenizerFiles(dir)) {
    out.note = "No --text was given: this is the default sentence, through the model's tokenizer. Type your own "
               "here, or start with --text \"…\" or --text-file FILE.";
  } else {
    out.randomProbe = true;
    out.note = "No --text was given and '" + dir + "' has no tokenizer (tokenizer.json, or vocab.json + merges.txt), "
               "so the Model tab runs on repeated random tokens. A text needs the model's own tokenizer beside its "
               "config.json.";
  }
  return out;
}

}  // namespace mhascope::app
