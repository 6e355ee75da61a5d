// `mhascope train`: parse options, then drive mhascope::train::Trainer.
#include "options.hpp"
#include "commands.hpp"
#include "command_common.hpp"
#include "export/html_view.hpp"
#include "io/file_io.hpp"
#include "export/training_figures.hpp"
#include "model_source/training_page.hpp"
#include "train/session.hpp"
#include "interrupt_guard.hpp"
#include "train_command.hpp"

#include "bench_command.hpp"

#include <climits>
#include <cstdint>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <tuple>

#include "model_options.hpp"  // decimalInteger
#include "io/csv.hpp"
#include "io/file_io.hpp"
#include "io/presets.hpp"
#include "train/circuit.hpp"
#include "train/outputs.hpp"
#include "train/trainer.hpp"
#include "util/memory_budget.hpp"

namespace mhascope::cli {
namespace {

using namespace mhascope::train;

std::string csvHeader(int layers, int heads) {
  std::string h = "step,train_loss,probe_loss,probe_accuracy,steps_per_second";
  for (int l = 0; l < layers; ++l) {
    for (int i = 0; i < heads; ++i) {
      const std::string p = ",layer" + std::to_string(l) + "_head" + std::to_string(i) + "_";
      h += p + "prev_token" + p + "induction" + p + "self" + p + "first_token" + p + "entropy" + p + "copying" + p +
           "prev_token_new" + p + "prev_token_seen";
    }
  }
  return h + "\n";
}

// The CSV log, appended in place to a file this run created: it starts as the header alone
// (written atomically), and each evaluation appends one whole row with a single write — so the
// file is a whole CSV at every moment, and its bytes grow by one row per evaluation. A failed
// append (full disk, file-size limit) is cut back to the last whole row.
class CsvLog {
 public:
  ~CsvLog() {
    if (fd_ >= 0) ::close(fd_);
  }
  Status open(const std::string& path, const std::string& header) {
    path_ = path;
    if (auto st = writeFileAtomic(path, header); !st) return st;
    fd_ = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd_ < 0) return makeError("cannot write '" + path + "': " + std::strerror(errno));
    size_ = static_cast<off_t>(header.size());
    return Ok{};
  }
  Status append(const std::string& row) {
    std::size_t done = 0;
    while (done < row.size()) {
      const ssize_t n = ::write(fd_, row.data() + done, row.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int err = n < 0 ? errno : ENOSPC;
        if (::ftruncate(fd_, size_) != 0) {}  // best effort: the last whole row stays the end
        return makeError("cannot write '" + path_ + "': " + std::strerror(err));
      }
      done += static_cast<std::size_t>(n);
    }
    size_ += static_cast<off_t>(row.size());
    return Ok{};
  }

