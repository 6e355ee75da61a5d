// The Circuits view's work off the UI thread (circuits_view.hpp): one job at a time computes a
// step's circuits (and the random baseline of its sizes, once); a finished job is collected at the
// start of the next frame that draws the view.
#include "train_lab/circuits_view.hpp"

#include <algorithm>
#include <chrono>
#include <exception>
#include <filesystem>

#include "train/checkpoint.hpp"
#include "train/layer_model.hpp"
#include "train/rollout.hpp"
#include "train/tasks.hpp"

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
      used = baseline ? *baseline : compositionBaseline(p->cfg.dModel, dk);
      e.circuits = std::make_shared<const Circuits>(computeCircuits(*p, used));
    }
  } catch (const std::exception& ex) {  // bad_alloc on a huge model: said, never fatal
    e.error = std::string("cannot compute the circuits: ") + ex.what();
  }
  return {std::move(e), used};
}

}  // namespace

void CircuitsView::poll() {
  if (!job.valid() || job.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return;
  auto [entry, baseline] = job.get();
  if (entry.circuits) baselines[{entry.circuits->dModel, entry.circuits->dk}] = baseline;
  entry.serial = ++serialCounter;
  cache.push_back(std::move(entry));
  if (cache.size() > kCacheSteps) cache.erase(cache.begin());
  jobParams.reset();
}

const CircuitsEntry* CircuitsView::entryFor(const std::shared_ptr<const GptParams>& params) {
  if (!params) return nullptr;
  poll();
  for (std::size_t i = 0; i < cache.size(); ++i) {
    if (cache[i].params == params) {
      // Most recently used last: the cache drops the steps looked at longest ago.
      std::rotate(cache.begin() + static_cast<std::ptrdiff_t>(i), cache.begin() + static_cast<std::ptrdiff_t>(i) + 1, cache.end());
      return &cache.back();
    }
  }
  if (!job.valid()) {
    std::optional<double> baseline;
    if (params->cfg.heads > 0) {
      auto it = baselines.find({params->cfg.dModel, params->cfg.dModel / params->cfg.heads});
      if (it != baselines.end()) baseline = it->second;
    }
    jobParams = params;
    job = std::async(std::launch::async, computeEntry, params, baseline);
  }
  return nullptr;
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
    auto probe = checkpointProbe(*ck, 1, text);
    if (!probe) {
      out->rolloutWhy = probe.error().message;
    } else if (auto snap = sequenceSnapshot(ck->params, probe->batch, budgetBytes ? budgetBytes : kDefaultMemoryBudget); !snap) {
      out->rolloutWhy = snap.error().message;
    } else {
      out->snapshot = std::move(*snap);
      out->probeLabels = probe->labels.front();
    }
    out->params = std::make_shared<const GptParams>(std::move(ck->params));
  } catch (const std::exception& e) {
    out->error = "cannot read '" + path + "': " + e.what();
  }
  return out;
}

}  // namespace mhascope::app
