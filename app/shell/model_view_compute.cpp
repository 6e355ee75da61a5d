// The Model tab's computing (model_view_compute.hpp).
#include "shell/model_view_compute.hpp"

#include <algorithm>
#include <exception>
#include <optional>

#include "model/model_view.hpp"
#include "model_source/model_text.hpp"
#include "shell/compute_worker.hpp"  // computeThreads
#include "tokenize/tokenizer_files.hpp"
#include "util/memory_budget.hpp"

namespace mhascope::app {
namespace {

// The probe's ids and labels: the text through the model's tokenizer (BOS as its template asks),
// or BOS + a run of random ids repeated (never a special token), labelled by the tokenizer when
// the folder has one, else by id.
struct Probe {
  std::shared_ptr<model::ModelFolder> folder;
  std::vector<int> ids;
  std::vector<std::string> labels;
  std::shared_ptr<const tokenize::BpeTokenizer> tokenizer;  // null: the folder has none (vocabulary probe)
  std::string textNote;                                     // ModelText::textNote
  std::optional<model::RepeatedProbe> repeated;             // how the random probe was made
};

// The distinct tokens of the text or of the typed set that a run is drawn from (special tokens and
// ids outside the model's vocabulary left out), or why there are not two to draw from.
Result<std::vector<int>> tokenPool(const ModelViewInputs& in, const tokenize::BpeTokenizer* tok, const model::ModelSpec& s,
                                   const std::vector<int>& avoid, std::string& textNote) {
  const bool fromText = in.source == model::ProbeSource::TextTokens;
  const std::string& text = fromText ? in.text : in.probeTokens;
  const std::string what = fromText ? "the text" : "the token set";
  if (!tok) return makeError("drawing from " + what + "'s tokens needs the model's tokenizer beside its config.json");
  if (text.empty()) {
    return makeError(what + " is empty: the probe draws its tokens from it; " +
                     (fromText ? "enter a text" : "type the tokens to draw from"));
  }
  textNote = invalidUtf8Note(text, what);
  auto ids = tok->encode(text);
  if (!ids) return ids.error();
  std::vector<int> inVocab;
  for (int id : *ids) {
    if (id < s.vocab) inVocab.push_back(id);
  }
  std::vector<int> pool = model::distinctTokens(inVocab, avoid);
  if (pool.size() < 2) {
    std::string has = pool.empty() ? "no token the probe may use" : "one token ('" + tok->displayToken(pool[0]) + "', id " + std::to_string(pool[0]) + ")";
    return makeError(what + " has " + has + ": a run of " + (pool.empty() ? "no" : "one") +
                     " token repeated cannot tell heads apart; " +
                     (fromText ? "draw from a text with two different tokens or more" : "type two different tokens or more"));
  }
  return pool;
}

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
  // Optional for the vocabulary: ids need no tokenizer.
  const tokenize::TokenizerLimits limits{s.vocab, memoryBudgetBytes > 0 ? memoryBudgetBytes : defaultMemoryBudget()};
  std::shared_ptr<const tokenize::BpeTokenizer> tok;
  std::string tokError;
  if (caches.tokenizers) {
    if (auto t = caches.tokenizers->load(p.folder->dir(), limits)) tok = std::move(*t);
    else tokError = t.error().message;
  } else if (auto t = tokenize::loadTokenizer(p.folder->dir(), limits)) {
    tok = std::make_shared<const tokenize::BpeTokenizer>(std::move(*t));
  } else {
    tokError = t.error().message;
  }
  std::vector<int> avoid;
  std::optional<int> bos;
  if (tok) {
    for (const tokenize::AddedToken& a : tok->addedTokens()) avoid.push_back(a.id);
    if (const auto b = tok->bosToken(); b && *b < s.vocab) {
      bos = *b;
      avoid.push_back(*b);
    }
  }
  model::RepeatedProbe rp;
  rp.source = in.source;
  rp.seed = in.probeSeed;
  rp.bos = bos.has_value();
  std::vector<int> pool;
  if (in.source == model::ProbeSource::Vocabulary) {
    pool = model::vocabularyPool(s.vocab, avoid);
    if (pool.empty()) return makeError("the model's vocabulary has no token the probe may use (all " + std::to_string(s.vocab) + " are special)");
  } else {
    auto tp = tokenPool(in, tok.get(), s, avoid, p.textNote);
    if (!tp) return makeError(tp.error().message + (tok ? "" : " (" + tokError + ")"));
    pool = std::move(*tp);
  }
  rp.pool = static_cast<int>(pool.size());
  // BOS + p · copies tokens must fit the model's positions (GPT-2's learned table): fewer copies
  // first (at least 2), then a shorter period.
  const int room = s.maxPositions - (bos ? 1 : 0);
  rp.period = in.probePeriod;
  rp.copies = in.probeCopies;
  if (static_cast<std::int64_t>(rp.period) * rp.copies > room) {
    rp.copies = std::max(2, room / std::max(1, rp.period));
    if (static_cast<std::int64_t>(rp.period) * rp.copies > room) rp.period = std::max(1, room / 2);
    rp.copies = std::max(1, std::min(rp.copies, room / rp.period));
    rp.cut = "period " + std::to_string(in.probePeriod) + " × " + std::to_string(in.probeCopies) + " copies cut to " +
             std::to_string(rp.period) + " × " + std::to_string(rp.copies) + " to fit the model's " +
             std::to_string(s.maxPositions) + " positions" + (bos ? " with the BOS" : "");
  }
  if (bos) p.ids.push_back(*bos);
  const std::vector<int> rnd = model::repeatedRandomTokens(pool, rp.period, rp.copies, rp.seed);
  p.ids.insert(p.ids.end(), rnd.begin(), rnd.end());
  for (int id : p.ids) p.labels.push_back(tok ? tok->displayToken(id) : "#" + std::to_string(id));
  p.tokenizer = std::move(tok);
  p.repeated = rp;
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
    view->probe = probe->repeated;
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
