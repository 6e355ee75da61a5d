// The compute scheduler (see compute_scheduler.hpp).
//   trace     — a dirty config → validate → compute now or on the worker; latest request wins
//   quick     — every Quick lesson of AllLessons from the trace and its weights, whenever either
//               or its choices change (and the WithTrace quiz, taken from the trace's outcome)
//   rerun     — the Rerun lesson of the open tab (found by id), now or on lessonJob_
#include "shell/compute_scheduler.hpp"

#include <algorithm>
#include <cstring>
#include <type_traits>
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
    for (const auto& item : items) m = std::max<std::int64_t>(m, static_cast<std::int64_t>(splitWords(item).size()));
    return std::pair<std::int64_t, std::int64_t>(static_cast<std::int64_t>(items.size()), std::max<std::int64_t>(m, 1));
  };
  const auto [items, longestQ] = longest(c.text);
  e.batch = c.batch > 0 ? c.batch : std::max<std::int64_t>(items, 1);
  e.tq = c.tokens > 0 ? c.tokens : longestQ;
  e.tk = c.crossAttention ? longest(c.kvText).second : e.tq;
  return e;
}

}  // namespace

bool fitsUiThread(std::int64_t batch, std::int64_t tq, std::int64_t tk, int dModel, int heads, int dk,
                  double passes) {
  const FlopCount flops = countFlops(batch, tq, tk, dModel, heads, 0, dk);
  // ~5 ms of work at the ~100 GFLOP/s measured here leaves room for the frame itself.
  // Weight initialisation (4·d_model·h·d_k random numbers) also counts for wide models.
  const std::int64_t width = dk > 0 ? static_cast<std::int64_t>(heads) * dk : dModel;
  return flops.total() * passes < 5e8 && dModel <= 512 && width <= 512;
}

