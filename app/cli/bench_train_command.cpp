// `mhascope bench --train` (train_command.hpp): training speed against PyTorch on the reference
// setting, and how long the induction circuit takes to form per seed.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench_command.hpp"  // captureCommand
#include "command_common.hpp"
#include "train_command.hpp"
#include "interrupt_guard.hpp"
#include "io/presets.hpp"  // assetsDir()
#include "io/file_io.hpp"
#include "train/circuit.hpp"
#include "train/trainer.hpp"
#include "util/format.hpp"

namespace mhascope::cli {

using namespace mhascope::train;

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

// Removes bench --train's temporary checkpoint on every way out of the function.
struct RemoveOnExit {
  std::string path;
  ~RemoveOnExit() {
    std::error_code ec;
    if (!path.empty()) std::filesystem::remove(path, ec);
  }
};

int cmdBenchTrain(const CLI::App& bench, int seeds, double budgetSeconds, int speedSteps) {
  using Clock = std::chrono::steady_clock;
  // Its setting is the reference one: every other option of `bench` would be ignored.
  for (const CLI::Option* o : bench.get_options()) {
    const std::string name = o->get_name();
    if (o->count() == 0 || name == "--train" || name == "--seeds" || name == "--budget" || name == "--train-steps" ||
        name == "--help") {
      continue;
    }
    return fail("bench --train times its own fixed setting (induction, 2 layers, d_model 64, h = 2, T 32, batch 16) "
                "and compares with PyTorch by itself; " + name + " would be ignored: drop it (only --seeds, --budget "
                "and --train-steps apply)");
  }
  if (seeds < 1) return fail("bench --train: --seeds must be at least 1, got " + std::to_string(seeds));
  if (speedSteps < 1) return fail("bench --train: --train-steps must be at least 1, got " + std::to_string(speedSteps));
  if (!(budgetSeconds >= 0) || !std::isfinite(budgetSeconds)) {
    char num[64];
    std::snprintf(num, sizeof num, "%g", budgetSeconds);
    return fail(std::string("bench --train: --budget must be a finite number of seconds >= 0, got ") + num);
  }
  // Ctrl-C / SIGTERM: stop between steps, remove the temporary file; SIGXFSZ ignored, as in train.
  InterruptGuard signals({SIGINT, SIGTERM}, {SIGXFSZ});
  auto stopped = [] { return InterruptGuard::received() != 0; };
  auto stopCode = [] {
    std::fprintf(stderr, "mhascope: interrupted\n");
    return 128 + InterruptGuard::received();
  };
  std::printf("mhascope bench --train: induction, 2 layers attention-only, d_model 64, h = 2, vocab 64, T 32, "
              "batch 16, AdamW lr 1e-3 wd 1e-4, period 6-16, one thread\n\n");
  // 1. Speed: ours, then PyTorch on the same model, init and batches.
  auto made = Trainer::make(referenceSettings(1, 2));
  if (!made) return fail(made.error().message);
  const std::string initPath =
      (std::filesystem::temp_directory_path() / ("mhascope_bench_init_" + std::to_string(getpid()) + ".safetensors"))
          .string();
  RemoveOnExit tempFile{initPath};
  if (auto st = saveCheckpoint(initPath, made->checkpoint()); !st) return fail(st.error().message);
  std::vector<double> times;
  double firstLoss = 0;
  for (int i = 0; i < speedSteps; ++i) {
    if (stopped()) return stopCode();
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
    if (stopped()) return stopCode();
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
  tempFile.path.clear();

  // 2. Circuit formation per seed, then the 1-layer control.
  std::printf("\ncircuit: probe loss < 0.5, an induction head in some layer l >= 1 (prefix matching >= %.2f and "
              "copying >= %.2f) and a previous-token head below it (>= %.2f at first occurrences) (checked every 25 "
              "steps, budget %.0f s)\n", kRoleThreshold, kCopyingThreshold, kRoleThreshold, budgetSeconds);
  int formedCount = 0;
  std::int64_t maxSteps = 0;
  for (int seed = 1; seed <= seeds; ++seed) {
    auto t = Trainer::make(referenceSettings(static_cast<std::uint64_t>(seed), 2));
    if (!t) return fail(t.error().message);
    t->keepSnapshots(false);
    const auto t0 = Clock::now();
    CircuitCheck c;
    double seconds = 0;
    while (true) {
      for (int i = 0; i < 25; ++i) {
        if (stopped()) return stopCode();
        if (auto r = t->step(); !r) return fail(r.error().message);
      }
      auto e = t->evaluate();
      if (!e) return fail(e.error().message);
      c = inductionCircuit(*e);
      seconds = std::chrono::duration<double>(Clock::now() - t0).count();
      if (c.formed || seconds > budgetSeconds) break;
    }
    formedCount += c.formed ? 1 : 0;
    maxSteps = std::max(maxSteps, t->stepCount());
    std::printf("  seed %d: %s at step %lld after %.2f s (probe loss %.3f, previous-token layer %d head %d %.2f, "
                "induction layer %d head %d: prefix matching %.2f, copying %.2f)\n",
                seed, c.formed ? "formed" : "NOT formed", static_cast<long long>(t->stepCount()), seconds, c.loss,
                c.prevLayer, c.prevHead, c.prev, c.inductionLayer, c.inductionHead, c.induction, c.copying);
  }
  std::printf("  formed for %d of %d seeds within %.0f s\n", formedCount, seeds, budgetSeconds);
  // The control gets the reference run's full length (1500 steps) or more.
  const std::int64_t controlSteps = std::max<std::int64_t>(maxSteps, budgetSeconds >= 1.0 ? 1500 : 0);
  std::printf("\n1-layer control (same task and sizes, %lld steps each)\n", static_cast<long long>(controlSteps));
  for (int seed = 1; seed <= seeds; ++seed) {
    auto t = Trainer::make(referenceSettings(static_cast<std::uint64_t>(seed), 1));
    if (!t) return fail(t.error().message);
    while (t->stepCount() < controlSteps) {
      if (stopped()) return stopCode();
      if (auto r = t->step(); !r) return fail(r.error().message);
    }
    auto e = t->evaluate();
    if (!e) return fail(e.error().message);
    double best = 0;
    for (int i = 0; i < e->heads; ++i) best = std::max(best, e->at(0, i).induction);
    std::printf("  seed %d: probe loss %.3f, best prefix matching %.2f\n", seed, e->loss, best);
  }
  return 0;
}

}  // namespace mhascope::cli
