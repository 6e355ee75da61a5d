// The pipeline Circuits tab's work on a model folder (model_circuits_compute.hpp).
#include "train_lab/model_circuits_compute.hpp"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <filesystem>

#include "model/forward.hpp"  // kForwardCancelled
#include "model_source/model_text.hpp"
#include "panels/panel.hpp"
#include "state/app_state.hpp"
#include "shell/compute_worker.hpp"  // computeThreads
#include "state/model_view_state.hpp"
#include "util/format.hpp"
#include "util/memory_budget.hpp"

namespace mhascope::app {
namespace {


std::string folderNameOf(const std::string& path) {
  std::filesystem::path p(path);
  if (p.filename() == "config.json") p = p.parent_path();
  if (p.filename().empty()) p = p.parent_path();  // "dir/"
  const std::string name = p.filename().string();
  return name.empty() ? path : name;
}

std::string fixed3(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  return buf;
}

}  // namespace

ModelCircuitsKey modelCircuitsKey(const AppState& state, const ViewState& view) {
  ModelCircuitsKey k;
  k.folder = state.doc.files.model;
  if (k.folder.empty()) return k;
  k.text = state.doc.config.text;
  k.layer = state.doc.files.layer.value_or(0);
  k.head = view.head;
  return k;
}

ModelCircuitsOutcome runModelCircuitsJob(const ModelCircuitsKey& key, std::uint64_t memoryBudgetBytes, int threads,
                                         const std::shared_ptr<ModelCircuitsJob>& job, BaselineCache baselines) {
  ModelCircuitsOutcome out;
  out.ticket = job;
  out.key = key;
  try {
    auto mt = tokenizeForModel(key.folder, key.text, "the text");
    if (!mt) {
      out.error = mt.error().message;
      return out;
    }
    if (job->cancel) {
      out.cancelled = true;
      return out;
    }
    model::ModelCircuitsOptions opt;
    opt.layer = key.layer;
    opt.head = key.head;
    opt.memoryBudgetBytes = memoryBudgetBytes > 0 ? memoryBudgetBytes : defaultMemoryBudget();
    opt.threads = threads;
    const model::ModelSpec& spec = mt->folder.spec();
    if (auto it = baselines.find({spec.dModel, spec.dk()}); it != baselines.end()) opt.baseline = it->second;
    opt.progress = [&job](int done, int total) { return job->step(done, total); };
    auto c = model::computeModelCircuits(mt->folder, mt->ids, opt);
    if (!c) {
      if (job->cancel || c.error().message == model::kForwardCancelled) out.cancelled = true;
      else out.error = c.error().message;
      return out;
    }
    auto r = std::make_shared<ModelCircuitsResult>();
    r->folderName = folderNameOf(key.folder);
    r->rope = mt->folder.spec().rope();
    // Spelt as the Model tab spells tokens: the tokenizer's display form, a leading space as '␣'.
    for (int id : c->tokenIds) r->axisLabels.push_back(mt->tokenizer.displayToken(id));
    r->textLabels = mt->labels;
    std::vector<int> distinct = mt->ids;
    std::sort(distinct.begin(), distinct.end());
    r->distinctTokens = static_cast<int>(std::unique(distinct.begin(), distinct.end()) - distinct.begin());
    r->circuits = std::move(*c);
    out.result = std::move(r);
  } catch (const std::exception& e) {  // bad_alloc and friends: said, the window keeps running
    out.error = std::string("the circuits failed: ") + e.what();
  }
  return out;
}

void applyModelCircuitsOutcome(ModelCircuitsState& s, ModelCircuitsOutcome out) { s.apply(std::move(out)); }

std::string modelCircuitsStatus(const ModelCircuitsState& s, const ModelCircuitsKey& want) {
  return s.status(want, s.job ? s.job->stepText(kModelCircuitsReading) : std::string());
}

std::string modelCircuitsSource(const ModelCircuitsResult& r) {
  return r.folderName + " · layer " + std::to_string(r.circuits.layer) + ", head " + std::to_string(r.circuits.head);
}

std::string modelCircuitsConventions(bool rope) {
  std::string s = "Read from the weights alone: the norms' gains folded into W_q, W_k, W_v and U, their centring "
                  "and the biases left out";
  if (rope) s += "; RoPE: QK is the content part of the score only (the rotation by position is left out)";
  return s + ".";
}

std::string modelHeadText(const ModelCircuitsResult& r, int matrix) {
  const model::ModelCircuits& c = r.circuits;
  const std::string name = train::headName(c.layer, c.head);
  const bool hasCopying = c.layer >= 0 && c.head >= 0 && c.layer < c.layers && c.head < c.heads &&
                          c.copying.size() == static_cast<std::size_t>(c.layers) * static_cast<std::size_t>(c.heads);
  const std::string copying = hasCopying ? fixed3(c.copyingAt(c.layer, c.head)) : std::string("n/a");
  const int n = static_cast<int>(c.tokenIds.size());
  // A long text has more distinct tokens than the axes hold: say which of them are shown.
  const std::string which = r.distinctTokens > n ? "the first " + std::to_string(n) + " of the text's " +
                                                       std::to_string(r.distinctTokens) + " distinct tokens"
                                                 : "the text's " + std::to_string(n) + " distinct token" + (n == 1 ? "" : "s");
  const std::string over = "over " + which + " (of V = " + withThousands(c.vocab) + "), first occurrence first";
  switch (matrix) {
    case 0:
      return name + ": ||QK||_F = " + formatGeneral(c.qk.norm(), 4) +
             ". A query x_t scores key x_j with x_t QK x_jᵀ (before the 1/sqrt(d_k) scale); red: that direction "
             "of the query looks for that direction of the key.";
    case 1:
      return name + ": ||OV||_F = " + formatGeneral(c.ov.norm(), 4) +
             ". What the head writes to the residual stream for an attended x_j is x_j OV; copying score " + copying +
             " (E OV U's eigenvalues over the whole vocabulary: sum / sum of moduli).";
    case 2:
      return name + ": E QK Eᵀ " + over +
             ". Row: the query's token, column: the key's token; red: that query token looks at that key token more "
             "(content only: no position).";
    default:
      return name + ": E OV U " + over + ". Row: the attended token, column: the predicted token; red: attending to "
             "the row's token raises that token's logit. A red diagonal is copying; this head's copying score is " +
             copying + ".";
  }
}

std::string modelCompositionCellText(const model::ModelCircuits& c, const train::Composition& p, char kind) {
  return train::headName(p.fromLayer, p.fromHead) + " → " + train::headName(p.toLayer, p.toHead) + ": " +
         std::string(1, kind) + " " + fixed3(train::compositionScore(p, kind)) + " (random baseline " +
         fixed3(c.baseline) + ")";
}

std::string modelCopyingCellText(const model::ModelCircuits& c, int layer, int head) {
  return train::headName(layer, head) + ": copying score " + fixed3(c.copyingAt(layer, head));
}

void selectModelHead(AppState& state, ViewState& view, int layer, int head) {
  if (state.doc.files.model.empty()) return;
  if (state.modelView) {  // the Model tab's selection follows, as its own click sets it
    state.modelView->layer = layer;
    state.modelView->head = head;
  }
  if (state.doc.files.layer.value_or(0) == layer) {
    view.head = head;  // the same layer: only the view changes, nothing is recomputed
    return;
  }
  openHeadInPipeline(state, view, layer, head);
  view.selectTab = kCircuitsTab;  // the pipeline follows; the user stays where they clicked
}

void ModelCircuitsCompute::update(ModelCircuitsState& s, const ModelCircuitsKey& want, std::uint64_t memoryBudgetBytes) {
  job_.collect(s, [this](const ModelCircuitsOutcome& out) {
    if (!out.result) return;
    const model::ModelCircuits& c = out.result->circuits;
    baselines_[{c.dModel, c.dk}] = c.baseline;
  });
  std::optional<ModelCircuitsKey> wanted;
  if (!want.folder.empty()) wanted = want;
  const int threads = computeThreads();
  job_.request(s, wanted, [&](const ModelCircuitsKey& key) {
    return [key, memoryBudgetBytes, threads, baselines = baselines_](const std::shared_ptr<JobTicket>& ticket) {
      return runModelCircuitsJob(key, memoryBudgetBytes, threads, ticket, baselines);
    };
  });
}

}  // namespace mhascope::app