void ComputeScheduler::update(AppState& state, const ViewState& view, LessonView& lessons, const std::string& openTab,
                              bool forceSync) {
  refreshTokenChips(state.doc.chips, state.doc.config.text, state.doc.config.tokens);
  updateTrace(state, view, forceSync);
  if (state.shown.hasTrace() && state.shown.model) {
    updateQuickLessons(state, view, lessons);
    updateRerunLessons(state, lessons, openTab, forceSync);
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
  state.shown.rerunRefusal = std::move(outcome.rerunRefusal);
  state.shown.quiz = std::move(outcome.quiz);
  state.compute.lastComputeMs = outcome.milliseconds;
  state.compute.lastComputeThreads = outcome.threads;
  if (!latest) return;
  // The controls show what the files decided (the controls they fix are read-only).
  if (!state.doc.files.checkpoint.empty() || state.doc.trainedLayer) {
    const std::uint64_t budget = state.doc.config.memoryBudgetBytes;
    state.doc.config = outcome.config;
    state.doc.config.memoryBudgetBytes = budget;
    keepNamedConfig(state.doc, true);  // what the name names is what the files decided
  } else if (!state.shown.rerunRefusal.empty()) {
    // A latent layer's record: the window opened its folder without resolving a layer, so the controls take the
    // sizes, mask and positions the folder decided from here.
    const std::uint64_t budget = state.doc.config.memoryBudgetBytes;
    state.doc.config = outcome.config;
    state.doc.config.memoryBudgetBytes = budget;
    keepNamedConfig(state.doc, true);
  } else if (!state.doc.files.query.empty() || !state.doc.files.weights.empty()) {
    state.doc.config.dModel = outcome.config.dModel;
    if (!state.doc.files.weights.empty()) state.doc.config.bias = outcome.config.bias;
  }
}

void ComputeScheduler::updateTrace(AppState& state, const ViewState& view, bool forceSync) {
  keepNamedConfig(state.doc);  // a name given since the last frame: the config it names, before any edit
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
    request.source.caches = caches_;
    request.source.recordedLatentLayer = true;  // a latent layer's pass: the model forward's record (`run --dump`'s)
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
      const bool small = state.doc.trainedLayer || (state.doc.files.empty() && fitsUiThread(e.batch, e.tq, e.tk, c.dModel, c.heads, c.headDim));
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
  ShownResult& shown = state.shown;
  lessons.c.keepInRange(shown.trace, view.batch);
  const LessonInput in{shown.trace, *shown.model, lessons.c.batch};
  AllLessons::forEach([&](auto lesson) {
    using L = decltype(lesson);
    LessonSlot<L>& slot = shown.lessons.of<L>();
    const typename L::Choices& choices = lessons.c.of<L>();
    if constexpr (L::kCost == LessonCost::Quick) {
      if (slot.serial == shown.traceSerial && slot.batch == in.batch && slot.choices == choices) return;
      if (readsLayerWeights<L>() && !shown.rerunRefusal.empty()) {
        slot.outcome = {};
        slot.outcome.error = shown.rerunRefusal;
      } else {
        slot.outcome.assign(L::compute(in, choices));
      }
      slot.serial = shown.traceSerial;
      slot.batch = in.batch;
      slot.choices = choices;
    } else if constexpr (L::kCost == LessonCost::WithTrace) {
      // The compute worker made it with the trace (ComputeOutcome::quiz, the only such lesson).
      static_assert(std::is_same_v<typename L::Result, decltype(shown.quiz)>);
      if (slot.serial == shown.traceSerial) return;
      slot.outcome.value = shown.quiz;
      slot.outcome.error.clear();
      slot.serial = shown.traceSerial;
    }
  });
}

// ---------------------------------------------------------------------------------------------
// rerun lessons
// ---------------------------------------------------------------------------------------------

void ComputeScheduler::store(AppState& state, RerunOutcome& o) {
  if (o.key.serial != state.shown.traceSerial) return;  // the trace moved on meanwhile
  o.store(state.shown.lessons);
}

void ComputeScheduler::updateRerunLessons(AppState& state, const LessonView& lessons, const std::string& openTab,
                                          bool forceSync) {
  if (auto done = lessonJob_.take()) {
    if (lessonRequested_[done->lesson] == done->key) lessonRequested_[done->lesson] = {};
    store(state, *done);
  }
  // Only the lesson of the tab on screen, by its id (the tab's title only finds the panel).
  const PanelInfo* tab = findPanel(PanelArea::Main, openTab);
  if (!tab || recordedTraceBytes(state.shown.trace) > kRecomputeLimitBytes) return;  // the tab says why
  AllLessons::forEach([&](auto lesson) {
    using L = decltype(lesson);
    if constexpr (L::kCost == LessonCost::Rerun) {
      if (std::strcmp(tab->id, L::kId) == 0) rerun<L>(state, lessons.c.of<L>(), forceSync);
    }
  });
}

template <class L>
void ComputeScheduler::rerun(AppState& state, const typename L::Choices& choices, bool forceSync) {
  constexpr std::size_t i = AllLessons::indexOf<L>();
  const LessonKey key{state.shown.traceSerial, choices.variant()};
  if (state.shown.lessons.of<L>().key() == key || lessonRequested_[i] == key) return;
  // The job sees the model alone (shared), never the trace the window may replace meanwhile.
  // A recorded pass (a latent layer) has no W_q, W_k, W_v to re-run the layer with: the reason, at once.
  const std::string refusal = readsLayerWeights<L>() ? state.shown.rerunRefusal : std::string();
  auto run = [model = state.shown.model, choices, key, refusal]() {
    auto outcome = std::make_shared<LessonOutcome<typename L::Result>>();
    try {
      if (!refusal.empty()) {
        outcome->error = refusal;
      } else {
        outcome->assign(L::compute(*model, choices));
      }
    } catch (const std::bad_alloc&) {
      *outcome = {};
      outcome->error = "out of memory while computing this lesson; try fewer tokens, heads or batch items";
    } catch (const std::exception& e) {
      *outcome = {};
      outcome->error = std::string("lesson failed: ") + e.what();
    }
    return RerunOutcome{key, i, [outcome, key](LessonResults& results) {
                          LessonSlot<L>& slot = results.of<L>();
                          slot.outcome = std::move(*outcome);
                          slot.serial = key.serial;
                          slot.variant = key.variant;
                        }};
  };
  const Trace& t = state.shown.trace;
  if (forceSync || !refusal.empty() || fitsUiThread(t.batch, t.tq, t.tk, t.dModel, t.heads, t.dk, 3.0)) {
    RerunOutcome done = run();
    store(state, done);
  } else {
    lessonRequested_[i] = key;
    lessonJob_.submit(std::move(run));
    ++state.compute.lessonJobs;
  }
}

}  // namespace mhascope::app
