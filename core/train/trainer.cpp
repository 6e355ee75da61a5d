// The training loop and its evaluation.
#include "train/trainer.hpp"

#include <chrono>

#include "train/ablation.hpp"
#include "train/memory.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>

#include "attention/tokenizer.hpp"  // displayToken

namespace mhascope::train {

namespace {
bool allFinite(GptParams& p) {
  for (const auto& np : p.list()) {
    if (!np.value->allFinite()) return false;
  }
  return true;
}

// The characters one alphabet has and the other lacks, for the --init message (a few of each).
std::string alphabetDifference(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  auto onlyIn = [](const std::vector<std::string>& x, const std::vector<std::string>& y) {
    std::vector<std::string> sx = x, sy = y, out;
    std::sort(sx.begin(), sx.end());
    std::sort(sy.begin(), sy.end());
    std::set_difference(sx.begin(), sx.end(), sy.begin(), sy.end(), std::back_inserter(out));
    std::string list;
    for (std::size_t i = 0; i < out.size() && i < 8; ++i) list += (i ? " " : "") + ("'" + displayToken(out[i]) + "'");
    if (out.size() > 8) list += " … (" + std::to_string(out.size()) + " in all)";
    return list.empty() ? std::string("none") : list;
  };
  return "characters only in the checkpoint: " + onlyIn(a, b) + "; only in the text: " + onlyIn(b, a);
}

}  // namespace

Trainer::Trainer(TrainSettings s, Task task, GptParams p)
    : s_(std::move(s)), task_(std::move(task)), params_(std::move(p)), grads_(zeroParams(params_.cfg)),
      backup_(params_), adam_(params_.cfg, s_.adam) {
  probe_ = task_.probe(s_.seed, s_.probeBatch);
  cache_.memoryBudgetBytes = s_.memoryBudgetBytes;
}

Result<Trainer> Trainer::make(TrainSettings s, const std::optional<Checkpoint>& init) {
  // The periods mean something to the induction task only: the other tasks keep the defaults, so
  // a checkpoint never records a value its reader would refuse.
  if (s.task.kind != TaskKind::Induction) {
    s.task.periodMin = TaskConfig{}.periodMin;
    s.task.periodMax = TaskConfig{}.periodMax;
  }
  auto task = Task::make(s.task);
  if (!task) return task.error();
  s.model.vocab = task->vocab();
  s.model.seqLen = s.task.seq;
  if (auto v = validateConfig(s.model); !v) return v.error();
  std::vector<std::string> problems;
  if (s.batch < 1 || s.batch > 4096) problems.push_back("batch must be 1 to 4096, got " + std::to_string(s.batch));
  if (s.probeBatch < 1 || s.probeBatch > 4096) problems.push_back("probe batch must be 1 to 4096");
  if (s.steps < 0) problems.push_back("steps must be >= 0, got " + std::to_string(s.steps));
  char num[64];
  std::snprintf(num, sizeof num, "%g", static_cast<double>(s.adam.lr));
  if (!(s.adam.lr > 0) || !std::isfinite(s.adam.lr)) {
    problems.push_back(std::string("the learning rate must be a finite number > 0, got ") + num);
  }
  std::snprintf(num, sizeof num, "%g", static_cast<double>(s.adam.weightDecay));
  if (!(s.adam.weightDecay >= 0) || !std::isfinite(s.adam.weightDecay)) {
    problems.push_back(std::string("the weight decay must be a finite number >= 0, got ") + num);
  } else if (static_cast<double>(s.adam.lr) * s.adam.weightDecay >= 1.0) {
    // AdamW multiplies every parameter by 1 - lr * wd each step: at 1 or more that zeroes or flips them.
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  "learning rate × weight decay (%g × %g = %g) must be below 1: each step multiplies every parameter "
                  "by 1 − lr·wd",
                  static_cast<double>(s.adam.lr), static_cast<double>(s.adam.weightDecay),
                  static_cast<double>(s.adam.lr) * s.adam.weightDecay);
    problems.push_back(buf);
  }
  std::snprintf(num, sizeof num, "%g", static_cast<double>(s.clip));
  if (!(s.clip >= 0) || !std::isfinite(s.clip)) {
    problems.push_back(std::string("clip must be a finite number >= 0 (0 = off), got ") + num);
  }
  if (!problems.empty()) {
    std::string msg = "the training settings cannot work:";
    for (const auto& p : problems) msg += "\n  - " + p;
    return makeError(msg);
  }
  // Before the parameters are allocated: the whole run's estimate against the budget.
  if (auto m = checkTrainingMemory(s, task->vocab(), task->textTokens().size()); !m) return m.error();
  const std::string from = init && !init->origin.empty() ? "the --init checkpoint '" + init->origin + "'"
                                                         : std::string("the --init checkpoint");
  if (init && s.task.kind != init->task.kind) {
    return makeError(from + " was trained on the " + taskName(init->task.kind) + " task; the settings ask for " +
                     taskName(s.task.kind));
  }
  if (init && s.task.kind == TaskKind::Text && init->alphabet != task->alphabet()) {
    // Same size is not enough: token i must be the same character, or the embeddings mean others.
    return makeError(from + " was trained on another alphabet than this text's (" +
                     std::to_string(init->alphabet.size()) + " and " + std::to_string(task->alphabet().size()) +
                     " characters): " + alphabetDifference(init->alphabet, task->alphabet()));
  }
  std::optional<GptParams> p;
  if (init) {
    const GptConfig& a = init->params.cfg;
    const GptConfig& b = s.model;
    const bool ropeBaseDiffers = a.positions == TrainPositions::Rope && a.ropeBase != b.ropeBase;
    if (a.vocab != b.vocab || a.seqLen != b.seqLen || a.dModel != b.dModel || a.heads != b.heads ||
        a.layers != b.layers || a.mlp != b.mlp || a.positions != b.positions || a.kv() != b.kv() || ropeBaseDiffers) {
      auto variant = [](const GptConfig& g) {
        char v[96];
        if (g.positions == TrainPositions::Rope) {
          std::snprintf(v, sizeof v, ", positions rope (base %g), kv-heads %d", static_cast<double>(g.ropeBase), g.kv());
        } else {
          std::snprintf(v, sizeof v, ", positions %s, kv-heads %d", trainPositionsName(g.positions), g.kv());
        }
        return std::string(v);
      };
      char buf[400];
      std::snprintf(buf, sizeof buf,
                    " has vocab %d, T %d, d_model %d, heads %d, layers %d, mlp %s%s; the "
                    "settings ask for vocab %d, T %d, d_model %d, heads %d, layers %d, mlp %s%s",
                    a.vocab, a.seqLen, a.dModel, a.heads, a.layers, a.mlp ? "on" : "off", variant(a).c_str(), b.vocab,
                    b.seqLen, b.dModel, b.heads, b.layers, b.mlp ? "on" : "off", variant(b).c_str());
      return makeError(from + buf);
    }
    p = init->params;
  } else {
    p = initParams(s.model, s.seed);
  }
  Trainer t(std::move(s), std::move(*task), std::move(*p));
  if (init) {
    t.step_ = init->step;
    // The run goes on where the checkpoint's stopped: its curves, role timelines and the step the
    // circuit formed carry over (decodeCheckpoint checked the block's sizes and steps).
    for (const Evaluation& e : init->history) {
      if (e.complete() && e.layers == t.params_.cfg.layers && e.heads == t.params_.cfg.heads && e.step <= t.step_) {
        t.history_.push_back(e);
      }
    }
    if (!t.history_.empty() && t.history_.back().step == t.step_) t.lastTrainLoss_ = t.history_.back().trainLoss;
  }
  return t;
}