 private:
  std::string path_;
  int fd_ = -1;
  off_t size_ = 0;
};

// --lr / --weight-decay: a decimal number that a float holds (1e-50 would become 0, 1e400 inf).
Result<float> parseRate(const std::string& text, const char* flag, bool zeroAllowed) {
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  const bool number = !text.empty() && end == text.c_str() + text.size();
  const bool fits = number && std::isfinite(v) && v <= FLT_MAX && (v >= FLT_MIN || (zeroAllowed && v == 0.0));
  if (!fits) {
    return makeError(std::string(flag) + " must be a number " + (zeroAllowed ? ">= 0" : "> 0") +
                     " that a float holds (" + (zeroAllowed ? "0 or " : "") + "1.2e-38 … 3.4e38), got '" + text + "'");
  }
  return static_cast<float>(v);
}

// trainLoss / stepsPerSecond are left empty before the first step.
std::string csvRow(const Evaluation& e, bool trained, double trainLoss, double stepsPerSecond) {
  auto num = [](double v) { return csvNumber(static_cast<float>(v)); };
  std::string r = std::to_string(e.step) + "," + (trained ? num(trainLoss) : "") + "," + num(e.loss) + "," +
                  num(e.accuracy) + "," + (trained ? num(stepsPerSecond) : "");
  for (const auto& s : e.scores) {
    r += "," + num(s.prevToken) + "," + num(s.induction) + "," + num(s.self) + "," + num(s.firstToken) + "," +
         num(s.entropy) + "," + num(s.copying) + "," + num(s.prevTokenNew) + "," + num(s.prevTokenSeen);
  }
  return r + "\n";
}

void printRoles(const Evaluation& e) {
  if (!e.complete()) return;  // never index a score list that is not there
  std::printf("\nHead roles at step %lld (a role needs a score >= %.2f: at least half of the head's attention)\n",
              static_cast<long long>(e.step), kRoleThreshold);
  std::printf("  prev-tok: weight on key t-1 (new: the query's token is a first occurrence; seen: a repeat)\n"
              "  induction: prefix matching on repeated random tokens, the total weight on keys that follow an earlier\n"
              "    copy of the query's token; copying: share of those queries whose head output ranks the attended\n"
              "    token first in the logits (an induction head needs both >= %.2f)\n",
              kCopyingThreshold);
  std::printf("  %-16s %-38s %8s %5s %5s %9s %7s %6s %6s %8s\n", "head", "role", "prev-tok", "new", "seen", "induction",
              "copying", "self", "first", "entropy");
  for (int l = 0; l < e.layers; ++l) {
    for (int i = 0; i < e.heads; ++i) {
      const HeadScores& s = e.at(l, i);
      const std::string name = "layer " + std::to_string(l) + " head " + std::to_string(i);
      std::printf("  %-16s %-38s %8.2f %5.2f %5.2f %9.2f %7.2f %6.2f %6.2f %8.2f\n", name.c_str(), roleOf(s, l).c_str(),
                  s.prevToken, s.prevTokenNew, s.prevTokenSeen, s.induction, s.copying, s.self, s.firstToken, s.entropy);
    }
  }
}

}  // namespace

