// The Circuits view's work off the UI thread (circuits_view.hpp): one job at a time computes a
// step's circuits (and the random baseline of its sizes, once); a finished job is collected at the
// start of the next frame that draws the view.
#include "circuits/circuits_view.hpp"

#include <algorithm>
#include <chrono>
#include <exception>
#include <filesystem>
#include <optional>

#include "panels/panel.hpp"  // kCircuitsTab
#include "state/app_state.hpp"
#include "train/checkpoint.hpp"
#include "train/circuits_source.hpp"
#include "train/layer_model.hpp"
#include "train/tasks.hpp"
#include "train_lab/lab_state.hpp"

namespace mhascope::app {

using namespace mhascope::train;

namespace {

// The worker's job: the circuits of `p` with the baseline of its sizes (computed when not given).
std::pair<CircuitsEntry, double> computeEntry(std::shared_ptr<const GptParams> p, std::optional<double> baseline) {
  CircuitsEntry e;
  e.params = p;
  double used = baseline.value_or(0.0);
  try {
    if (auto s = checkCircuitsInput(*p); !s) {
      e.error = s.error().message;
    } else {
      const int dk = p->cfg.dModel / p->cfg.heads;
      used = baseline ? *baseline : analysis::compositionBaseline(p->cfg.dModel, dk);
      e.circuits = std::make_shared<const analysis::Circuits>(computeCircuits(*p, used));
    }
  } catch (const std::exception& ex) {  // bad_alloc on a huge model: said, never fatal
    e.error = std::string("cannot compute the circuits: ") + ex.what();
  }
  return {std::move(e), used};
}

}  // namespace

void CircuitsView::poll() {
  if (!worker) return;
  auto done = worker->take();
  if (!done) return;
  auto& [entry, baseline] = *done;
  if (entry.circuits) baselines[{entry.circuits->dModel, entry.circuits->dk}] = baseline;
  if (entry.params == jobParams) jobParams.reset();
  entry.serial = ++serialCounter;
  cache.push_back(std::move(entry));
  if (cache.size() > kCacheSteps) cache.erase(cache.begin());
}

const CircuitsEntry* CircuitsView::cached(const std::shared_ptr<const GptParams>& params) {
  if (!params) return nullptr;
  for (std::size_t i = 0; i < cache.size(); ++i) {
    if (cache[i].params == params) {
      // Most recently used last: the cache drops the steps looked at longest ago.
      std::rotate(cache.begin() + static_cast<std::ptrdiff_t>(i), cache.begin() + static_cast<std::ptrdiff_t>(i) + 1, cache.end());
      return &cache.back();
    }
  }
  return nullptr;
}

void CircuitsView::request(const std::shared_ptr<const GptParams>& params) {
  poll();
  if (!params || params == jobParams) return;
  for (const CircuitsEntry& e : cache)
    if (e.params == params) return;
  std::optional<double> baseline;
  if (params->cfg.heads > 0) {
    auto it = baselines.find({params->cfg.dModel, params->cfg.dModel / params->cfg.heads});
    if (it != baselines.end()) baseline = it->second;
  }
  if (!worker) worker = std::make_unique<LatestJob<std::pair<CircuitsEntry, double>>>();
  jobParams = params;
  worker->submit([params, baseline] { return computeEntry(params, baseline); });
}

void CircuitsView::prepareRollout(const Snapshot* s, std::uint64_t serial) {
  if (!s || s->layers <= 0) {
    trainRollout = analysis::Rollout{};
    rolloutOf = nullptr;
    input.rollout = nullptr;
    return;
  }
  if (snapshotSerial != serial || rolloutOf != s) {
    trainRollout = analysis::rolloutOf(*s);
    snapshotSerial = serial;
    rolloutOf = s;
  }
  input.rollout = &trainRollout;
  input.rolloutSerial = serial;
}

std::string checkpointCircuitsKey(const std::string& path, const std::string& text) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  std::string stamp = "missing";
  if (!ec) {
    const auto mtime = std::filesystem::last_write_time(path, ec);
    if (!ec) stamp = std::to_string(size) + ":" + std::to_string(mtime.time_since_epoch().count());
  }
  // NUL separators: no path or text can make two different triples meet.
  return path + std::string(1, '\0') + text + std::string(1, '\0') + stamp;
}

std::shared_ptr<const CheckpointCircuits> readCheckpointCircuits(const std::string& path, const std::string& text,
                                                                 std::uint64_t budgetBytes) {
  auto out = std::make_shared<CheckpointCircuits>();
  out->path = path;
  try {
    auto ck = budgetBytes ? loadCheckpoint(path, budgetBytes) : loadCheckpoint(path);
    if (!ck) {
      out->error = ck.error().message;
      return out;
    }
    out->step = ck->step;
    auto task = Task::make(ck->task);
    for (int v = 0; v < ck->params.cfg.vocab; ++v) {
      if (static_cast<std::size_t>(v) < ck->alphabet.size()) {
        out->vocabLabels.push_back(ck->alphabet[static_cast<std::size_t>(v)]);
      } else {
        out->vocabLabels.push_back(task ? task->symbol(v) : std::to_string(v));
      }
    }
    ProbeRollout r = checkpointRollout(*ck, text, budgetBytes ? budgetBytes : kDefaultMemoryBudget);
    out->rollout = std::move(r.rollout);
    out->probeLabels = std::move(r.tokens);
    out->params = std::make_shared<const GptParams>(std::move(ck->params));
  } catch (const std::exception& e) {
    out->error = "cannot read '" + path + "': " + e.what();
  }
  return out;
}

