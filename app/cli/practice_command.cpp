// `mhascope practice`: implement attention yourself (core/practice). Its own subcommands:
//   list                       the exercises, with the ones marked complete
//   show ID [--hints N] [--solution]   statement, signature, complexity, interview points, hints
//   start ID [--out FILE]      the starter file (never replacing a file)
//   check FILE [--exercise ID] [--json OUT [--force]] [--timeout S]
//                              run the learner's file; exit 0 when every case passes, 2 when one fails
//   complete ID [--undo]       mark an exercise complete (the window's "Mark as complete")
// The progress is the window's: <config dir>/practice.json.
#include "options.hpp"
#include "commands.hpp"

#include <cstdio>
#include <filesystem>
#include <memory>
#include <system_error>

#include "command_common.hpp"
#include "io/file_io.hpp"
#include "io/presets.hpp"
#include "practice/check.hpp"
#include "practice/exercises.hpp"
#include "practice/progress.hpp"
#include "util/format.hpp"
#include "util/user_dirs.hpp"

namespace mhascope::cli {

namespace {

struct PracticeArgs {
  std::string id, file, out, json, exercise, python = "/usr/bin/python3";
  int hints = 0;
  bool solution = false, undo = false, force = false;
  double timeout = 20.0;
  CLI::App *list = nullptr, *show = nullptr, *start = nullptr, *check = nullptr, *complete = nullptr;
};

Result<const practice::Exercise*> exerciseById(const std::string& id) {
  if (const practice::Exercise* e = practice::findExercise(id)) return e;
  return makeError("no exercise '" + printableMessage(id) + "' (exercises: " + practice::exerciseIdsList() + ")");
}

Result<practice::Progress> loadUserProgress(std::string& path) {
  const std::string dir = configDir();
  if (dir.empty()) return makeError("no folder for the practice progress: neither $XDG_CONFIG_HOME nor $HOME is usable");
  path = practice::progressPath(dir);
  return practice::loadProgress(path);
}

int cmdList() {
  std::string path;
  auto progress = loadUserProgress(path);
  if (!progress) return fail(progress.error().message);
  for (const practice::Exercise& e : practice::allExercises()) {
    std::printf("%-16s %s %-9s %s\n", e.id.c_str(), progress->completed.count(e.id) ? "[done]" : "[    ]",
                e.framework == practice::Framework::Torch ? "PyTorch" : "NumPy", e.title.c_str());
    std::printf("%-16s %s\n", "", e.summary.c_str());
  }
  std::printf("\nmhascope practice start ID writes a starter file; mhascope practice check FILE checks it.\n");
  return 0;
}

Result<std::string> readAsset(const std::string& name) {
  return readFile(assetsDir() + "/practice/" + name, 1u << 20);
}

int cmdShow(const PracticeArgs& a) {
  auto e = exerciseById(a.id);
  if (!e) return fail(e.error().message);
  const practice::Exercise& x = **e;
  std::printf("%s (%s)\n\n%s\n\n%s\n\nComplexity: %s\n\nInterview points:\n", x.title.c_str(), x.id.c_str(),
              x.statement.c_str(), x.signature.c_str(), x.complexity.c_str());
  for (const std::string& p : x.interviewPoints) std::printf("  - %s\n", p.c_str());
  const int n = std::min(a.hints, static_cast<int>(x.hints.size()));
  for (int i = 0; i < n; ++i) std::printf("\nHint %d of %zu: %s\n", i + 1, x.hints.size(), x.hints[static_cast<std::size_t>(i)].c_str());
  if (n < static_cast<int>(x.hints.size())) {
    std::printf("\n%zu hints: --hints %d shows the %s.\n", x.hints.size(), n + 1, n == 0 ? "first" : "next one too");
  }
  if (a.solution) {
    auto text = readAsset(x.solutionAsset);
    if (!text) return fail(text.error().message);
    std::printf("\nReference solution (%s):\n\n%s", x.solutionAsset.c_str(), text->c_str());
  }
  return 0;
}

int cmdStart(const PracticeArgs& a) {
  auto e = exerciseById(a.id);
  if (!e) return fail(e.error().message);
  const std::string out = a.out.empty() ? (*e)->id + ".py" : a.out;
  std::error_code ec;
  if (std::filesystem::exists(out, ec)) {
    return fail("'" + printableMessage(out) + "' already exists: mhascope never replaces it. Check it with `mhascope practice check " +
                printableMessage(out) + "`, or name another file with --out");
  }
  auto text = readAsset((*e)->starterAsset);
  if (!text) return fail(text.error().message);
  if (auto s = writeOutputFile(out, *text); !s) return fail(s.error().message);
  std::printf("write %s, then: mhascope practice check %s\n", printableMessage(out).c_str(), printableMessage(out).c_str());
  return 0;
}

int cmdCheck(const PracticeArgs& a) {
  auto text = readFile(a.file, 4u << 20);
  if (!text) return fail(text.error().message);
  std::string id = a.exercise.empty() ? practice::declaredExercise(*text) : a.exercise;
  if (id.empty()) {
    return fail("'" + printableMessage(a.file) + "' names no exercise: give --exercise ID, or keep the starter's first line "
                "'# mhascope exercise: ID' (exercises: " + practice::exerciseIdsList() + ")");
  }
  auto e = exerciseById(id);
  if (!e) return fail(e.error().message);
  if (!a.json.empty()) {
    if (auto s = checkJsonOutput(a.json, a.force, {{"FILE", a.file}}); !s) return fail(s.error().message);
  }
  practice::CheckOptions options;
  options.python = a.python;
  options.limits.wallSeconds = a.timeout;
  std::error_code ec;
  const std::string absolute = std::filesystem::absolute(a.file, ec).string();
  auto report = practice::checkFile(**e, ec ? a.file : absolute, options);
  if (!report) return fail(report.error().message);
  std::fputs(practice::reportText(*report).c_str(), stdout);
  if (!a.json.empty()) {
    if (auto s = writeOutputFile(a.json, practice::reportJson(*report)); !s) return fail(s.error().message);
  }
  // The window shows this file as the exercise's last one.
  std::string path;
  if (auto progress = loadUserProgress(path)) {
    progress->files[(*e)->id] = ec ? a.file : absolute;
    (void)practice::saveProgress(path, *progress);  // progress is a convenience: a check never fails for it
  }
  return report->allPassed ? 0 : 2;
}

int cmdComplete(const PracticeArgs& a) {
  auto e = exerciseById(a.id);
  if (!e) return fail(e.error().message);
  std::string path;
  auto progress = loadUserProgress(path);
  if (!progress) return fail(progress.error().message);
  if (a.undo) progress->completed.erase((*e)->id);
  else progress->completed.insert((*e)->id);
  if (auto s = practice::saveProgress(path, *progress); !s) return fail(s.error().message);
  std::printf("%s %s (%s)\n", (*e)->id.c_str(), a.undo ? "no longer marked complete" : "marked complete", path.c_str());
  return 0;
}

}  // namespace

CommandRun addPracticeCommand(CLI::App& cmd, CommandContext&) {
  auto a = std::make_shared<PracticeArgs>();
  cmd.require_subcommand(1);
  a->list = cmd.add_subcommand("list", "the exercises, with the ones marked complete");
  a->show = cmd.add_subcommand("show", "an exercise's statement, signature, complexity, interview points and hints");
  a->show->add_option("ID", a->id, "the exercise: " + practice::exerciseIdsList())->required();
  a->show->add_option("--hints", a->hints, "show the first N hints")->transform(decimalInteger(0, 100));
  a->show->add_flag("--solution", a->solution, "print the reference solution as well");
  a->start = cmd.add_subcommand("start", "write an exercise's starter file (never replacing a file)");
  a->start->add_option("ID", a->id, "the exercise: " + practice::exerciseIdsList())->required();
  a->start->add_option("--out", a->out, "the file to write (default: ID.py here)")->check(nonEmptyPath());
  a->check = cmd.add_subcommand("check", "run your file on the exercise's cases: which stage differs first, and why "
                                          "(exit 0: every case passes; 2: one fails)");
  a->check->add_option("FILE", a->file, "your .py file")->required()->check(nonEmptyPath());
  a->check->add_option("--exercise", a->exercise, "the exercise (default: the file's '# mhascope exercise: ID' line)");
  a->check->add_option("--json", a->json, "also write the report as JSON")->check(nonEmptyPath());
  a->check->add_flag("--force", a->force, "replace an existing --json file");
  a->check->add_option("--timeout", a->timeout, "seconds your code may run, every case together")
      ->check(CLI::Range(0.5, 600.0))
      ->capture_default_str();
  a->check->add_option("--python", a->python, "the Python with torch and numpy that runs your code")->capture_default_str();
  a->complete = cmd.add_subcommand("complete", "mark an exercise complete (--undo: not complete)");
  a->complete->add_option("ID", a->id, "the exercise: " + practice::exerciseIdsList())->required();
  a->complete->add_flag("--undo", a->undo, "remove the mark");
  return [a](CommandContext&) {
    if (a->list->parsed()) return cmdList();
    if (a->show->parsed()) return cmdShow(*a);
    if (a->start->parsed()) return cmdStart(*a);
    if (a->check->parsed()) return cmdCheck(*a);
    return cmdComplete(*a);
  };
}

}  // namespace mhascope::cli