void addTrainOptions(CLI::App* c, TrainArgs& a) {
  c->footer("Outputs: --save must end in .safetensors and --log in .csv; neither may be an input (--init, --text) "
            "or the other, nor a symbolic link. An existing --save file is replaced only when it is a checkpoint "
            "of this same run (same sizes, task, periods, seed, alphabet) at the same or an earlier step, an "
            "existing --log never: --force replaces them. The log grows by one whole row per evaluation.");
  c->add_option("--task", a.task, "induction | reverse | sort | text")->capture_default_str();
  c->add_option("--layers", a.settings.model.layers, "number of blocks L (1-4)")->transform(decimalInteger(INT_MIN, INT_MAX))->capture_default_str();
  c->add_option("--heads", a.settings.model.heads, "heads per block h")->transform(decimalInteger(INT_MIN, INT_MAX))->capture_default_str();
  c->add_option("--d-model", a.settings.model.dModel, "d_model")->transform(decimalInteger(INT_MIN, INT_MAX))->capture_default_str();
  c->add_flag("--mlp", a.settings.model.mlp, "add an MLP (d_mlp = 4 d_model, exact GELU) to every block");
  c->add_option("--positions", a.positions, "learned (a table added to the embeddings) | rope (q and k rotated in "
                "every layer) | alibi (a fixed bias on the scores)")->capture_default_str();
  c->add_option("--rope-base", a.ropeBase, "rope only: inv_freq_i = base^(-2i/d_k)")->capture_default_str();
  c->add_option("--kv-heads", a.settings.model.kvHeads, "N K/V heads (grouped-query attention; N divides h; default h)")
      ->transform(decimalInteger(INT_MIN, INT_MAX));
  c->add_option("--vocab", a.settings.task.vocab, "vocabulary size V (not for text: the file decides)")->transform(decimalInteger(INT_MIN, INT_MAX))->capture_default_str();
  c->add_option("--seq", a.settings.task.seq, "sequence length T")->transform(decimalInteger(INT_MIN, INT_MAX))->capture_default_str();
  c->add_option("--batch", a.settings.batch, "sequences per step")->transform(decimalInteger(INT_MIN, INT_MAX))->capture_default_str();
  c->add_option("--steps", a.settings.steps, "the step the run ends at (a run from --init continues from its step up to it)")->transform(decimalInteger(INT_MIN, INT_MAX))->capture_default_str();
  c->add_option("--lr", a.lr, "AdamW learning rate (> 0)")->capture_default_str();
  c->add_option("--weight-decay", a.weightDecay, "AdamW decoupled weight decay (>= 0, lr × wd < 1)")->capture_default_str();
  c->add_option("--clip", a.settings.clip, "clip the global gradient norm to this (0 = off)")->capture_default_str();
  c->add_option("--seed", a.settings.seed, "seed of the init and of every batch")->transform(decimalInteger(0, UINT64_MAX))->capture_default_str();
  c->add_option("--eval-every", a.evalEvery, "evaluate on the probe batch at every multiple of N steps, counted from step "
                "0, and at the last step")->transform(decimalInteger(INT_MIN, INT_MAX))->capture_default_str();
  c->add_option("--period-min", a.settings.task.periodMin, "induction only: shortest period k")->transform(decimalInteger(INT_MIN, INT_MAX))->capture_default_str();
  c->add_option("--period-max", a.settings.task.periodMax, "induction only: longest period k")->transform(decimalInteger(INT_MIN, INT_MAX))->capture_default_str();
  c->add_option("--text", a.settings.task.textPath, "text task only: a UTF-8 file (at most 16 MiB)")->check(nonEmptyPath());
  c->add_option("--save", a.save, "checkpoint .safetensors (written at the first evaluation, then at an evaluation only when at least "
                "5 s have passed since the last write, and always on Ctrl-C/SIGTERM and at the end)")->check(nonEmptyPath());
  c->add_option("--log", a.log, "CSV of every evaluation (losses, accuracy, head scores), a new file")->check(nonEmptyPath());
  c->add_option("--timeline", a.timeline, "write the run as one offline page (.html, a new file): a slider over the "
                "evaluations, every head's attention and role then, the curves")->check(nonEmptyPath());
  c->add_option("--animation", a.animation, "write the run as an animated GIF (a new file): every head's attention on "
                "the probe sequence beside the curves, one frame per kept evaluation")->check(nonEmptyPath());
  c->add_option("--animation-frames", a.animationFrames, "--animation's frames: at most this many evaluations, evenly "
                "spaced, the first and the last included (1-" + std::to_string(kMaxAnimationFrames) + ")")
      ->transform(decimalInteger(1, kMaxAnimationFrames))
      ->capture_default_str();
  c->add_option("--animation-delay", a.animationDelay, "--animation's time per frame, in 1/100 s (2-1000)")
      ->transform(decimalInteger(2, 1000))
      ->capture_default_str();
  c->add_option("--animation-width", a.animationWidth, "--animation's frames scaled to this many pixels wide (" +
                std::to_string(kMinAnimationWidth) + "-" + std::to_string(kMaxAnimationWidth) + "; default: as drawn)")
      ->transform(decimalInteger(kMinAnimationWidth, kMaxAnimationWidth));
  c->add_option("--init", a.init, "start from this checkpoint's parameters and history (same sizes)")->check(nonEmptyPath());
  c->add_flag("--force", a.force, "replace an existing --save or --log file that the rule above would keep");
  c->add_option("--memory-budget", a.memoryBudgetMib,
                "memory budget for everything the run holds (parameters, AdamW state, activations, probe "
                "evaluation), MiB (default: half of the available memory, 512 MiB … 32 GiB)")
      ->transform(decimalInteger(1, 1ull << 30));
  c->add_option("--workspace", a.workspace, "not for train (refused with the reason): a workspace shows a model, "
                "train makes one");
  a.command = c;
}

CommandRun addTrainCommand(CLI::App& cmd, CommandContext&) {
  auto a = std::make_shared<TrainArgs>();
  addTrainOptions(&cmd, *a);
  return [a](CommandContext&) {
    if (!a->workspace.empty()) {
      return fail("train does not read --workspace: it trains a new model from its own options (--task, --layers "
                  "…); a trained layer opens in the other commands and the window with --checkpoint FILE --layer L, "
                  "and --save-workspace on info/run/export keeps that as a workspace");
    }
    return cmdTrain(*a);
  };
}