namespace {

// A checkpoint open in the Circuits tab is looked at (size and modification time) this often, so
// a re-saved file is read again without a stat() every frame.
constexpr double kCheckpointStatSeconds = 0.5;

// The Train mode's: the scrubbed step's parameters, the run's vocabulary, the shown snapshot.
CircuitsInput trainCircuitsInput(const TrainLab& lab) {
  CircuitsInput in;
  in.trainMode = true;
  const auto& v = lab.run.view;
  if (!v || v->history.empty()) {
    in.missing = "Press Train: the circuits of the step on the timeline appear here — QK and OV of each head, which "
                 "earlier head a later head reads (composition), the copying scores and the attention rollout.";
    return in;
  }
  in.params = paramsAt(*v, lab.run.shown.step);
  if (!in.params) {
    in.missing = "No parameters were kept for step " + std::to_string(lab.run.shown.step) +
                 " (a loaded checkpoint keeps its earlier steps' curves and roles only): choose a later step.";
  } else {
    std::int64_t kept = 0;
    for (const auto& p : v->params)
      if (p.params == in.params) kept = p.step;
    in.source = "step " + std::to_string(kept) + " of the run";
  }
  if (v->task) {
    for (int t = 0; t < v->task->vocab(); ++t) in.vocabLabels.push_back(v->task->symbol(t));
  }
  const Snapshot* snapshot = lab.run.shown.snapshot;
  if (snapshot && v->probe) {
    for (int t = 0; t < snapshot->seq; ++t) in.probeLabels.push_back(v->task->symbol(v->probe->tokens[static_cast<std::size_t>(t)]));
  }
  return in;
}

// The pipeline's, with a checkpoint open: read on the worker, the result kept per (path, text,
// file size + modification time), so an edited text or a re-saved file is read again.
CircuitsInput checkpointCircuitsInput(CircuitsView& view, const AppState& state, double now) {
  CircuitsInput in;
  const std::string& path = state.doc.files.checkpoint;
  if (path.empty()) {
    in.missing =
        "Open a training checkpoint (Open file… at the top of the controls, --checkpoint F on the command line, or "
        "a .safetensors from mhascope train --save or the Train mode's Save checkpoint dropped on the window) to read "
        "what its heads compute: QK and OV circuits, composition between layers, copying scores and the attention "
        "rollout. The Train mode shows the same for its run, step by step.";
    return in;
  }
  const std::string& text = state.doc.config.text;
  const std::string pathText = path + std::string(1, '\0') + text;
  if (pathText != view.checkpointPathText || view.checkpointStatAt < 0 || now - view.checkpointStatAt >= kCheckpointStatSeconds) {
    view.checkpointPathText = pathText;
    view.checkpointStamp = checkpointCircuitsKey(path, text);
    view.checkpointStatAt = now;
  }
  if (!view.checkpointJob) view.checkpointJob = std::make_unique<KeyedJob<std::string, CheckpointCircuits>>();
  view.checkpointJob->collect(view.checkpoint);
  const std::uint64_t budget = state.doc.memoryBudgetBytes;
  view.checkpointJob->request(view.checkpoint, view.checkpointStamp, [&](const std::string& key) {
    return [key, path, text, budget](const std::shared_ptr<JobTicket>&) {
      JobOutcome<std::string, CheckpointCircuits> out;
      out.key = key;
      out.result = readCheckpointCircuits(path, text, budget);
      return out;
    };
  });
  if (!view.checkpoint.result || view.checkpoint.resultKey != view.checkpointStamp) {
    in.missing = "reading " + path + " …";
    return in;
  }
  const CheckpointCircuits& ck = *view.checkpoint.result;
  if (!ck.error.empty()) {
    in.error = ck.error;
    return in;
  }
  in.params = ck.params;
  in.source = std::filesystem::path(ck.path).filename().string() + ", step " + std::to_string(ck.step);
  in.vocabLabels = ck.vocabLabels;
  in.rollout = ck.rollout.empty() ? nullptr : &ck.rollout;
  in.rolloutSerial = view.checkpoint.resultSerial;
  in.probeLabels = ck.probeLabels;
  in.rolloutWhy = ck.rollout.why;
  return in;
}

}  // namespace

void updateTrainCircuits(TrainLab& lab) {
  CircuitsView& c = lab.circuits;
  c.input = trainCircuitsInput(lab);
  c.request(c.input.params);
  c.prepareRollout(lab.run.shown.snapshot, lab.run.shown.pictureSerial);
}

void updateCircuitsTab(CircuitsTab& c, AppState& state, const ViewState& view, const std::string& openTab, double now) {
  if (openTab != kCircuitsTab) return;
  if (!state.doc.files.model.empty()) {
    if (!c.model.compute) c.model.compute = std::make_unique<ModelCircuitsCompute>();
    c.model.compute->update(c.model.state, modelCircuitsKey(state, view, c.model.pair), state.doc.memoryBudgetBytes,
                            c.modelCaches);
    return;
  }
  if (c.model.state.job) {
    // The pipeline left the model: its circuits are no longer wanted (the job's outcome is dropped,
    // so a return to the model computes them again rather than saying "cancelled").
    c.model.state.requestCancel();
    c.model.state.job.reset();
  }
  c.checkpoint.input = checkpointCircuitsInput(c.checkpoint, state, now);
  c.checkpoint.request(c.checkpoint.input.params);
}

}  // namespace mhascope::app
