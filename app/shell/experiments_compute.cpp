// The Experiments tab's job (shell/experiments_compute.hpp): texts → tokens → checks → patching sweep →
// direct logit attribution, with the grids made into labelled slices for the tab and its Export….
#include "shell/experiments_compute.hpp"

#include <cmath>
#include <exception>
#include <limits>
#include <optional>

#include "model/families/family.hpp"  // modelType
#include "model_source/model_text.hpp"
#include "shell/compute_worker.hpp"  // computeThreads
#include "state/app_state.hpp"
#include "util/memory_budget.hpp"

namespace mhascope::app {

// Named, not anonymous: a unity batch merges its files' anonymous namespaces.
namespace experiment_grids {

std::string pieces(const std::vector<std::string>& labels) {
  std::string s;
  for (const std::string& l : labels) s += (s.empty() ? "'" : " '") + l + "'";
  return s;
}

// A grid as a slice the heatmap widget and the exporter draw: signed numbers (the diverging map), the row and
// column labels the command line prints.
Slice2D gridSlice(int rows, int cols, std::vector<float> values, std::string rowAxis, std::string colAxis,
                  std::vector<std::string> rowLabels, std::vector<std::string> colLabels) {
  Slice2D s;
  s.stage = StageId::Scores;  // signed numbers: the diverging map on a range symmetric about 0
  s.rows = rows;
  s.cols = cols;
  auto owned = std::make_shared<std::vector<float>>(std::move(values));
  s.data = owned->data();
  s.owned = std::move(owned);
  s.rowAxis = std::move(rowAxis);
  s.colAxis = std::move(colAxis);
  s.rowLabels = std::move(rowLabels);
  s.colLabels = std::move(colLabels);
  return s;
}

void makePatchSlice(ExperimentResult& r) {
  const experiments::PatchGrid& g = r.grid;
  const bool byPosition = g.colAxis == "position";
  const int perLayer = g.site == experiments::PatchSite::HeadPosition ? r.heads : 1;
  std::vector<std::string> rowLabels, colLabels;
  for (int row = 0; row < g.rows; ++row) {
    rowLabels.push_back(perLayer > 1 ? std::to_string(row / perLayer) + "." + std::to_string(row % perLayer) : "L" + std::to_string(row));
  }
  for (int c = 0; c < g.cols; ++c) {
    colLabels.push_back(byPosition ? r.cleanTokens[static_cast<std::size_t>(c)] : (g.colAxis == "head" ? "H" : "KV") + std::to_string(c));
  }
  std::vector<float> values(g.restored.size());
  // Denoising: the cell that brings most of the clean answer back; noising: the one whose corrupted numbers take
  // most of it away (the lowest restored fraction).
  const double sign = g.direction == experiments::PatchDirection::Noise ? -1.0 : 1.0;
  double best = -std::numeric_limits<double>::infinity();
  for (int row = 0; row < g.rows; ++row) {
    for (int c = 0; c < g.cols; ++c) {
      const double v = g.at(row, c);
      values[static_cast<std::size_t>(row * g.cols + c)] = static_cast<float>(v);
      if (std::isfinite(v) && sign * v > best) {
        best = sign * v;
        r.topRow = row;
        r.topCol = c;
      }
    }
  }
  r.patchSlice = gridSlice(g.rows, g.cols, std::move(values), g.rowAxis, g.colAxis, std::move(rowLabels), std::move(colLabels));
}

void makeDlaSlice(ExperimentResult& r) {
  const experiments::LogitAttribution& a = *r.dla;
  std::vector<float> values(a.head.begin(), a.head.end());
  std::vector<std::string> rowLabels, colLabels;
  for (int l = 0; l < a.layers; ++l) rowLabels.push_back("L" + std::to_string(l));
  for (int i = 0; i < a.heads; ++i) colLabels.push_back("H" + std::to_string(i));
  r.dlaSlice = gridSlice(a.layers, a.heads, std::move(values), "layer", "head", std::move(rowLabels), std::move(colLabels));
}

}  // namespace experiment_grids

ExperimentOutcome runExperimentJob(const ExperimentInputs& in, std::uint64_t memoryBudgetBytes, int threads,
                                   const std::shared_ptr<ExperimentJob>& job, const std::function<void()>& wake,
                                   const ModelCaches& caches) {
  ExperimentOutcome out;
  out.ticket = job;
  out.key = in;
  const std::uint64_t budget = memoryBudgetBytes > 0 ? memoryBudgetBytes : defaultMemoryBudget();
  try {
    TokenizerCache* tokenizers = caches.tokenizers.get();
    auto clean = tokenizeForModel(in.folder, in.clean, "the clean text", tokenizers, budget);
    if (!clean) {
      out.error = clean.error().message;
      return out;
    }
    auto corrupt = tokenizeForModel(in.folder, in.corrupted, "the corrupted text", tokenizers, budget);
    if (!corrupt) {
      out.error = corrupt.error().message;
      return out;
    }
    if (auto s = experiments::checkSameLength(clean->ids.size(), corrupt->ids.size()); !s) {
      out.error = s.error().message + "\nclean: " + experiment_grids::pieces(clean->labels) + "\ncorrupted: " + experiment_grids::pieces(corrupt->labels);
      return out;
    }
    auto right = answerTokenOf(*clean, "the right answer", in.answer);
    if (!right) {
      out.error = right.error().message;
      return out;
    }
    experiments::PatchRequest r;
    r.clean = clean->ids;
    r.corrupted = corrupt->ids;
    r.answer.right = *right;
    r.answer.metric = in.metric;
    if (in.metric == experiments::Metric::LogitDiff) {
      if (in.wrong.empty()) {
        out.error = "the logit difference needs a wrong answer (the token the corrupted text leads to)";
        return out;
      }
      auto wrong = answerTokenOf(*clean, "the wrong answer", in.wrong);
      if (!wrong) {
        out.error = wrong.error().message;
        return out;
      }
      r.answer.wrong = *wrong;
    }
    r.site = in.site;
    r.direction = in.direction;
    r.threads = threads;
    r.memoryBudgetBytes = budget;

    auto res = std::make_shared<ExperimentResult>();
    const model::ModelSpec& spec = clean->folder.spec();
    res->modelType = spec.family->modelType;
    res->layers = spec.layers;
    res->heads = spec.heads;
    res->kvHeads = spec.kvHeads;
    res->cleanTokens = clean->labels;
    res->corruptedTokens = corrupt->labels;
    res->metric = in.metric;
    res->answer = r.answer.right;
    res->wrong = r.answer.wrong;
    res->answerText = clean->tokenizer->displayToken(r.answer.right);
    if (r.answer.wrong >= 0) res->wrongText = clean->tokenizer->displayToken(r.answer.wrong);
    // The estimate first, said while the sweep runs (the sweep itself refuses one above the budget).
    res->estimateBytes = experiments::estimatePatchBytes(spec, static_cast<std::int64_t>(r.clean.size()), r.site, false);
    job->estimateBytes = res->estimateBytes;
    const int sites = [&] {
      const auto shape = experiments::gridShape(spec, static_cast<std::int64_t>(r.clean.size()), r.site);
      return shape.first * shape.second;
    }();
    job->step(0, sites + 1);  // + 1: the attribution after the sweep
    if (wake) wake();
    auto grid = experiments::patchSweep(clean->folder, r, [&](int done, int) {
      const bool go = job->step(done, sites + 1);
      if (wake) wake();
      return go;
    });
    if (!grid) {
      if (job->cancel) out.cancelled = true;
      else out.error = grid.error().message;
      return out;
    }
    res->grid = std::move(*grid);
    experiment_grids::makePatchSlice(*res);
    if (in.metric == experiments::Metric::LogitDiff) {
      auto a = experiments::attributeLogits(clean->folder, r.clean, r.answer.right, r.answer.wrong, threads, budget);
      if (a) {
        res->dla = std::move(*a);
        experiment_grids::makeDlaSlice(*res);
      } else {
        res->dlaNote = a.error().message;
      }
    } else {
      res->dlaNote = "direct logit attribution reads the logit difference: pick that metric and a wrong answer";
    }
    if (job->cancel) {
      out.cancelled = true;
      return out;
    }
    job->step(sites + 1, sites + 1);
    out.result = std::move(res);
  } catch (const std::exception& e) {  // bad_alloc and friends: shown, the window keeps running
    out.error = std::string("the experiment failed: ") + e.what();
  }
  return out;
}

void ExperimentsCompute::update(AppState& state, bool forceSync) {
  if (!state.experiments) return;
  ExperimentsState& m = *state.experiments;
  job_.collect(m);
  // Run's inputs, while their folder is still the one in use: another folder (or none) wants nothing.
  std::optional<ExperimentInputs> want;
  if (m.wanted && !state.doc.files.model.empty() && m.wanted->folder == state.doc.files.model) want = m.wanted;
  JobRule rule;
  rule.sync = forceSync;
  const std::uint64_t budget = state.doc.memoryBudgetBytes;
  const int threads = computeThreads();
  job_.request(m, want, [&](const ExperimentInputs& in) {
    return [in, budget, threads, wake = job_.wake(), caches = caches_](const std::shared_ptr<ExperimentJob>& ticket) {
      return runExperimentJob(in, budget, threads, ticket, wake, caches);
    };
  }, rule);
}

}  // namespace mhascope::app