namespace {

// Options whose value the chosen task would not use: refused, with the reason.
Status checkIgnoredOptions(const TrainArgs& a, TaskKind kind) {
  auto given = [&](const char* name) { return a.command && a.command->count(name) > 0; };
  const std::string task = taskName(kind);
  if (kind != TaskKind::Text && given("--text")) {
    return makeError("--text is for the text task (--task text); the " + task + " task generates its own sequences");
  }
  if (kind == TaskKind::Text && given("--vocab")) {
    return makeError("--vocab is not used by the text task: the file's distinct characters are the vocabulary");
  }
  if (given("--rope-base") && a.positions != "rope") {
    return makeError("--rope-base is for --positions rope; the positions here are " + a.positions);
  }
  if (given("--kv-heads") && a.settings.model.kvHeads < 1) {
    return makeError("--kv-heads must be at least 1 (N K/V heads, N divides h), got " +
                     std::to_string(a.settings.model.kvHeads));
  }
  if (kind != TaskKind::Induction) {
    for (const char* flag : {"--period-min", "--period-max"}) {
      if (given(flag)) {
        return makeError(std::string(flag) + " is for the induction task; the " + task + " task has no period");
      }
    }
  }
  return Ok{};
}

}  // namespace

int cmdTrain(const TrainArgs& a) {
  auto kind = taskFromName(a.task);
  if (!kind) return fail(kind.error().message);
  auto positions = trainPositionsFromName(a.positions);
  if (!positions) return fail("--positions '" + a.positions + "' is not one of learned, rope, alibi");
  if (auto st = checkIgnoredOptions(a, *kind); !st) return fail(st.error().message);
  if (*kind == TaskKind::Text && a.settings.task.textPath.empty()) return fail("the text task needs --text FILE (a UTF-8 text file)");
  if (a.evalEvery < 1) return fail("--eval-every must be at least 1, got " + std::to_string(a.evalEvery));
  TrainSettings s = a.settings;
  s.task.kind = *kind;
  auto lr = parseRate(a.lr, "--lr", false);
  if (!lr) return fail(lr.error().message);
  auto wd = parseRate(a.weightDecay, "--weight-decay", true);
  if (!wd) return fail(wd.error().message);
  s.adam.lr = *lr;
  s.adam.weightDecay = *wd;
  s.model.positions = *positions;
  if (*positions == TrainPositions::Rope) {
    auto base = parseRate(a.ropeBase, "--rope-base", false);
    if (!base) return fail(base.error().message);
    s.model.ropeBase = *base;
  }
  s.memoryBudgetBytes = a.memoryBudgetMib ? *a.memoryBudgetMib << 20 : defaultMemoryBudget();
  std::optional<Checkpoint> init;
  if (!a.init.empty()) {
    auto c = loadCheckpoint(a.init, s.memoryBudgetBytes);
    if (!c) return fail(c.error().message);
    init = std::move(*c);
  }
  auto made = Trainer::make(s, init);
  if (!made) return fail(made.error().message);
  Trainer& tr = *made;
  const bool pictures_ = !a.timeline.empty() || !a.animation.empty();
  tr.keepSnapshots(pictures_);  // only the timeline page and the animation read them
  init.reset();             // the trainer has the parameters and the history now
  {
    TrainOutputs out;
    out.checkpoint = a.save;
    out.log = a.log;
    out.inputs = {{"--init", a.init}, {"--text", *kind == TaskKind::Text ? s.task.textPath : std::string()}};
    out.force = a.force;
    out.forceHint = "add --force";
    if (auto st = checkTrainOutputs(out, runIdentity(tr)); !st) return fail(st.error().message);
    // The final save's own checks, now: a missing folder must not wait for the first evaluation.
    if (!a.save.empty()) {
      if (auto st = checkWritablePath(a.save); !st) return fail(st.error().message);
    }
  }
  // --timeline and --animation: written at the end, new files unless --force, never an input or another output.
  for (const auto& [flag, path, ext] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"--timeline", a.timeline, ".html"}, {"--animation", a.animation, ".gif"}}) {
    if (path.empty()) continue;
    const bool named = ext == ".html" ? isHtmlPath(path) : std::filesystem::path(path).extension() == ".gif";
    if (!named) return fail(flag + " writes a " + ext + " file: its name ends in " + ext + ", not '" + path + "'");
    for (const auto& [other, otherPath] : std::vector<std::pair<std::string, std::string>>{
             {"--save", a.save}, {"--log", a.log}, {"--init", a.init}, {"--text", s.task.textPath},
             {"--timeline", a.timeline}, {"--animation", a.animation}}) {
      if (other == flag || otherPath.empty()) continue;
      if (otherPath == path || sameFile(otherPath, path)) {
        return fail(flag + " '" + path + "' is the same file as " + other + " '" + otherPath + "': choose another name");
      }
    }
    if (!a.force) {
      if (auto st = refuseToReplace(path, "write"); !st) return fail(st.error().message + "; or add --force");
    }
    if (auto st = checkWritablePath(path); !st) return fail(st.error().message);
  }
  if (!a.init.empty() && tr.stepCount() >= s.steps) {  // after --init's own checks and the outputs'
    return fail("--steps " + std::to_string(s.steps) + " is not past --init's step " + std::to_string(tr.stepCount()) +
                ": --steps is the step the run ends at; give --steps above " + std::to_string(tr.stepCount()) +
                " to train further");
  }
  const GptConfig& g = tr.params().cfg;
  std::string variant;  // the attention variant, when not the plain model's
  if (g.positions == TrainPositions::Rope) {
    char buf[64];
    std::snprintf(buf, sizeof buf, ", RoPE (base %g)", static_cast<double>(g.ropeBase));
    variant += buf;
  }
  if (g.positions == TrainPositions::Alibi) variant += ", ALiBi";
  if (g.kv() != g.heads) variant += ", N = " + std::to_string(g.kv()) + " K/V heads";
  std::printf("mhascope train: %s, %d layer%s, h = %d heads%s, d_model %d%s, vocab %d, T %d, batch %d, %lld steps, "
              "lr %g, weight decay %g, seed %llu; %lld parameters\n",
              a.task.c_str(), g.layers, g.layers == 1 ? "" : "s", g.heads, variant.c_str(), g.dModel, g.mlp ? ", MLP" : "", g.vocab,
              g.seqLen, s.batch, static_cast<long long>(s.steps), static_cast<double>(s.adam.lr),
              static_cast<double>(s.adam.weightDecay), static_cast<unsigned long long>(s.seed),
              static_cast<long long>(tr.params().count()));
  std::fflush(stdout);

  const bool terminal = isatty(STDOUT_FILENO) != 0;
  // SIGINT/SIGTERM stop the loop between steps, which saves and exits 128 + the signal; the guard
  // lives through the final save, so a second Ctrl-C cannot cut the save short and leave a
  // temporary file. SIGXFSZ (a file-size limit, `ulimit -f`) is ignored meanwhile, so a write past
  // the limit fails with EFBIG and its temporary file is removed instead of the process being killed.
  InterruptGuard signals({SIGINT, SIGTERM}, {SIGXFSZ});
  CsvLog log;
  if (!a.log.empty()) {
    if (auto st = log.open(a.log, csvHeader(g.layers, g.heads)); !st) return fail(st.error().message);
  }
  std::int64_t savedStep = -1;
  // A checkpoint holds the whole history, so writing it at every evaluation would make a long run
  // quadratic: between the first and the last write, an evaluation writes only after kSaveGap.
  constexpr double kSaveGapSeconds = 5.0;
  auto lastWrite = std::chrono::steady_clock::now();
  auto save = [&](bool always) -> bool {
    if (a.save.empty() || savedStep == tr.stepCount()) return true;
    const auto now = std::chrono::steady_clock::now();
    if (!always && savedStep >= 0 && std::chrono::duration<double>(now - lastWrite).count() < kSaveGapSeconds) {
      return true;
    }
    if (auto st = saveCheckpoint(a.save, tr.checkpoint()); !st) {
      std::fprintf(stderr, "mhascope: error: %s\n", st.error().message.c_str());
      return false;
    }
    savedStep = tr.stepCount();
    lastWrite = std::chrono::steady_clock::now();
    return true;
  };
  // The one rule (train/trainer.hpp): --steps is the step the run ends at, --init's run included.
  const std::int64_t startStep = tr.stepCount();
  const std::int64_t endStep = s.steps;
  double lastTrainLoss = 0, trainSeconds = 0, evalSeconds = 0;
  std::int64_t stepsDone = 0;
  const auto runStart = std::chrono::steady_clock::now();
  // The timeline's pictures, taken from the trainer at each evaluation and thinned (every other
  // older one dropped, the last kept) past the Train mode's own bound.
  std::vector<Snapshot> pictures;
  auto timedEvaluate = [&]() {
    const auto t0 = std::chrono::steady_clock::now();
    auto e = tr.evaluate();
    evalSeconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (pictures_) {
      for (Snapshot& p : tr.takeSnapshots()) pictures.push_back(std::move(p));
      std::size_t bytes = 0;
      for (const Snapshot& p : pictures) bytes += p.weights.size() * sizeof(float);
      if (bytes > TrainingSession::kSnapshotsBudgetBytes && pictures.size() > 2) {
        std::vector<Snapshot> thinned;
        for (std::size_t i = 0; i < pictures.size(); ++i) {
          if (i % 2 == 0 || i + 1 == pictures.size()) thinned.push_back(std::move(pictures[i]));
        }
        pictures = std::move(thinned);
      }
    }
    return e;
  };
  auto evaluate = [&]() -> bool {
    auto e = timedEvaluate();
    if (!e) {
      if (terminal) std::printf("\n");
      std::fprintf(stderr, "mhascope: error: %s\n", e.error().message.c_str());
      return false;
    }
    const double sps = trainSeconds > 0 ? static_cast<double>(stepsDone) / trainSeconds : 0.0;
    if (!a.log.empty()) {
      if (auto st = log.append(csvRow(*e, stepsDone > 0, lastTrainLoss, sps)); !st) {
        std::fprintf(stderr, "mhascope: error: %s\n", st.error().message.c_str());
        return false;
      }
    }
    if (!terminal) {
      if (stepsDone == 0) {
        std::printf("step %lld  probe loss %.4f  accuracy %.3f\n", static_cast<long long>(e->step), e->loss, e->accuracy);
      } else {
        std::printf("step %lld/%lld  train loss %.4f  probe loss %.4f  accuracy %.3f  %.0f steps/s\n",
                    static_cast<long long>(e->step), static_cast<long long>(endStep), lastTrainLoss, e->loss,
                    e->accuracy, sps);
      }
      std::fflush(stdout);
    }
    return save(tr.stepCount() == endStep);
  };

  if (!evaluate()) return 1;
  int code = 0;
  while (tr.stepCount() < endStep) {
    if (const int sig = InterruptGuard::received()) {
      std::printf("\ninterrupted at step %lld (%s)%s\n", static_cast<long long>(tr.stepCount()),
                  sig == SIGTERM ? "SIGTERM" : "Ctrl-C", a.save.empty() ? "" : ("; saving " + a.save).c_str());
      code = 128 + sig;
      break;
    }
    // The one loop body (train/trainer.hpp's runStep): the step, then the evaluation the rule asks
    // for, which here also logs, prints and saves.
    RunHooks hooks;
    hooks.stepped = [&](const LossResult& loss, double seconds) {
      trainSeconds += seconds;
      ++stepsDone;
      lastTrainLoss = loss.loss;
      const std::int64_t done = tr.stepCount();
      if (terminal && (stepsDone % 10 == 0 || done == endStep)) {
        const int width = 30;
        const int filled = static_cast<int>(width * stepsDone / std::max<std::int64_t>(1, endStep - startStep));
        std::printf("\r[%s%s] step %lld/%lld  loss %.4f  %.0f steps/s ", std::string(static_cast<std::size_t>(filled), '#').c_str(),
                    std::string(static_cast<std::size_t>(width - filled), '.').c_str(), static_cast<long long>(done),
                    static_cast<long long>(endStep), lastTrainLoss, static_cast<double>(stepsDone) / trainSeconds);
        std::fflush(stdout);
      }
    };
    hooks.evaluate = [&]() -> Status { return evaluate() ? Status(Ok{}) : Status(makeError("evaluation failed")); };
    const RunStep turn = runStep(tr, a.evalEvery, hooks);
    if (!turn.step) {
      if (terminal) std::printf("\n");
      std::fprintf(stderr, "mhascope: error: %s%s\n", turn.step.error().message.c_str(),
                   a.save.empty() ? "" : ("; saving them to " + a.save).c_str());
      code = 1;
      break;
    }
    if (!turn.evaluation) {  // said by evaluate() itself
      code = 1;
      break;
    }
  }
  if (terminal) std::printf("\n");
  if (code != 0 && !save(true)) return 1;
  if (tr.history().empty() || tr.history().back().step != tr.stepCount()) {
    if (auto e = timedEvaluate(); !e) {
      std::fprintf(stderr, "mhascope: error: %s\n", e.error().message.c_str());
      return code != 0 ? code : 1;
    }
  }
  if (pictures_) {
    std::vector<const Snapshot*> snaps;
    for (const Snapshot& p : pictures) snaps.push_back(&p);
    std::vector<std::string> tokens;
    for (int t = 0; t < tr.probeBatch().seq; ++t) tokens.push_back(tr.task().symbol(tr.probeBatch().tokens[static_cast<std::size_t>(t)]));
    const std::string run = a.task + " · " + std::to_string(g.layers) + " layers × " + std::to_string(g.heads) + " heads";
    const std::string title = run + " · seed " + std::to_string(s.seed) + " · probe batch";
    if (!a.timeline.empty()) {
      auto page = trainingTimelinePage(tr.history(), snaps, tokens, g.layers, g.heads, title);
      if (!page) return fail(page.error().message);
      if (auto st = exportHtml(a.timeline, *page); !st) return fail(st.error().message);
      std::printf("saved %s\n", a.timeline.c_str());
    }
    if (!a.animation.empty()) {
      // Every head, at most --animation-frames kept pictures evenly spaced: the Train mode's Export animation.
      std::vector<std::int64_t> all, steps;
      for (const Snapshot& p : pictures) all.push_back(p.step);
      for (std::size_t i : evenlySpaced(all.size(), static_cast<std::size_t>(a.animationFrames))) steps.push_back(all[i]);
      std::vector<std::pair<int, int>> heads;
      for (int l = 0; l < g.layers; ++l) {
        for (int i = 0; i < g.heads; ++i) heads.emplace_back(l, i);
      }
      TrainingAnimation anim;
      anim.delayCentiseconds = a.animationDelay;
      anim.width = a.animationWidth;
      auto sheet = runContactSheet(snaps, steps, heads, tokens, g.layers, g.heads, run + " · attention on the probe sequence");
      if (!sheet) return fail(sheet.error().message);
      anim.sheet = std::move(*sheet);
      anim.curves = runCurves(tr.history(), g.layers, g.heads, title, false, -1,
                              [&](int l, int i) { return headRgb(l, i, g.heads); });
      if (auto st = exportTrainingGif(a.animation, anim); !st) return fail(st.error().message);
      std::printf("saved %s (%zu frames)\n", a.animation.c_str(), steps.size());
    }
  }
  printRoles(tr.history().back());
  std::printf("\n");
  for (const std::string& paragraph : circuitLesson(tr.history(), tr.history().size() - 1, s.task.kind)) {
    std::printf("%s\n", paragraph.c_str());
  }
  if (const std::string note = alibiPreviousTokenNote(s.model, s.task); !note.empty()) std::printf("%s\n", note.c_str());
  // Training and the probe evaluations apart: at large T the evaluations can take most of the time.
  const double allSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - runStart).count();
  std::printf("\n%lld step%s in %.2f s of training (%.1f steps/s) + %.2f s of evaluations on the probe batch; "
              "%.2f s in all%s%s\n",
              static_cast<long long>(stepsDone), stepsDone == 1 ? "" : "s", trainSeconds,
              trainSeconds > 0 ? static_cast<double>(stepsDone) / trainSeconds : 0.0, evalSeconds, allSeconds,
              a.save.empty() ? "" : "; checkpoint ", a.save.c_str());
  return code;
}

}  // namespace mhascope::cli