Result<LossResult> Trainer::step() {
  const Batch b = task_.batch(s_.seed, step_, s_.batch);
  auto r = forward(params_, b, cache_);
  char buf[300];
  if (!r) {
    // The engine refuses some inputs (e.g. non-finite values after a diverging update): same
    // recovery as a NaN loss when an earlier step exists.
    if (!hasBackup_) return r.error();
    auto dst = params_.list(), src = backup_.list();
    for (std::size_t i = 0; i < dst.size(); ++i) *dst[i].value = *src[i].value;
    hasBackup_ = false;
    --step_;
    std::snprintf(buf, sizeof buf, " (at step %lld; learning rate %g may be too high); the parameters of step %lld are kept",
                  static_cast<long long>(step_ + 1), static_cast<double>(s_.adam.lr), static_cast<long long>(step_));
    return makeError(r.error().message + buf);
  }
  if (!std::isfinite(r->loss)) {
    // The parameters may be finite yet give NaN: go back to those of the last finite loss.
    const std::int64_t bad = step_;
    if (hasBackup_) {
      auto dst = params_.list(), src = backup_.list();
      for (std::size_t i = 0; i < dst.size(); ++i) *dst[i].value = *src[i].value;
      --step_;
      hasBackup_ = false;
    }
    std::snprintf(buf, sizeof buf,
                  "the loss became %s at step %lld (learning rate %g may be too high); the parameters of the last "
                  "good step (%lld, with a finite loss) are kept",
                  std::isnan(r->loss) ? "NaN" : "infinite", static_cast<long long>(bad),
                  static_cast<double>(s_.adam.lr), static_cast<long long>(step_));
    return makeError(buf);
  }
  backward(params_, b, cache_, grads_);
  const double norm = clipGradNorm(grads_, s_.clip);
  if (!std::isfinite(norm)) {
    std::snprintf(buf, sizeof buf,
                  "the gradients became non-finite at step %lld (learning rate %g may be too high); the parameters "
                  "of the last good step are kept",
                  static_cast<long long>(step_), static_cast<double>(s_.adam.lr));
    return makeError(buf);
  }
  {
    auto dst = backup_.list(), src = params_.list();
    for (std::size_t i = 0; i < dst.size(); ++i) *dst[i].value = *src[i].value;
    hasBackup_ = true;
  }
  adam_.step(params_, grads_);
  if (!allFinite(params_)) {
    auto dst = params_.list(), src = backup_.list();
    for (std::size_t i = 0; i < dst.size(); ++i) *dst[i].value = *src[i].value;
    std::snprintf(buf, sizeof buf,
                  "the parameters became non-finite at step %lld (learning rate %g may be too high); the parameters "
                  "of the last good step are kept",
                  static_cast<long long>(step_), static_cast<double>(s_.adam.lr));
    return makeError(buf);
  }
  ++step_;
  lastTrainLoss_ = r->loss;
  return *r;
}

