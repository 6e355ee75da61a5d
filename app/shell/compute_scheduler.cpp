// The compute scheduler (see compute_scheduler.hpp).
//   trace     — a dirty config → validate → compute now or on the worker; latest request wins
//   quick     — lessons 2, 3, 4, 7, 9 from the trace and its weights, whenever either changes
//   recompute — lessons 1, 5, 6 (split, masks, pitfalls) for the open tab, now or on lessonJob_
#include "shell/compute_scheduler.hpp"

#include <algorithm>
#include <exception>
#include <memory>
#include <new>
#include <utility>

#include "attention/tokenizer.hpp"
#include "panels/panel.hpp"

namespace mhascope::app {
namespace {

// Sizes from the text alone (no allocation), to decide where to compute.
struct SizeEstimate {
  std::int64_t batch = 1, tq = 1, tk = 1;
};

SizeEstimate estimateSizes(const ModelConfig& c) {
  SizeEstimate e;
  auto longest = [&](const std::string& text) {
    std::int64_t m = 0;
    const auto items = splitBatch(text);
    for (const auto& item : items) m = std::max<std::int64_t>(m, static_cast<std::int64_t>(tokenize(item).size()));
    return std::pair<std::int64_t, std::int64_t>(static_cast<std::int64_t>(items.size()), std::max<std::int64_t>(m, 1));
  };
  const auto [items, longestQ] = longest(c.text);
  e.batch = c.batch > 0 ? c.batch : std::max<std::int64_t>(items, 1);
  e.tq = c.tokens > 0 ? c.tokens : longestQ;
  e.tk = c.crossAttention ? longest(c.kvText).second : e.tq;
  return e;
}

// The recomputing lesson whose tab is `title`, if any.
std::optional<RecomputingLesson> recomputingLessonOfTab(const std::string& title) {
  if (title == "Split") return RecomputingLesson::Split;
  if (title == "Masks") return RecomputingLesson::Masks;
  if (title == "Pitfalls") return RecomputingLesson::Pitfall;
  return std::nullopt;
}

}  // namespace

bool fitsUiThread(std::int64_t batch, std::int64_t tq, std::int64_t tk, int dModel, int heads, double passes) {
  const FlopCount flops = countFlops(batch, tq, tk, dModel, heads);
  // ~5 ms of work at the ~100 GFLOP/s measured here leaves room for the frame itself.
  // Weight initialisation (4·d_model² random numbers) also counts for wide models.
  return flops.total() * passes < 5e8 && dModel <= 512;
}

void ComputeScheduler::update(AppState& state, const ViewState& view, LessonView& lessons, const std::string& openTab,
                              bool forceSync) {
  updateTrace(state, view, forceSync);
  if (state.shown.hasTrace() && state.shown.model) {
    updateQuickLessons(state, view, lessons);
    updateRecomputedLessons(state, lessons, openTab, forceSync);
  }
  state.compute.lessonComputing = lessonJob_.busy();
}

// ---------------------------------------------------------------------------------------------
// trace
// ---------------------------------------------------------------------------------------------

void ComputeScheduler::applyOutcome(AppState& state, ComputeOutcome& outcome, Trace& computed) {
  if (outcome.requestId <= shownRequest_) return;  // an older request finished late
  shownRequest_ = outcome.requestId;
  const bool latest = outcome.requestId == requestCounter_;
  if (!outcome.ok) {
    if (latest && state.doc.beforeOpen) {  // the opened files cannot be used: back to what was in use
      Document::BeforeOpen& b = *state.doc.beforeOpen;
      state.doc.config = std::move(b.config);
      state.doc.files = std::move(b.files);
      state.doc.trainedLayer = std::move(b.trainedLayer);
      state.doc.presetName = std::move(b.presetName);
      state.actionError = b.what + ": " + outcome.error;
      state.doc.configError.clear();
      state.doc.beforeOpen.reset();
    } else if (latest) {
      state.doc.configError = outcome.error;
    }
    return;
  }
  if (latest) state.doc.beforeOpen.reset();
  std::swap(state.shown.trace, computed);
  state.shown.traceReplaced();
  state.shown.traceConfig = outcome.config;
  state.shown.traceSeedUsed = outcome.seedUsed;
  state.shown.traceNote = outcome.describeNote;
  state.shown.model = std::move(outcome.model);
  state.shown.quiz = std::move(outcome.quiz);
  state.compute.lastComputeMs = outcome.milliseconds;
  state.compute.lastComputeThreads = outcome.threads;
  if (!latest) return;
  // The controls show what the files decided (the controls they fix are read-only).
  if (!state.doc.files.checkpoint.empty() || state.doc.trainedLayer) {
    const std::uint64_t budget = state.doc.config.memoryBudgetBytes;
    state.doc.config = outcome.config;
    state.doc.config.memoryBudgetBytes = budget;
  } else if (!state.doc.files.query.empty() || !state.doc.files.weights.empty()) {
    state.doc.config.dModel = outcome.config.dModel;
    if (!state.doc.files.weights.empty()) state.doc.config.bias = outcome.config.bias;
  }
}

void ComputeScheduler::updateTrace(AppState& state, const ViewState& view, bool forceSync) {
  if (auto outcome = worker_.take(spare_)) {
    // take() swapped the worker's trace into spare_; move it on into the state.
    const bool ok = outcome->ok;
    applyOutcome(state, *outcome, spare_);
    if (ok) state.compute.lastComputeOnWorker = true;
  }
  // A first picture of the latest request, until that request's trace (or error) comes.
  if (auto first = worker_.takeFirstHead(); first && first->requestId == requestCounter_ && first->requestId > shownRequest_) {
    state.compute.firstHead = std::move(first);
  }
  if (state.compute.firstHead && state.compute.firstHead->requestId <= shownRequest_) state.compute.firstHead.reset();
  if (state.doc.configDirty) {
    state.doc.configDirty = false;
    state.doc.suggestedHeads.clear();
    state.compute.firstHead.reset();  // of an older request
    ModelConfig c = state.doc.config;
    // The window's budget (the control under Sizes; the machine's or --memory-budget at start), never a preset's.
    if (state.doc.memoryBudgetBytes > 0) c.memoryBudgetBytes = state.doc.memoryBudgetBytes;
    ComputeRequest request;
    request.source.config = c;
    request.source.files = state.doc.files;
    request.source.use = MemoryUse::app();
    request.source.use.weightsFile = !state.doc.files.weights.empty();
    request.source.weightsDecideDModel = true;
    request.trainedLayer = state.doc.trainedLayer;
    // Files are checked while they are read (modelFromSource); a text model before it is built.
    Status valid = Ok{};
    if (!state.doc.fromFiles()) {
      try {
        valid = validateConfig(c, MemoryUse::app());
      } catch (const std::exception& e) {
        valid = makeError(std::string("cannot check this configuration: ") + e.what());
      }
    }
    if (!valid) {
      state.doc.configError = valid.error().message;
      if (c.dModel > 0 && c.heads > 0 && c.dModel % c.heads != 0) state.doc.suggestedHeads = nearestValidHeads(c.dModel, c.heads, 2);
      ++requestCounter_;  // whatever is still running is now outdated
    } else {
      state.doc.configError.clear();
      const std::uint64_t id = ++requestCounter_;
      const SizeEstimate e = estimateSizes(c);
      // Files may be big: they are read on the worker, so the window never waits for a disk.
      const bool small = state.doc.trainedLayer || (state.doc.files.empty() && fitsUiThread(e.batch, e.tq, e.tk, c.dModel, c.heads));
      if (forceSync || small) {
        ComputeOutcome outcome = computeTrace(request, id, spare_);
        applyOutcome(state, outcome, spare_);
        state.compute.lastComputeOnWorker = false;
      } else {
        request.firstHead = ViewedHead{view.stage, view.batch, view.head};  // used when the tables are big
        worker_.submit(request, id);
      }
    }
  }
  worker_.releaseLater(spare_);  // the replaced trace: a large one is freed off the UI thread
  state.compute.computing = worker_.busy() && shownRequest_ < requestCounter_;
  state.compute.progress = worker_.progress();
}

// ---------------------------------------------------------------------------------------------
// quick lessons
// ---------------------------------------------------------------------------------------------

void ComputeScheduler::updateQuickLessons(AppState& state, const ViewState& view, LessonView& lessons) {
  keepLessonChoicesInRange(lessons, state.shown.trace, view.batch);
  LessonResults& r = state.shown.lessons;
  if (r.quickSerial == state.shown.traceSerial && r.quickChoices == lessons.c) return;
  r.quick = computeQuickLessons(state.shown.trace, state.shown.model->weights, lessons.c);
  r.quickSerial = state.shown.traceSerial;
  r.quickChoices = lessons.c;
}

// ---------------------------------------------------------------------------------------------
// recomputing lessons
// ---------------------------------------------------------------------------------------------

void ComputeScheduler::store(AppState& state, RecomputeOutcome& o) {
  if (o.serial != state.shown.traceSerial) return;  // the trace moved on meanwhile
  const int i = static_cast<int>(o.lesson);
  state.shown.lessons.recomputedKey[i] = o.key;
  switch (o.lesson) {
    case RecomputingLesson::Split: state.shown.lessons.recomputed.split = std::move(o.result.split); break;
    case RecomputingLesson::Masks: state.shown.lessons.recomputed.masks = std::move(o.result.masks); break;
    case RecomputingLesson::Pitfall: state.shown.lessons.recomputed.pitfall = std::move(o.result.pitfall); break;
  }
}

void ComputeScheduler::updateRecomputedLessons(AppState& state, const LessonView& lessons, const std::string& openTab,
                                               bool forceSync) {
  if (auto done = lessonJob_.take()) {
    if (lessonRequested_[static_cast<int>(done->lesson)] == done->key) lessonRequested_[static_cast<int>(done->lesson)] = {};
    store(state, *done);
  }
  const auto lesson = recomputingLessonOfTab(openTab);
  const Trace& t = state.shown.trace;
  if (!lesson || recordedTraceBytes(t) > kRecomputeLimitBytes) return;  // the tab says why
  const int i = static_cast<int>(*lesson);
  const LessonResults::Key key{state.shown.traceSerial, recomputingVariant(*lesson, lessons.c)};
  if (state.shown.lessons.recomputedKey[i] == key || lessonRequested_[i] == key) return;
  RecomputeOutcome job{state.shown.traceSerial, *lesson, key, {}};
  auto run = [model = state.shown.model, choices = lessons.c, job]() mutable {
    try {
      computeRecomputingLesson(*model, job.lesson, choices, job.result);
    } catch (const std::bad_alloc&) {
      job.result = {};
      const std::string msg = "out of memory while computing this lesson; try fewer tokens, heads or batch items";
      job.result.split.error = job.result.masks.error = job.result.pitfall.error = msg;
    } catch (const std::exception& e) {
      job.result = {};
      job.result.split.error = job.result.masks.error = job.result.pitfall.error = std::string("lesson failed: ") + e.what();
    }
    return job;
  };
  if (forceSync || fitsUiThread(t.batch, t.tq, t.tk, t.dModel, t.heads, 3.0)) {
    RecomputeOutcome done = run();
    store(state, done);
  } else {
    lessonRequested_[i] = key;
    lessonJob_.submit(std::move(run));
  }
}

}  // namespace mhascope::app
