// The training loop and its evaluation.
#include "train/trainer.hpp"

#include "train/ablation.hpp"

#include <cmath>
#include <cstdio>

namespace mhascope::train {

namespace {
bool allFinite(GptParams& p) {
  for (const auto& np : p.list()) {
    if (!np.value->allFinite()) return false;
  }
  return true;
}
}  // namespace

Trainer::Trainer(TrainSettings s, Task task, GptParams p)
    : s_(std::move(s)), task_(std::move(task)), params_(std::move(p)), grads_(zeroParams(params_.cfg)),
      backup_(params_), adam_(params_.cfg, s_.adam) {
  probe_ = task_.probe(s_.seed, s_.probeBatch);
}

Result<Trainer> Trainer::make(TrainSettings s, const std::optional<Checkpoint>& init) {
  auto task = Task::make(s.task);
  if (!task) return task.error();
  s.model.vocab = task->vocab();
  s.model.seqLen = s.task.seq;
  if (auto v = validateConfig(s.model); !v) return v.error();
  std::vector<std::string> problems;
  if (s.batch < 1 || s.batch > 4096) problems.push_back("batch must be 1 to 4096, got " + std::to_string(s.batch));
  if (s.probeBatch < 1 || s.probeBatch > 4096) problems.push_back("probe batch must be 1 to 4096");
  if (s.steps < 0) problems.push_back("steps must be >= 0, got " + std::to_string(s.steps));
  if (!(s.adam.lr > 0) || !std::isfinite(s.adam.lr)) problems.push_back("learning rate must be > 0");
  if (!(s.adam.weightDecay >= 0) || !std::isfinite(s.adam.weightDecay)) problems.push_back("weight decay must be >= 0");
  if (!(s.clip >= 0)) problems.push_back("clip must be >= 0 (0 = off)");
  if (!problems.empty()) {
    std::string msg = "the training settings cannot work:";
    for (const auto& p : problems) msg += "\n  - " + p;
    return makeError(msg);
  }
  GptParams p = initParams(s.model, s.seed);
  if (init) {
    const GptConfig& a = init->params.cfg;
    const GptConfig& b = s.model;
    if (a.vocab != b.vocab || a.seqLen != b.seqLen || a.dModel != b.dModel || a.heads != b.heads ||
        a.layers != b.layers || a.mlp != b.mlp) {
      char buf[400];
      std::snprintf(buf, sizeof buf,
                    "the --init checkpoint has vocab %d, T %d, d_model %d, heads %d, layers %d, mlp %s; the "
                    "settings ask for vocab %d, T %d, d_model %d, heads %d, layers %d, mlp %s",
                    a.vocab, a.seqLen, a.dModel, a.heads, a.layers, a.mlp ? "on" : "off", b.vocab, b.seqLen,
                    b.dModel, b.heads, b.layers, b.mlp ? "on" : "off");
      return makeError(buf);
    }
    p = init->params;
  }
  Trainer t(std::move(s), std::move(*task), std::move(p));
  if (init) t.step_ = init->step;
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
  return *r;
}

Evaluation Trainer::evaluate() {
  Evaluation e;
  e.step = step_;
  e.layers = params_.cfg.layers;
  e.heads = params_.cfg.heads;
  if (auto r = evaluateOnProbe(params_, probe_, step_, cache_)) {
    e = r->evaluation;
    snapshots_.push_back(std::move(r->snapshot));
  }
  history_.push_back(e);
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
  return c;
}

}  // namespace mhascope::train
