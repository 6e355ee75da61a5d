// `mhascope train`: parse options, then drive mhascope::train::Trainer.
#include "train_command.hpp"

#include "bench_command.hpp"

#include <climits>
#include <cstdint>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "model_options.hpp"  // decimalInteger
#include "io/csv.hpp"
#include "io/file_io.hpp"
#include "attention/model.hpp"  // assetsDir()
#include "train/circuit.hpp"
#include "train/trainer.hpp"

namespace mhascope::cli {
namespace {

using namespace mhascope::train;

std::atomic<bool> gInterrupted{false};
extern "C" void onSigint(int) { gInterrupted.store(true); }

int fail(const std::string& message) {
  std::fprintf(stderr, "mhascope: error: %s\n", message.c_str());
  return 1;
}

std::string csvHeader(const Evaluation& e) {
  std::string h = "step,train_loss,probe_loss,probe_accuracy,steps_per_second";
  for (int l = 0; l < e.layers; ++l) {
    for (int i = 0; i < e.heads; ++i) {
      const std::string p = ",layer" + std::to_string(l) + "_head" + std::to_string(i) + "_";
      h += p + "prev_token" + p + "induction" + p + "self" + p + "first_token" + p + "entropy";
    }
  }
  return h + "\n";
}

// trainLoss / stepsPerSecond are left empty before the first step.
std::string csvRow(const Evaluation& e, bool trained, double trainLoss, double stepsPerSecond) {
  auto num = [](double v) { return csvNumber(static_cast<float>(v)); };
  std::string r = std::to_string(e.step) + "," + (trained ? num(trainLoss) : "") + "," + num(e.loss) + "," +
                  num(e.accuracy) + "," + (trained ? num(stepsPerSecond) : "");
  for (const auto& s : e.scores) {
    r += "," + num(s.prevToken) + "," + num(s.induction) + "," + num(s.self) + "," + num(s.firstToken) + "," +
         num(s.entropy);
  }
  return r + "\n";
}

void printRoles(const Evaluation& e) {
  std::printf("\nHead roles at step %lld (probe batch; a role needs a score >= %.1f)\n",
              static_cast<long long>(e.step), kRoleThreshold);
  std::printf("  %-16s %-24s %8s %9s %6s %6s %8s\n", "head", "role", "prev-tok", "induction", "self", "first",
              "entropy");
  for (int l = 0; l < e.layers; ++l) {
    for (int i = 0; i < e.heads; ++i) {
      const HeadScores& s = e.at(l, i);
      const std::string name = "layer " + std::to_string(l) + " head " + std::to_string(i);
      std::printf("  %-16s %-24s %8.2f %9.2f %6.2f %6.2f %8.2f\n", name.c_str(), roleOf(s).c_str(), s.prevToken,
                  s.induction, s.self, s.firstToken, s.entropy);
    }
  }
}

}  // namespace

CLI::App* addTrainCommand(CLI::App& app, TrainArgs& a) {
  auto* c = app.add_subcommand("train", "train a tiny transformer on a task and watch its heads take roles");
  c->add_option("--task", a.task, "induction | reverse | sort | text")->capture_default_str();
  c->add_option("--layers", a.settings.model.layers, "number of blocks L (1-4)")->transform(decimalInteger(INT_MIN, INT_MAX))->capture_default_str();
  c->add_option("--heads", a.settings.model.heads, "heads per block h")->transform(decimalInteger(INT_MIN, INT_MAX))->capture_default_str();
  c->add_option("--d-model", a.settings.model.dModel, "d_model")->transform(decimalInteger(INT_MIN, INT_MAX))->capture_default_str();
  c->add_flag("--mlp", a.settings.model.mlp, "add an MLP (d_mlp = 4 d_model, exact GELU) to every block");
  c->add_option("--vocab", a.settings.task.vocab, "vocabulary size V (text: the file decides)")->transform(decimalInteger(INT_MIN, INT_MAX))->capture_default_str();
  c->add_option("--seq", a.settings.task.seq, "sequence length T")->transform(decimalInteger(INT_MIN, INT_MAX))->capture_default_str();
  c->add_option("--batch", a.settings.batch, "sequences per step")->transform(decimalInteger(INT_MIN, INT_MAX))->capture_default_str();
  c->add_option("--steps", a.settings.steps, "training steps")->transform(decimalInteger(INT_MIN, INT_MAX))->capture_default_str();
  c->add_option("--lr", a.settings.adam.lr, "AdamW learning rate")->capture_default_str();
  c->add_option("--weight-decay", a.settings.adam.weightDecay, "AdamW decoupled weight decay")->capture_default_str();
  c->add_option("--clip", a.settings.clip, "clip the global gradient norm to this (0 = off)")->capture_default_str();
  c->add_option("--seed", a.settings.seed, "seed of the init and of every batch")->transform(decimalInteger(0, UINT64_MAX))->capture_default_str();
  c->add_option("--eval-every", a.evalEvery, "evaluate on the probe batch every N steps")->transform(decimalInteger(INT_MIN, INT_MAX))->capture_default_str();
  c->add_option("--period-min", a.settings.task.periodMin, "induction: shortest period k")->transform(decimalInteger(INT_MIN, INT_MAX))->capture_default_str();
  c->add_option("--period-max", a.settings.task.periodMax, "induction: longest period k")->transform(decimalInteger(INT_MIN, INT_MAX))->capture_default_str();
  c->add_option("--text", a.settings.task.textPath, "text task: a UTF-8 file");
  c->add_option("--save", a.save, "checkpoint .safetensors (written at every evaluation, on Ctrl-C and at the end)");
  c->add_option("--log", a.log, "CSV of every evaluation (losses, accuracy, head scores)");
  c->add_option("--init", a.init, "start from this checkpoint's parameters (same sizes)");
  c->add_option("--workspace", a.workspace, "not for train (refused with the reason): a workspace shows a model, "
                "train makes one");
  return c;
}

int cmdTrain(const TrainArgs& a) {
  auto kind = taskFromName(a.task);
  if (!kind) return fail(kind.error().message);
  if (*kind == TaskKind::Text && a.settings.task.textPath.empty()) return fail("the text task needs --text FILE (a UTF-8 text file)");
  if (a.evalEvery < 1) return fail("--eval-every must be at least 1, got " + std::to_string(a.evalEvery));
  TrainSettings s = a.settings;
  s.task.kind = *kind;
  std::optional<Checkpoint> init;
  if (!a.init.empty()) {
    auto c = loadCheckpoint(a.init);
    if (!c) return fail(c.error().message);
    init = std::move(*c);
  }
  auto made = Trainer::make(s, init);
  if (!made) return fail(made.error().message);
  Trainer& tr = *made;
  const GptConfig& g = tr.params().cfg;
  std::printf("mhascope train: %s, %d layer%s, h = %d heads, d_model %d%s, vocab %d, T %d, batch %d, %lld steps, "
              "lr %g, weight decay %g, seed %llu; %lld parameters\n",
              a.task.c_str(), g.layers, g.layers == 1 ? "" : "s", g.heads, g.dModel, g.mlp ? ", MLP" : "", g.vocab,
              g.seqLen, s.batch, static_cast<long long>(s.steps), static_cast<double>(s.adam.lr),
              static_cast<double>(s.adam.weightDecay), static_cast<unsigned long long>(s.seed),
              static_cast<long long>(tr.params().count()));
  std::fflush(stdout);

  const bool terminal = isatty(STDOUT_FILENO) != 0;
  std::string logText;
  auto save = [&]() -> bool {
    if (a.save.empty()) return true;
    if (auto st = saveCheckpoint(a.save, tr.checkpoint()); !st) {
      std::fprintf(stderr, "mhascope: error: %s\n", st.error().message.c_str());
      return false;
    }
    return true;
  };
  const std::int64_t startStep = tr.stepCount();
  const std::int64_t endStep = startStep + s.steps;
  double lastTrainLoss = 0, trainSeconds = 0;
  std::int64_t stepsDone = 0;
  auto evaluate = [&]() -> bool {
    const Evaluation e = tr.evaluate();
    const double sps = trainSeconds > 0 ? static_cast<double>(stepsDone) / trainSeconds : 0.0;
    if (!a.log.empty()) {
      if (logText.empty()) logText = csvHeader(e);
      logText += csvRow(e, stepsDone > 0, lastTrainLoss, sps);
      if (auto st = writeFileAtomic(a.log, logText); !st) {
        std::fprintf(stderr, "mhascope: error: %s\n", st.error().message.c_str());
        return false;
      }
    }
    if (!terminal) {
      if (stepsDone == 0) {
        std::printf("step %lld  probe loss %.4f  accuracy %.3f\n", static_cast<long long>(e.step), e.loss, e.accuracy);
      } else {
        std::printf("step %lld/%lld  train loss %.4f  probe loss %.4f  accuracy %.3f  %.0f steps/s\n",
                    static_cast<long long>(e.step), static_cast<long long>(endStep), lastTrainLoss, e.loss, e.accuracy,
                    sps);
      }
      std::fflush(stdout);
    }
    return save();
  };

  gInterrupted.store(false);
  auto previous = std::signal(SIGINT, onSigint);
  if (!evaluate()) return 1;
  int code = 0;
  while (tr.stepCount() < endStep) {
    if (gInterrupted.load()) {
      std::printf("\ninterrupted at step %lld%s\n", static_cast<long long>(tr.stepCount()),
                  a.save.empty() ? "" : ("; saving " + a.save).c_str());
      code = 130;
      break;
    }
    const auto t0 = std::chrono::steady_clock::now();
    auto r = tr.step();
    trainSeconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!r) {
      if (terminal) std::printf("\n");
      std::fprintf(stderr, "mhascope: error: %s%s\n", r.error().message.c_str(),
                   a.save.empty() ? "" : ("; saving them to " + a.save).c_str());
      code = 1;
      break;
    }
    ++stepsDone;
    lastTrainLoss = r->loss;
    const std::int64_t done = tr.stepCount() - startStep;
    if (terminal && (done % 10 == 0 || tr.stepCount() == endStep)) {
      const int width = 30, filled = static_cast<int>(width * done / std::max<std::int64_t>(1, s.steps));
      std::printf("\r[%s%s] step %lld/%lld  loss %.4f  %.0f steps/s ", std::string(static_cast<std::size_t>(filled), '#').c_str(),
                  std::string(static_cast<std::size_t>(width - filled), '.').c_str(), static_cast<long long>(done),
                  static_cast<long long>(s.steps), lastTrainLoss, static_cast<double>(stepsDone) / trainSeconds);
      std::fflush(stdout);
    }
    if (done % a.evalEvery == 0 || tr.stepCount() == endStep) {
      if (!evaluate()) {
        code = 1;
        break;
      }
    }
  }
  std::signal(SIGINT, previous);
  if (terminal) std::printf("\n");
  if (code != 1 || !tr.history().empty()) {
    if (code != 0 && !save()) return 1;
    if (tr.history().empty() || tr.history().back().step != tr.stepCount()) tr.evaluate();
    printRoles(tr.history().back());
    std::printf("\n%lld steps in %.2f s: %.1f steps/s%s%s\n", static_cast<long long>(stepsDone), trainSeconds,
                trainSeconds > 0 ? static_cast<double>(stepsDone) / trainSeconds : 0.0,
                a.save.empty() ? "" : "; checkpoint ", a.save.c_str());
  }
  return code;
}

