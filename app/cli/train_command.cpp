// `mhascope train`: parse options, then drive mhascope::train::Trainer.
#include "train_command.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>

#include "mhascope/csv.hpp"
#include "mhascope/file_io.hpp"
#include "mhascope/train/trainer.hpp"

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
  c->add_option("--layers", a.layers, "number of blocks L (1-4)")->capture_default_str();
  c->add_option("--heads", a.heads, "heads per block h")->capture_default_str();
  c->add_option("--d-model", a.dModel, "d_model")->capture_default_str();
  c->add_flag("--mlp", a.mlp, "add an MLP (d_mlp = 4 d_model, exact GELU) to every block");
  c->add_option("--vocab", a.vocab, "vocabulary size V (text: the file decides)")->capture_default_str();
  c->add_option("--seq", a.seq, "sequence length T")->capture_default_str();
  c->add_option("--batch", a.batch, "sequences per step")->capture_default_str();
  c->add_option("--steps", a.steps, "training steps")->capture_default_str();
  c->add_option("--lr", a.lr, "AdamW learning rate")->capture_default_str();
  c->add_option("--weight-decay", a.weightDecay, "AdamW decoupled weight decay")->capture_default_str();
  c->add_option("--clip", a.clip, "clip the global gradient norm to this (0 = off)")->capture_default_str();
  c->add_option("--seed", a.seed, "seed of the init and of every batch")->capture_default_str();
  c->add_option("--eval-every", a.evalEvery, "evaluate on the probe batch every N steps")->capture_default_str();
  c->add_option("--period-min", a.periodMin, "induction: shortest period k")->capture_default_str();
  c->add_option("--period-max", a.periodMax, "induction: longest period k")->capture_default_str();
  c->add_option("--text", a.text, "text task: a UTF-8 file");
  c->add_option("--save", a.save, "checkpoint .safetensors (written at every evaluation, on Ctrl-C and at the end)");
  c->add_option("--log", a.log, "CSV of every evaluation (losses, accuracy, head scores)");
  c->add_option("--init", a.init, "start from this checkpoint's parameters (same sizes)");
  return c;
}

int cmdTrain(const TrainArgs& a) {
  auto kind = taskFromName(a.task);
  if (!kind) return fail(kind.error().message);
  if (*kind == TaskKind::Text && a.text.empty()) return fail("the text task needs --text FILE (a UTF-8 text file)");
  if (a.evalEvery < 1) return fail("--eval-every must be at least 1, got " + std::to_string(a.evalEvery));
  TrainSettings s;
  s.task = {*kind, a.vocab, a.seq, a.periodMin, a.periodMax, a.text};
  s.model.layers = a.layers;
  s.model.heads = a.heads;
  s.model.dModel = a.dModel;
  s.model.mlp = a.mlp;
  s.batch = a.batch;
  s.steps = a.steps;
  s.adam.lr = a.lr;
  s.adam.weightDecay = a.weightDecay;
  s.clip = a.clip;
  s.seed = a.seed;
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

}  // namespace mhascope::cli
