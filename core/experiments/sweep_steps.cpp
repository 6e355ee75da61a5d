// The steps every sweep shares (sweep_steps.hpp).
#include "experiments/sweep_steps.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <mutex>

#include "model/forward_steps.hpp"
#include "util/thread_pool.hpp"

namespace mhascope::experiments::detail {

model::ForwardOptions sweepForwardOptions(std::uint64_t budget) {
  model::ForwardOptions opt;
  opt.keepAttention = false;
  opt.keepHidden = false;
  opt.threads = 1;
  opt.memoryBudgetBytes = budget;
  return opt;
}

Result<RowMatrix> PartialRunner::run(int first, const RowMatrix& x, model::ForwardHook hook, int stop) const {
  model::ForwardOptions o = opt;
  o.hook = std::move(hook);
  model::detail::ForwardState st;
  if (auto s = model::detail::startForward(model, tokens, o, 0.0, st); !s) return s.error();
  if (x.size() > 0) st.x = x;
  st.firstLayer = first;
  st.layers = layers;
  model::ForwardResult out;
  if (auto s = model::detail::runLayers(model, stop < 0 ? model.spec().layers : stop, o, st, out); !s) return s.error();
  return RowMatrix(st.x.bottomRows(1));
}

Result<std::vector<model::LayerWeights>> convertLayers(const model::ModelFolder& model, bool keep) {
  std::vector<model::LayerWeights> layers;
  if (!keep) return layers;
  for (int l = 0; l < model.spec().layers; ++l) {
    auto lw = model.layer(l);
    if (!lw) return lw.error();
    layers.push_back(std::move(*lw));
  }
  return layers;
}

model::ForwardHook keepAt(model::HookPoint want, std::vector<RowMatrix>& into) {
  return [want, &into](const model::HookSite& site, MatrixMap v) {
    if (site.point == want) into[static_cast<std::size_t>(site.layer)] = v;
  };
}

Status runCells(int threads, const std::vector<std::int64_t>& cells, const std::function<Result<double>(std::int64_t)>& cell,
                double cleanMetric, double corruptedMetric, std::vector<double>& metric, std::vector<double>& restored,
                const SweepProgress& progress) {
  const double span = cleanMetric - corruptedMetric;
  // The cells are independent forwards: their numbers the same on any number of threads. Progress is reported under
  // a lock, one call per cell finished.
  std::mutex reporting;
  std::atomic<int> done{0};
  std::atomic<bool> stop{false};
  std::vector<std::string> errors(cells.size());
  const int total = static_cast<int>(cells.size());
  parallelFor(std::max(1, threads), static_cast<std::int64_t>(cells.size()), [&](std::int64_t i) {
    if (stop.load()) return;
    const std::int64_t at = cells[static_cast<std::size_t>(i)];
    Result<double> m = cell(at);
    if (!m) {
      errors[static_cast<std::size_t>(i)] = m.error().message;
      stop = true;
      return;
    }
    metric[static_cast<std::size_t>(at)] = *m;
    restored[static_cast<std::size_t>(at)] = span != 0.0 ? (*m - corruptedMetric) / span : std::numeric_limits<double>::quiet_NaN();
    if (progress) {
      const std::lock_guard<std::mutex> lock(reporting);
      const int finished = ++done;  // counted under the lock: the calls see 1, 2, 3, … in order
      if (!stop.load() && !progress(finished, total)) stop = true;
    }
  });
  for (const std::string& e : errors) {
    if (!e.empty()) return makeError(e);
  }
  if (stop.load()) return makeError(model::kForwardCancelled);
  return Ok{};
}

}  // namespace mhascope::experiments::detail
