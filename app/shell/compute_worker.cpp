#include "shell/compute_worker.hpp"

#include <algorithm>
#include <exception>
#include <new>
#include <utility>

#include "attention/engine.hpp"

namespace mhascope::app {

int computeThreads() {
  return std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1, 64);  // 0: unknown
}

namespace {

// The viewed head alone, when the job's tables are big enough for the wait to show (see
// kFirstHeadTableBytes); null when not wanted, not needed or not possible (the forward then
// says why, if anything is wrong).
std::shared_ptr<FirstHead> firstHeadOf(const ComputeRequest& request, const Model& m, std::uint64_t requestId) {
  if (!request.firstHead || !isAttentionTable(request.firstHead->stage)) return nullptr;
  const Tensor& q = m.inputs.query;
  const Tensor& k = m.inputs.key;
  const int batches = static_cast<int>(q.shape[0]), heads = m.options.heads;
  const double tableBytes = static_cast<double>(q.shape[0]) * heads * static_cast<double>(q.shape[1]) *
                            static_cast<double>(k.shape[1]) * sizeof(float);
  if (tableBytes <= static_cast<double>(kFirstHeadTableBytes) || heads < 1 || batches < 1) return nullptr;
  // One head of fewer than four is most of the work: no sooner than the whole. Of four or more it
  // holds at most a quarter of one table, within the two tables the memory estimate counts for
  // the lazy stages (engine.hpp estimateMemory).
  if (batches * heads < 4) return nullptr;
  auto out = std::make_shared<FirstHead>();
  out->requestId = requestId;
  out->stage = request.firstHead->stage;
  out->batch = std::clamp(request.firstHead->batch, 0, batches - 1);
  out->head = std::clamp(request.firstHead->head, 0, heads - 1);
  out->batches = batches;
  out->heads = heads;
  auto one = attentionHead(m.inputs, m.weights, m.options, out->stage, out->batch, out->head);
  if (!one) return nullptr;
  out->trace = std::move(*one);
  auto slice = sliceStage(out->trace, out->stage, 0, 0);
  if (!slice) return nullptr;
  out->slice = std::move(*slice);
  return out;
}

}  // namespace

ComputeOutcome computeTrace(const ComputeRequest& request, std::uint64_t requestId, Trace& trace,
                            JobStatus* status, const std::function<void(std::shared_ptr<const FirstHead>)>& firstHead) {
  ComputeOutcome out;
  out.requestId = requestId;
  out.config = request.source.config;
  auto setPhase = [status](ComputePhase p) {
    if (status) status->phase.store(static_cast<int>(p));
  };
  const auto t0 = std::chrono::steady_clock::now();
  try {
    setPhase(ComputePhase::Preparing);
    ModelRequest source = request.source;
    if (status && !request.trainedLayer) {
      // A model folder's layers before the one shown are the long part: the progress line counts
      // them, and a newer request stops them (the caller's own callback, if any, still hears each).
      source.modelProgress = [status, own = request.source.modelProgress](int done, int layers) {
        status->layersDone.store(done);
        status->layers.store(layers);
        if (status->superseded.load()) return false;
        return own ? own(done, layers) : true;
      };
    }
    Result<SourcedModel> model = request.trainedLayer ? Result<SourcedModel>(*request.trainedLayer)
                                                      : modelFromSource(source);
    if (model && status) {
      const Tensor& q = model->model.inputs.query;
      const Tensor& k = model->model.inputs.key;
      status->flops.store(countFlops(q.shape[0], q.shape[1], k.shape[1], q.shape[2], model->model.options.heads).total());
    }
    setPhase(ComputePhase::Forward);
    if (model) model->model.options.threads = out.threads = computeThreads();
    bool rewrite = false;  // a big trace of this shape is written over
    if (model && traceBytes(trace) > kKeepTraceBytes) {
      // Big buffers of the same shape are written over (no fresh pages for the kernel to clear);
      // of another shape they would only be replaced: freed before allocating anew.
      const Tensor& q = model->model.inputs.query;
      const Tensor& k = model->model.inputs.key;
      if (trace.batch != q.shape[0] || trace.tq != q.shape[1] || trace.tk != k.shape[1] ||
          trace.dModel != q.shape[2] || trace.heads != model->model.options.heads) {
        trace = Trace{};
      } else {
        rewrite = true;
      }
    }
    // Not when a big trace of this shape is written over: its memory is already backed, the whole
    // trace comes about as soon (T = 4096 here: 0.4 s), and a first head would only delay it.
    if (model && firstHead && !rewrite) {
      setPhase(ComputePhase::FirstHead);
      if (auto first = firstHeadOf(request, model->model, requestId)) {
        firstHead(std::move(first));
      }
      setPhase(ComputePhase::Forward);
    }
    // The trace shares the model's weights (no copy): the model is read-only from here on.
    std::shared_ptr<const Model> shared;
    if (model) shared = std::make_shared<const Model>(std::move(model->model));
    if (!model) {
      out.error = model.error().message;
    } else if (auto st = forward(shared->inputs, std::shared_ptr<const MhaWeights>(shared, &shared->weights),
                                 shared->options, trace);
               !st) {
      out.error = st.error().message;
    } else {
      // "last compute" is the job so far (the first head, when one was made, and the forward);
      // the quiz comes after the clock stops.
      out.milliseconds = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      out.config = std::move(model->config);
      out.seedUsed = model->seedUsed;
      out.describeNote = std::move(model->describeNote);
      out.model = std::move(shared);
      out.quiz = makeQuiz(trace, out.model->weights);
      out.ok = true;
    }
  } catch (const std::bad_alloc&) {
    out.error = "out of memory while computing this configuration; try fewer tokens, heads or batch items";
  } catch (const std::exception& e) {
    out.error = std::string("compute failed: ") + e.what();
  }
  setPhase(ComputePhase::Idle);
  if (!out.ok) out.milliseconds = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

std::uint64_t traceBytes(const Trace& trace) {
  return trace.residentBytes();
}

ComputeWorker::ComputeWorker() : thread_([this] { run(); }) {}

ComputeWorker::~ComputeWorker() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void ComputeWorker::setResultReady(std::function<void()> wake) {
  std::lock_guard lock(mutex_);
  resultReady_ = std::move(wake);
}

void ComputeWorker::submit(const ComputeRequest& request, std::uint64_t requestId) {
  {
    std::lock_guard lock(mutex_);
    pending_ = std::make_pair(request, requestId);  // replaces any older queued request
    if (running_) status_.superseded.store(true);    // the running job is outdated: it may stop early
  }
  wake_.notify_one();
}

std::shared_ptr<const FirstHead> ComputeWorker::takeFirstHead() {
  std::lock_guard lock(mutex_);
  return std::move(firstHead_);
}

std::optional<ComputeOutcome> ComputeWorker::take(Trace& trace) {
  std::optional<ComputeOutcome> out;
  {
    std::lock_guard lock(mutex_);
    if (!outcome_) return std::nullopt;
    out = std::move(outcome_);
    outcome_.reset();
    if (out->ok) std::swap(trace, working_);  // what `trace` held becomes the next job's buffers
  }
  wake_.notify_one();  // a queued request may start now
  return out;
}

void ComputeWorker::releaseLater(Trace& trace) {
  // A replaced trace is only buffers from now on: its record of the weights goes, which may share
  // (and so keep alive) the replaced model with its inputs (T = 4096: 24 MiB of them).
  trace.weights.reset();
  if (traceBytes(trace) <= kKeepTraceBytes) return;
  {
    std::lock_guard lock(mutex_);
    if (!running_ && !outcome_ && traceBytes(working_) <= kKeepTraceBytes) {
      // Kept as the next job's buffers for a while (see kSpareKeepSeconds); what working_ held
      // (small) is dropped here.
      toFree_.push_back(std::move(working_));
      working_ = std::move(trace);
      spareSince_ = std::chrono::steady_clock::now();
    } else {
      toFree_.push_back(std::move(trace));
    }
    trace = Trace{};
  }
  wake_.notify_one();
}

bool ComputeWorker::busy() const {
  std::lock_guard lock(mutex_);
  return running_ || pending_.has_value();
}

ComputeProgress ComputeWorker::progress() const {
  std::lock_guard lock(mutex_);
  ComputeProgress p;
  if (!running_) return p;
  p.phase = static_cast<ComputePhase>(status_.phase.load());
  p.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - startedAt_).count();
  p.layersDone = status_.layersDone.load();
  p.layers = status_.layers.load();
  if (lastFlopsPerSecond_ > 0) p.expectedSeconds = status_.flops.load() / lastFlopsPerSecond_;
  return p;
}

