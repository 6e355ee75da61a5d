// What every sweep of partial forwards shares (activation patching, patching.cpp; path patching,
// path_patching.cpp): a forward from a kept stream, each layer's weights converted once when the budget holds them,
// and the loop over the cells — independent forwards on several threads, progress one call per cell, cancel.
// Internal to mhascope_experiments.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "experiments/patching.hpp"
#include "model/forward.hpp"

namespace mhascope::experiments::detail {

// The forward options of every run of a sweep: nothing kept but what the hooks take, one thread per forward (the
// cells run several at a time instead: a forward of a few tokens gains little from threads of its own).
model::ForwardOptions sweepForwardOptions(std::uint64_t budget);

// One forward from layer `first` (x: the stream before it; empty, with first 0: the embedding) up to layer `stop`
// (exclusive; -1: the end), with `hook`; the final stream's last row.
struct PartialRunner {
  const model::ModelFolder& model;
  const std::vector<int>& tokens;
  const std::vector<model::LayerWeights>* layers;  // every layer's, converted once; null: each read as it runs
  model::ForwardOptions opt;

  Result<RowMatrix> run(int first, const RowMatrix& x, model::ForwardHook hook, int stop = -1) const;
};

// Every layer's weights, converted once for the sweep (empty when keep is false).
Result<std::vector<model::LayerWeights>> convertLayers(const model::ModelFolder& model, bool keep);

// A hook keeping the table at `want` of every layer into into[layer].
model::ForwardHook keepAt(model::HookPoint want, std::vector<RowMatrix>& into);

// cell(index) → the patched run's metric, for each index of `cells` (positions in the grid), on up to `threads`
// threads; metric[index] and restored[index] (r against clean and corrupted; NaN when they are equal) are written.
// progress sees (done, cells.size()) one call at a time, in order; false stops the loop with the error
// model::kForwardCancelled; the first error of a cell is returned.
Status runCells(int threads, const std::vector<std::int64_t>& cells, const std::function<Result<double>(std::int64_t)>& cell,
                double cleanMetric, double corruptedMetric, std::vector<double>& metric, std::vector<double>& restored,
                const SweepProgress& progress);

}  // namespace mhascope::experiments::detail
