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
  return runBatch(first, x, 1, std::move(hook), stop);
}

Result<RowMatrix> PartialRunner::runBatch(int first, const RowMatrix& xs, int batch, model::ForwardHook hook, int stop) const {
  model::ForwardOptions o = opt;
  o.hook = std::move(hook);
  model::detail::ForwardState st;
  if (auto s = model::detail::startForward(model, tokens, o, 0.0, st); !s) return s.error();
  if (xs.size() > 0) st.x = xs;
  st.firstLayer = first;
  st.layers = layers;
  st.batch = batch;
  model::ForwardResult out;
  if (auto s = model::detail::runLayers(model, stop < 0 ? model.spec().layers : stop, o, st, out); !s) return s.error();
  const Eigen::Index T = st.x.rows() / batch;
  RowMatrix last(batch, st.x.cols());  // (batch, d_model)
  for (int b = 0; b < batch; ++b) last.row(b) = st.x.row((b + 1) * T - 1);
  return last;
}

int cellsPerForward(const model::ModelSpec& spec, std::int64_t T, int cols) {
  if (spec.family->latentAttention() || T <= 0) return 1;
  return static_cast<int>(std::clamp<std::int64_t>(kBatchRows / T, 1, std::max(1, cols)));
}

std::vector<CellGroup> groupCells(const std::vector<std::int64_t>& cells, int size,
                                  const std::function<bool(std::int64_t, std::int64_t)>& sameGroup) {
  std::vector<CellGroup> groups;
  for (std::int64_t c : cells) {
    if (groups.empty() || static_cast<int>(groups.back().size()) >= size || !sameGroup(groups.back().front(), c)) groups.emplace_back();
    groups.back().push_back(c);
  }
  return groups;
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

Result<std::vector<double>> metricsOfRows(const AnswerMetric& metric, const RowMatrix& ends) {
  std::vector<double> out;
  out.reserve(static_cast<std::size_t>(ends.rows()));
  for (Eigen::Index j = 0; j < ends.rows(); ++j) {
    auto m = metric.of(ends.row(j));
    if (!m) return m.error();
    out.push_back(*m);
  }
  return out;
}

Status runGroups(int threads, const std::vector<CellGroup>& groups,
                 const std::function<Result<std::vector<double>>(const CellGroup&)>& group, double cleanMetric,
                 double corruptedMetric, std::vector<double>& metric, std::vector<double>& restored,
                 const SweepProgress& progress) {
  const double span = cleanMetric - corruptedMetric;
  // The groups are independent forwards: their numbers the same on any number of threads. Progress is reported
  // under a lock, one call per cell finished.
  std::mutex reporting;
  int done = 0;
  std::atomic<bool> stop{false};
  std::vector<std::string> errors(groups.size());
  int total = 0;
  for (const CellGroup& g : groups) total += static_cast<int>(g.size());
  parallelFor(std::max(1, threads), static_cast<std::int64_t>(groups.size()), [&](std::int64_t i) {
    if (stop.load()) return;
    const CellGroup& cells = groups[static_cast<std::size_t>(i)];
    Result<std::vector<double>> m = group(cells);
    if (!m) {
      errors[static_cast<std::size_t>(i)] = m.error().message;
      stop = true;
      return;
    }
    for (std::size_t j = 0; j < cells.size(); ++j) {
      const std::size_t at = static_cast<std::size_t>(cells[j]);
      metric[at] = (*m)[j];
      restored[at] = span != 0.0 ? ((*m)[j] - corruptedMetric) / span : std::numeric_limits<double>::quiet_NaN();
    }
    if (progress) {
      const std::lock_guard<std::mutex> lock(reporting);
      for (std::size_t j = 0; j < cells.size() && !stop.load(); ++j) {
        if (!progress(++done, total)) stop = true;  // counted under the lock: the calls see 1, 2, 3, … in order
      }
    }
  });
  for (const std::string& e : errors) {
    if (!e.empty()) return makeError(e);
  }
  if (stop.load()) return makeError(model::kForwardCancelled);
  return Ok{};
}

}  // namespace mhascope::experiments::detail
