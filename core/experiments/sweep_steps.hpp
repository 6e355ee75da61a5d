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
  // `batch` such forwards at once (model/forward_steps.hpp's ForwardState::batch): xs (batch·T, d_model) their
  // streams before `first`, stacked; the hook sees each table with the sequences' rows stacked (sequence b's rows
  // b·R … (b+1)·R − 1 of a table of batch·R rows); (batch, d_model) each sequence's last final row.
  Result<RowMatrix> runBatch(int first, const RowMatrix& xs, int batch, model::ForwardHook hook, int stop = -1) const;
};

// How many cells of one grid row run as one forward: enough sequences that each weight matrix's pass is shared by
// about kBatchRows rows (at a few tokens, preparing a product costs as much as the product itself), at most `cols`;
// one where the forward takes one sequence only (a latent-attention model).
inline constexpr std::int64_t kBatchRows = 512;
int cellsPerForward(const model::ModelSpec& spec, std::int64_t T, int cols);

// Every layer's weights, converted once for the sweep (empty when keep is false).
Result<std::vector<model::LayerWeights>> convertLayers(const model::ModelFolder& model, bool keep);

// A hook keeping the table at `want` of every layer into into[layer].
model::ForwardHook keepAt(model::HookPoint want, std::vector<RowMatrix>& into);

// The metric of each row of `ends` (one final stream row per patched run), in order.
Result<std::vector<double>> metricsOfRows(const AnswerMetric& metric, const RowMatrix& ends);

// Groups of cells (positions in the grid), each computed by one call group(cells) → the patched runs' metrics in
// the same order, the groups on up to `threads` threads; metric[index] and restored[index] (r against clean and
// corrupted; NaN when they are equal) are written. progress sees (done, total cells) one call per cell, in order;
// false stops the loop with the error model::kForwardCancelled; the first error of a group is returned.
using CellGroup = std::vector<std::int64_t>;
Status runGroups(int threads, const std::vector<CellGroup>& groups,
                 const std::function<Result<std::vector<double>>(const CellGroup&)>& group, double cleanMetric,
                 double corruptedMetric, std::vector<double>& metric, std::vector<double>& restored,
                 const SweepProgress& progress);
// The cells of `cells` in groups of at most `size` consecutive ones that `sameGroup(a, b)` allows together.
std::vector<CellGroup> groupCells(const std::vector<std::int64_t>& cells, int size,
                                  const std::function<bool(std::int64_t, std::int64_t)>& sameGroup);

}  // namespace mhascope::experiments::detail
