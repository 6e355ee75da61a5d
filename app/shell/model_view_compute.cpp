// The Model tab's computing (model_view_compute.hpp).
#include "shell/model_view_compute.hpp"

#include <algorithm>
#include <exception>

#include "model/model_view.hpp"
#include "model_source/model_text.hpp"
#include "shell/compute_worker.hpp"  // computeThreads
#include "tokenize/tokenizer_files.hpp"
#include "util/memory_budget.hpp"

namespace mhascope::app {
namespace {

// The probe's ids and labels: the text through the model's tokenizer (BOS as its template asks),
// or BOS + n random ids repeated once (never a special token), labelled by the tokenizer when the
// folder has one, else by id.
struct Probe {
  std::shared_ptr<model::ModelFolder> folder;
  std::vector<int> ids;
  std::vector<std::string> labels;
  std::shared_ptr<const tokenize::BpeTokenizer> tokenizer;  // null: the folder has none (random probe)
  std::string textNote;                                     // ModelText::textNote
};

Result<Probe> makeProbe(const ModelViewInputs& in, const ModelCaches& caches, std::uint64_t memoryBudgetBytes) {
  Probe p;
  if (in.probe == ModelProbe::Text) {
    auto mt = tokenizeForModel(in.folder, in.text, "the text", caches.tokenizers.get(), memoryBudgetBytes);
    if (!mt) return mt.error();
    p.folder = std::make_shared<model::ModelFolder>(std::move(mt->folder));
    p.ids = std::move(mt->ids);
    p.labels = std::move(mt->labels);
    p.tokenizer = std::move(mt->tokenizer);
    p.textNote = std::move(mt->textNote);
    return p;
  }
  auto folder = model::ModelFolder::open(in.folder);
  if (!folder) return folder.error();
  p.folder = std::make_shared<model::ModelFolder>(std::move(*folder));
  const model::ModelSpec& s = p.folder->spec();
  // Optional here: ids need no tokenizer.
  const tokenize::TokenizerLimits limits{s.vocab, memoryBudgetBytes > 0 ? memoryBudgetBytes : defaultMemoryBudget()};
  std::shared_ptr<const tokenize::BpeTokenizer> tok;
  if (caches.tokenizers) {
    if (auto t = caches.tokenizers->load(p.folder->dir(), limits)) tok = std::move(*t);
  } else if (auto t = tokenize::loadTokenizer(p.folder->dir(), limits)) {
    tok = std::make_shared<const tokenize::BpeTokenizer>(std::move(*t));
  }
  std::vector<int> avoid;
  std::optional<int> bos;
  if (tok) {
    for (const tokenize::AddedToken& a : tok->addedTokens()) avoid.push_back(a.id);
    if (const auto b = tok->bosToken(); b && *b < s.vocab) bos = *b;
  }
  // BOS + 2n tokens must fit the model's positions (GPT-2's learned table).
  const int room = (s.maxPositions - (bos ? 1 : 0)) / 2;
  const int n = std::max(1, std::min(in.probeLength, room));
  if (bos) p.ids.push_back(*bos);
  const std::vector<int> rnd = model::repeatedRandomTokens(s.vocab, n, in.probeSeed, avoid);
  p.ids.insert(p.ids.end(), rnd.begin(), rnd.end());
  for (int id : p.ids) p.labels.push_back(tok ? tok->displayToken(id) : "#" + std::to_string(id));
  p.tokenizer = std::move(tok);
  return p;
}

}  // namespace

ModelViewState::Atlas thumbnailAtlas(const model::ModelView& v) {
  ModelViewState::Atlas a;
  if (v.layers <= 0 || v.heads <= 0) return a;
  const int r = v.head(0, 0).thumbRows, c = v.head(0, 0).thumbCols;
  a.thumbRows = r;
  a.thumbCols = c;
  a.cols = v.heads * c;
  a.values.assign(static_cast<std::size_t>(v.layers) * r * a.cols, 0.0f);
  for (int l = 0; l < v.layers; ++l) {
    for (int h = 0; h < v.heads; ++h) {
      const model::HeadView& hv = v.head(l, h);
      if (hv.thumbRows != r || hv.thumbCols != c) continue;  // every head has the same (T, T): never
      // The weights as they are, on the colour bar's one 0 … 1 scale: a row scaled to its own
      // largest weight would make a row spread evenly over 64 keys as bright as a one-key row.
      for (int i = 0; i < r; ++i) {
        const float* row = hv.thumbnail.data() + static_cast<std::size_t>(i) * c;
        float* out = a.values.data() + (static_cast<std::size_t>(l) * r + i) * a.cols + static_cast<std::size_t>(h) * c;
        std::copy(row, row + c, out);
      }
    }
  }
  return a;
}

ModelViewOutcome runModelViewJob(const ModelViewInputs& in, std::uint64_t memoryBudgetBytes, int threads,
                                 const std::shared_ptr<ModelViewJob>& job, const std::function<void()>& wake,
                                 const ModelCaches& caches) {
  ModelViewOutcome out;
  out.ticket = job;
  out.key = in;
  try {
    auto probe = makeProbe(in, caches, memoryBudgetBytes);
    if (!probe) {
      out.error = probe.error().message;
      return out;
    }
    job->layers = probe->folder->spec().layers;
    if (job->cancel) {
      out.cancelled = true;
      return out;
    }
    model::ModelViewOptions opt;
    opt.top = 5;
    opt.memoryBudgetBytes = memoryBudgetBytes > 0 ? memoryBudgetBytes : defaultMemoryBudget();
    opt.threads = threads;
    opt.residuals = caches.residuals;
    opt.progress = [&job, &wake](int done, int total) {
      const bool go = job->step(done, total);
      if (wake) wake();
      return go;
    };
    auto view = model::computeModelView(*probe->folder, probe->ids, probe->labels, opt);
    if (!view) {
      if (job->cancel) out.cancelled = true;
      else out.error = view.error().message;
      return out;
    }
    // The predicted tokens as text, for the Predictions tab (the tokenizer stays here).
    if (probe->tokenizer) model::nameTokens(*view, [&](int id) { return probe->tokenizer->displayToken(id); });
    view->textNote = probe->textNote;
    out.result = std::make_shared<const model::ModelView>(std::move(*view));
  } catch (const std::exception& e) {  // bad_alloc and friends: shown, the window keeps running
    out.error = std::string("the model view failed: ") + e.what();
  }
  return out;
}

namespace {

// A new result gets the grid's picture (a few hundred thousand floats at GPT-2 small's 144 heads)
// and keeps the selected head inside its sizes.
void afterResult(ModelViewState& m) {
  if (!m.result) {
    m.atlas.reset();
    return;
  }
  if (m.atlas && m.atlasSerial == m.resultSerial) return;
  m.atlas = std::make_shared<const ModelViewState::Atlas>(thumbnailAtlas(*m.result));
  m.atlasSerial = m.resultSerial;
  const int L = m.result->layers, h = m.result->heads;
  m.layer = std::clamp(m.layer, 0, std::max(0, L - 1));
  m.head = std::clamp(m.head, 0, std::max(0, h - 1));
}

}  // namespace

void applyModelViewOutcome(ModelViewState& m, ModelViewOutcome out) {
  m.apply(std::move(out));
  afterResult(m);
}

void ModelViewCompute::update(AppState& state, bool forceSync) {
  if (!state.modelView) return;
  ModelViewState& m = *state.modelView;
  job_.collect(m);
  const ModelViewInputs want = wantedModelView(state, m);
  // No model in use (closed, or back to text + seed): nothing is shown about one, so the Model
  // and Predictions tabs say how to open a model instead of a closed model's grid.
  std::optional<ModelViewInputs> wanted;
  if (!want.folder.empty()) wanted = want;
  JobRule rule;
  // An open the pipeline has not accepted yet (its compute may refuse the folder's text,
  // tokenizer or weights and put the previous model back): the running job goes on until then.
  rule.hold = static_cast<bool>(state.doc.beforeOpen);
  rule.clearWhenIdle = true;
  rule.sync = forceSync;
  const std::uint64_t budget = state.doc.memoryBudgetBytes;
  const int threads = computeThreads();
  job_.request(m, wanted, [&](const ModelViewInputs& in) {
    return [in, budget, threads, wake = job_.wake(), caches = caches_](const std::shared_ptr<ModelViewJob>& ticket) {
      return runModelViewJob(in, budget, threads, ticket, wake, caches);
    };
  }, rule);
  afterResult(m);
}

}  // namespace mhascope::app
