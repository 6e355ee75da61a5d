#include "shell/compute_worker.hpp"

#include <algorithm>
#include <exception>
#include <new>
#include <thread>
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
      status->flops.store(countFlops(q.shape[0], q.shape[1], k.shape[1], q.shape[2], model->model.options.heads,
                                     kvHeadsOf(model->model.options), headDimOf(model->model.options, q.shape[2]))
                              .total());
    }
    setPhase(ComputePhase::Forward);
    if (model) model->model.options.threads = out.threads = computeThreads();
    // A latent layer's pass is the model forward's record (the numbers run --dump writes): `model` has no W_q, W_k,
    // W_v for the engine to re-run, so no first head and no forward of it; the record replaces the buffers.
    const bool recorded = model && model->recorded;
    bool rewrite = false;  // a big trace of this shape is written over
    const std::uint64_t generation = trace.generation;
    if (recorded) {
      trace = Trace{};  // freed before the copy, not beside it
    } else if (model && traceBytes(trace) > kKeepTraceBytes) {
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
    if (model && firstHead && !rewrite && !recorded) {
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
    } else if (recorded) {
      trace = *model->recorded;  // a copy: the record is shared and read-only
      trace.generation = generation + 1;
      out.rerunRefusal = std::move(model->rerunRefusal);
    } else if (auto st = forward(shared->inputs, std::shared_ptr<const MhaWeights>(shared, &shared->weights),
                                 shared->options, trace);
               !st) {
      out.error = st.error().message;
    }
    if (model && out.error.empty()) {
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

ComputeWorker::ComputeWorker() = default;

ComputeWorker::~ComputeWorker() {
  if (latest_) latest_->superseded.store(true);
}

void ComputeWorker::setResultReady(std::function<void()> wake) {
  {
    std::lock_guard lock(mutex_);
    resultReady_ = wake;
  }
  job_.setOnResult(std::move(wake));
}

void ComputeWorker::submit(const ComputeRequest& request, std::uint64_t requestId) {
  // The job before is outdated: a model folder's forward stops at its next layer (latest wins),
  // and a queued one is replaced.
  if (latest_) latest_->superseded.store(true);
  auto status = std::make_shared<JobStatus>();
  latest_ = status;
  job_.submit([this, request, requestId, status] { return run(request, requestId, status); });
}

ComputeWorker::Result ComputeWorker::run(const ComputeRequest& request, std::uint64_t requestId,
                                         const std::shared_ptr<JobStatus>& status) {
  Result r;
  {
    std::lock_guard lock(mutex_);
    r.trace = std::move(spare_);
    spare_ = Trace{};
    running_ = status;
    startedAt_ = std::chrono::steady_clock::now();
  }
  auto showFirst = [this](std::shared_ptr<const FirstHead> first) {
    std::function<void()> wake;
    {
      std::lock_guard lock(mutex_);
      firstHead_ = std::move(first);
      wake = resultReady_;
    }
    if (wake) wake();
  };
  // computeTrace writes over the buffers when the shape is the same, else frees them first.
  r.outcome = computeTrace(request, requestId, r.trace, status.get(), showFirst);
  std::lock_guard lock(mutex_);
  running_.reset();
  if (r.outcome.ok && r.trace.tq > 0) {
    const FlopCount f = layerCounts(layerSizesOf(r.trace)).flops(r.trace.batch, r.trace.tq, r.trace.tk);
    lastFlopsPerSecond_ = f.total() / std::max(r.outcome.milliseconds * 1e-3, 1e-6);
  }
  return r;
}

std::shared_ptr<const FirstHead> ComputeWorker::takeFirstHead() {
  std::lock_guard lock(mutex_);
  return std::move(firstHead_);
}

std::optional<ComputeOutcome> ComputeWorker::take(Trace& trace) {
  std::optional<Result> r = job_.take();
  if (!r) return std::nullopt;
  if (r->outcome.ok) std::swap(trace, r->trace);  // what `trace` held becomes the next job's buffers
  Trace dying;
  {
    std::lock_guard lock(mutex_);
    dying = std::move(r->trace);
    if (traceBytes(dying) >= traceBytes(spare_)) std::swap(dying, spare_);  // the larger is kept
  }
  freeOnWorker(std::move(dying));
  return std::move(r->outcome);
}

void ComputeWorker::freeOnWorker(Trace trace) {
  if (traceBytes(trace) <= kKeepTraceBytes) return;  // small: freed here
  auto dying = std::make_shared<Trace>(std::move(trace));
  job_.post([dying]() mutable { dying.reset(); });  // unmapping gigabytes: not on the UI thread
}

void ComputeWorker::releaseLater(Trace& trace) {
  // A replaced trace is only buffers from now on: its record of the weights goes, which may share
  // (and so keep alive) the replaced model with its inputs (T = 4096: 24 MiB of them).
  trace.weights.reset();
  if (traceBytes(trace) <= kKeepTraceBytes) return;
  Trace dying;
  std::optional<std::chrono::steady_clock::time_point> kept;
  {
    std::lock_guard lock(mutex_);
    if (!job_.running() && !job_.resultWaiting() && traceBytes(spare_) <= kKeepTraceBytes) {
      // Kept as the next job's buffers for a while (see kSpareKeepSeconds); what spare_ held
      // (small) is dropped.
      dying = std::move(spare_);
      spare_ = std::move(trace);
      spareSince_ = std::chrono::steady_clock::now();
      kept = spareSince_;
    } else {
      dying = std::move(trace);
    }
    trace = Trace{};
  }
  freeOnWorker(std::move(dying));
  if (kept) {
    // Freed when no job came for kSpareKeepSeconds (a job meanwhile took it, or a newer one is kept).
    const auto at = *kept + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                std::chrono::duration<double>(kSpareKeepSeconds));
    job_.post([this, since = *kept] {
      Trace old;
      {
        std::lock_guard lock(mutex_);
        if (spareSince_ != since || traceBytes(spare_) <= kKeepTraceBytes) return;
        old = std::move(spare_);
        spare_ = Trace{};
      }
    }, at);
  }
}

bool ComputeWorker::busy() const {
  return job_.busy();
}

ComputeProgress ComputeWorker::progress() const {
  std::lock_guard lock(mutex_);
  ComputeProgress p;
  if (!running_) return p;
  p.phase = static_cast<ComputePhase>(running_->phase.load());
  p.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - startedAt_).count();
  p.layersDone = running_->layersDone.load();
  p.layers = running_->layers.load();
  if (lastFlopsPerSecond_ > 0) p.expectedSeconds = running_->flops.load() / lastFlopsPerSecond_;
  return p;
}

}  // namespace mhascope::app
