// The pipeline Circuits tab's work on a model folder (model_circuits_compute.hpp).
#include "circuits/model_circuits_compute.hpp"

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

}  // namespace

ModelCircuitsKey modelCircuitsKey(const AppState& state, const ViewState& view, std::optional<analysis::HeadPair> pair) {
  ModelCircuitsKey k;
  k.folder = state.doc.files.model;
  if (k.folder.empty()) return k;
  k.text = state.doc.config.text;
  k.layer = state.doc.files.layer.value_or(0);
  k.head = view.head;
  k.pair = pair;
  return k;
}

ModelCircuitsOutcome runModelCircuitsJob(const ModelCircuitsKey& key, std::uint64_t memoryBudgetBytes, int threads,
                                         const std::shared_ptr<ModelCircuitsJob>& job, BaselineCache baselines,
                                         const ModelCaches& caches) {
  ModelCircuitsOutcome out;
  out.ticket = job;
  out.key = key;
  try {
    auto mt = tokenizeForModel(key.folder, key.text, "the text", caches.tokenizers.get(), memoryBudgetBytes);
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
    opt.pair = key.pair;
    opt.memoryBudgetBytes = memoryBudgetBytes > 0 ? memoryBudgetBytes : defaultMemoryBudget();
    opt.threads = threads;
    opt.residuals = caches.residuals;
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
    r->familyNote = model::circuitsFamilyNote(mt->folder.spec());
    // Spelt as the Model tab spells tokens: the tokenizer's display form, a leading space as '␣'.
    for (int id : c->tokenIds) r->axisLabels.push_back(mt->tokenizer->displayToken(id));
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

void ModelCircuitsCompute::update(ModelCircuitsState& s, const ModelCircuitsKey& want, std::uint64_t memoryBudgetBytes,
                                  const ModelCaches& caches) {
  job_.collect(s, [this](const ModelCircuitsOutcome& out) {
    if (!out.result) return;
    const analysis::OneHeadCircuits& c = out.result->circuits;
    baselines_[{c.dModel, c.dk}] = c.baseline;
  });
  std::optional<ModelCircuitsKey> wanted;
  if (!want.folder.empty()) wanted = want;
  const int threads = computeThreads();
  job_.request(s, wanted, [&](const ModelCircuitsKey& key) {
    return [key, memoryBudgetBytes, threads, baselines = baselines_, caches](const std::shared_ptr<JobTicket>& ticket) {
      return runModelCircuitsJob(key, memoryBudgetBytes, threads, ticket, baselines, caches);
    };
  });
}

}  // namespace mhascope::app