void ComputeWorker::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    // A result not yet taken holds working_: the next job waits for it (one frame).
    auto ready = [this] { return stop_ || (pending_.has_value() && !outcome_) || !toFree_.empty(); };
    if (!outcome_ && traceBytes(working_) > kKeepTraceBytes) {
      // A big spare trace: freed when no job came for kSpareKeepSeconds.
      const auto deadline = spareSince_ + std::chrono::duration<double>(kSpareKeepSeconds);
      if (!wake_.wait_until(lock, deadline, ready)) {
        if (std::chrono::steady_clock::now() >= spareSince_ + std::chrono::duration<double>(kSpareKeepSeconds)) {
          toFree_.push_back(std::move(working_));
          working_ = Trace{};
        }
        continue;
      }
    } else {
      wake_.wait(lock, ready);
    }
    if (stop_) return;
    if (!toFree_.empty()) {
      std::vector<Trace> dying = std::move(toFree_);
      toFree_.clear();
      lock.unlock();
      dying.clear();  // unmapping gigabytes happens here, not on the UI thread
      lock.lock();
      continue;
    }
    auto [request, id] = std::move(*pending_);
    pending_.reset();
    running_ = true;
    startedAt_ = std::chrono::steady_clock::now();
    status_.flops.store(0.0);
    status_.layersDone.store(0);
    status_.layers.store(0);
    status_.superseded.store(false);
    lock.unlock();
    // computeTrace writes over working_'s buffers when the shape is the same, else frees them first.
    auto showFirst = [this](std::shared_ptr<const FirstHead> first) {
      std::lock_guard firstLock(mutex_);
      firstHead_ = std::move(first);
      if (resultReady_) resultReady_();
    };
    ComputeOutcome out = computeTrace(request, id, working_, &status_, showFirst);  // the long part, unlocked
    lock.lock();
    running_ = false;
    if (out.ok && working_.tq > 0) {
      const FlopCount f = countFlops(working_.batch, working_.tq, working_.tk, working_.dModel, working_.heads);
      lastFlopsPerSecond_ = f.total() / std::max(out.milliseconds * 1e-3, 1e-6);
    }
    outcome_ = std::move(out);
    if (resultReady_) resultReady_();
  }
}

}  // namespace mhascope::app