namespace {

TrainSettings referenceSettings(std::uint64_t seed, int layers) {
  TrainSettings s;
  s.task = {TaskKind::Induction, 64, 32, 6, 16, ""};
  s.model.layers = layers;
  s.model.heads = 2;
  s.model.dModel = 64;
  s.batch = 16;
  s.adam.lr = 1e-3f;
  s.adam.weightDecay = 1e-4f;
  s.seed = seed;
  return s;
}

double medianOf(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

}  // namespace

int cmdBenchTrain(int seeds, double budgetSeconds, int speedSteps) {
  using Clock = std::chrono::steady_clock;
  if (seeds < 1 || speedSteps < 1 || !(budgetSeconds >= 0)) {
    return fail("bench --train needs --seeds >= 1, --train-steps >= 1 and --budget >= 0");
  }
  std::printf("mhascope bench --train: induction, 2 layers attention-only, d_model 64, h = 2, vocab 64, T 32, "
              "batch 16, AdamW lr 1e-3 wd 1e-4, period 6-16, one thread\n\n");
  // 1. Speed: ours, then PyTorch on the same model, init and batches.
  auto made = Trainer::make(referenceSettings(1, 2));
  if (!made) return fail(made.error().message);
  const std::string initPath =
      (std::filesystem::temp_directory_path() / ("mhascope_bench_init_" + std::to_string(getpid()) + ".safetensors"))
          .string();
  if (auto st = saveCheckpoint(initPath, made->checkpoint()); !st) return fail(st.error().message);
  std::vector<double> times;
  double firstLoss = 0;
  for (int i = 0; i < speedSteps; ++i) {
    const auto t0 = Clock::now();
    auto r = made->step();
    times.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    if (!r) return fail(r.error().message);
    if (i == 0) firstLoss = r->loss;
  }
  const double ours = medianOf(times);
  std::printf("speed (median of %d steps; forward + backward + AdamW)\n", speedSteps);
  std::printf("  mhascope: first-batch loss %.6f, %.3f ms/step, %.1f steps/s\n", firstLoss, ours * 1e3, 1.0 / ours);
  const std::string script = assetsDir() + "/../scripts/bench_train_torch.py";
  if (std::filesystem::exists("/usr/bin/python3") && std::filesystem::exists(script)) {
    const std::string cmd = "env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 "
                            "/usr/bin/python3 '" + script + "' '" + initPath + "' --steps " +
                            std::to_string(speedSteps) + " 2>&1";
    std::string out;
    const int status = captureCommand(cmd, out);
    double torchMs = 0;
    const auto at = out.find("median ");
    if (status == 0 && at != std::string::npos) torchMs = std::atof(out.c_str() + at + 7);
    if (torchMs > 0) {
      std::printf("  PyTorch:  %s", out.c_str());
      std::printf("  ratio: mhascope does %.2fx PyTorch's steps per second\n", torchMs / (ours * 1e3));
    } else {
      std::printf("  PyTorch: not measured (/usr/bin/python3 with torch 1.13 needed): %s\n",
                  out.substr(0, out.find('\n')).c_str());
    }
  } else {
    std::printf("  PyTorch: not measured (no /usr/bin/python3 or %s)\n", script.c_str());
  }
  std::filesystem::remove(initPath);

  // 2. Circuit formation per seed, then the 1-layer control.
  std::printf("\ncircuit: probe loss < 0.5, a layer-0 previous-token score > 0.3, a layer-1 induction score > 0.3 "
              "(checked every 25 steps, budget %.0f s)\n", budgetSeconds);
  int formedCount = 0;
  std::int64_t maxSteps = 0;
  for (int seed = 1; seed <= seeds; ++seed) {
    auto t = Trainer::make(referenceSettings(static_cast<std::uint64_t>(seed), 2));
    if (!t) return fail(t.error().message);
    const auto t0 = Clock::now();
    CircuitCheck c;
    double seconds = 0;
    while (true) {
      for (int i = 0; i < 25; ++i) {
        if (auto r = t->step(); !r) return fail(r.error().message);
      }
      c = inductionCircuit(t->evaluate());
      seconds = std::chrono::duration<double>(Clock::now() - t0).count();
      if (c.formed || seconds > budgetSeconds) break;
    }
    formedCount += c.formed ? 1 : 0;
    maxSteps = std::max(maxSteps, t->stepCount());
    std::printf("  seed %d: %s at step %lld after %.2f s (probe loss %.3f, best layer-0 previous-token %.2f, best "
                "layer-1 induction %.2f)\n",
                seed, c.formed ? "formed" : "NOT formed", static_cast<long long>(t->stepCount()), seconds, c.loss,
                c.prev, c.induction);
  }
  std::printf("  formed for %d of %d seeds within %.0f s\n", formedCount, seeds, budgetSeconds);
  // The control gets the reference run's full length (1500 steps) or more.
  const std::int64_t controlSteps = std::max<std::int64_t>(maxSteps, budgetSeconds >= 1.0 ? 1500 : 0);
  std::printf("\n1-layer control (same task and sizes, %lld steps each)\n", static_cast<long long>(controlSteps));
  for (int seed = 1; seed <= seeds; ++seed) {
    auto t = Trainer::make(referenceSettings(static_cast<std::uint64_t>(seed), 1));
    if (!t) return fail(t.error().message);
    while (t->stepCount() < controlSteps) {
      if (auto r = t->step(); !r) return fail(r.error().message);
    }
    const Evaluation e = t->evaluate();
    double best = 0;
    for (int i = 0; i < e.heads; ++i) best = std::max(best, e.at(0, i).induction);
    std::printf("  seed %d: probe loss %.3f, best induction score %.2f\n", seed, e.loss, best);
  }
  return 0;
}

}  // namespace mhascope::cli