Result<Evaluation> Trainer::evaluate() {
  auto r = evaluateOnProbe(params_, probe_, step_, cache_);
  if (!r) return makeError("the evaluation on the probe batch (" + std::to_string(probe_.batch) +
                           " sequences) at step " + std::to_string(step_) + " failed: " + r.error().message);
  Evaluation e = std::move(r->evaluation);
  e.trainLoss = lastTrainLoss_;
  if (keepSnapshots_) snapshots_.push_back(std::move(r->snapshot));
  if (!history_.empty() && history_.back().step == step_) {
    if (!e.trainLoss) e.trainLoss = history_.back().trainLoss;
    history_.back() = e;
  } else {
    history_.push_back(e);
  }
  return e;
}

Checkpoint Trainer::checkpoint() const {
  Checkpoint c;
  c.params = params_;
  c.task = s_.task;
  c.task.vocab = params_.cfg.vocab;
  c.alphabet = task_.alphabet();
  c.step = step_;
  c.seed = s_.seed;
  c.history = history_;
  return c;
}

bool evaluationDue(std::int64_t step, std::int64_t lastStep, int evalEvery) {
  return step >= lastStep || (evalEvery > 0 && step % evalEvery == 0);
}

RunStep runStep(Trainer& t, int evalEvery, const RunHooks& hooks) {
  RunStep r;
  const auto t0 = std::chrono::steady_clock::now();
  r.step = t.step();
  r.stepSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::int64_t done = t.stepCount();
  r.last = done >= t.settings().steps;
  r.evaluationDue = evaluationDue(done, t.settings().steps, evalEvery);
  if (!r.step) return r;
  if (hooks.stepped) hooks.stepped(*r.step, r.stepSeconds);
  if (!r.evaluationDue) return r;
  if (hooks.evaluate) {
    r.evaluation = hooks.evaluate();
  } else if (auto e = t.evaluate(); !e) {
    r.evaluation = e.error();
  }
  return r;
}

}  // namespace mhascope::train
