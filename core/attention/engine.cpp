// The forward pass of multi-head attention, written in the order of the lesson:
// project → split heads → scores → scale → mask → softmax → weighted sum → merge heads →
// output projection. Every stage is written into the Trace as it is computed.
//
// [SECTION] one function per equation
// [SECTION] forward
// Validation, memory/FLOP estimates, weight initialisation and the non-finite scan are in
// engine_checks.cpp; the GEMM itself in gemm.cpp.
#include "attention/engine.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <new>

#include <sys/mman.h>

#include "attention/gemm.hpp"

namespace mhascope {

// ---------------------------------------------------------------------------------------------
// [SECTION] one function per equation
// ---------------------------------------------------------------------------------------------
namespace {

// data = n zeros. Buffers of 8 MiB and more ask the kernel for 2 MiB pages (madvise) before their
// first touch: 512 times fewer page faults, which cost microseconds each on virtual machines (a
// fresh trace at T = 2048, d_model 512, h 8 took 150 000 of them, a second of system time).
void allocateZeroed(std::vector<float>& data, std::size_t n) {
  constexpr std::size_t kHuge = std::size_t{2} << 20;
  if (n * sizeof(float) < 4 * kHuge) {
    data.assign(n, 0.0f);
    return;
  }
  std::vector<float>().swap(data);  // give the old buffer back first: never two big ones at once
  data.reserve(n);                  // allocated, not yet touched
  const auto begin = reinterpret_cast<std::uintptr_t>(data.data());
  const std::uintptr_t first = (begin + kHuge - 1) & ~(kHuge - 1);
  const std::uintptr_t last = (begin + n * sizeof(float)) & ~(kHuge - 1);
  if (last > first) madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);  // a hint; may be refused
  data.resize(n);  // zeros, faulted in 2 MiB at a time where the kernel agreed
}

// Tensor::reshape, with a new buffer from allocateZeroed.
void shapeStage(Tensor& t, Shape shape, std::vector<std::string> axes) {
  const auto n = static_cast<std::size_t>(Tensor::numelOf(shape));
  if (t.data.size() != n) allocateZeroed(t.data, n);
  t.reshape(std::move(shape), std::move(axes));
}


// Q = X W + b for the rows [r0, r0 + n) of the B*T rows: one GEMM per block of rows (see forward
// for why the blocks have a fixed size).
void project(const float* x /*(B*T, d_model)*/, const RowMatrix& weight /*(d_model, d_model)*/,
             const RowVector& bias /*(1, d_model)*/, float* out /*(B*T, d_model)*/, std::int64_t d, std::int64_t r0,
             std::int64_t n) {
  sgemm(false, false, n, d, d, x + r0 * d, d, weight.data(), d, 0.0f, out + r0 * d, d);
  MatrixMap(out + r0 * d, n, d).rowwise() += bias;
}

// (B, T, d_model) → view (B, T, h, d_k) → transpose (B, h, T, d_k): head i's columns are the
// block h*d_k .. (h+1)*d_k of every token's row. Numbers are only regrouped, never changed.
void splitHeads(const Tensor& proj /*(B, T, d_model)*/, int heads, Tensor& out /*(B, h, T, d_k)*/) {
  const auto B = proj.dim(0), T = proj.dim(1), d = proj.dim(2), dk = d / heads;
  for (std::int64_t b = 0; b < B; ++b) {
    ConstMatrixMap x(proj.ptr() + b * T * d, T, d);
    for (int h = 0; h < heads; ++h) {
      MatrixMap(out.ptr() + (b * heads + h) * T * dk, T, dk) = x.middleCols(h * dk, dk);
    }
  }
}

// S_i = Q_i K_i^T for one (b, i): a (T_q, T_k) table of dot products.
void attentionScores(ConstMatrixMap qh /*(T_q, d_k)*/, ConstMatrixMap kh /*(T_k, d_k)*/,
                     MatrixMap scores /*(T_q, T_k)*/) {
  sgemm(false, true, qh.rows(), kh.rows(), qh.cols(), qh.data(), qh.cols(), kh.data(), kh.cols(), 0.0f,
        scores.data(), scores.cols());
}

// One row: S' = S * factor, factor = 1/sqrt(d_k) by default.
void scaleRow(const float* s, float factor, float* out, std::int64_t n) {
  Eigen::Map<Eigen::ArrayXf>(out, n) = Eigen::Map<const Eigen::ArrayXf>(s, n) * factor;
}

// The row functions below use Eigen's SIMD packets directly so that each does its work in one
// pass over the row (mask + max, exp + sum): at T = 1024 these passes were a sixth of the time.
namespace simd = Eigen::internal;
using Packet = simd::packet_traits<float>::type;
constexpr std::int64_t kLanes = static_cast<std::int64_t>(sizeof(Packet) / sizeof(float));

// One row: blocked keys get -inf, so that softmax gives them exactly zero weight. A large negative
// number instead of -inf would turn a fully blocked row into a uniform 1/T_k row. Returns the
// row maximum, which the softmax needs next.
float maskRow(const float* s, const std::uint8_t* blocked /*(T_k) or null*/, float* out, std::int64_t n) {
  const float ninf = -std::numeric_limits<float>::infinity();
  float m = ninf;
  if (blocked) {
    for (std::int64_t k = 0; k < n; ++k) {
      out[k] = blocked[k] ? ninf : s[k];
      m = std::max(m, out[k]);
    }
    return m;
  }
  std::int64_t k = 0;
  Packet vmax = simd::pset1<Packet>(ninf);
  for (; k + kLanes <= n; k += kLanes) {
    const Packet v = simd::ploadu<Packet>(s + k);
    simd::pstoreu(out + k, v);
    vmax = simd::pmax(vmax, v);
  }
  m = simd::predux_max(vmax);
  for (; k < n; ++k) {
    out[k] = s[k];
    m = std::max(m, s[k]);
  }
  return m;
}

// One row: A = softmax(S''). The row max m is subtracted only for numerical stability (exp of a
// logit above ~88 overflows float); it cancels in the division. Returns false for a fully
// masked row (every key blocked), which gets weights 0 instead of the NaN that 0/0 would give.
bool softmaxRow(const float* s, float m, const std::uint8_t* blocked, bool allBlocked, float* out, std::int64_t n) {
  Eigen::Map<Eigen::ArrayXf> w(out, n);
  if (allBlocked) {
    w.setZero();
    return false;
  }
  if (m == -std::numeric_limits<float>::infinity()) {
    // Every visible score overflowed to -inf (huge inputs): there is no honest weight, and a row
    // of zeros would pass for a masked row. NaN, like PyTorch, and reported by nonFiniteStages.
    w.setConstant(std::numeric_limits<float>::quiet_NaN());
    return true;
  }
  std::int64_t k = 0;
  const Packet vm = simd::pset1<Packet>(m);
  Packet acc = simd::pset1<Packet>(0.0f);
  for (; k + kLanes <= n; k += kLanes) {
    const Packet e = simd::pexp(simd::psub(simd::ploadu<Packet>(s + k), vm));
    simd::pstoreu(out + k, e);
    acc = simd::padd(acc, e);
  }
  float sum = simd::predux(acc);
  for (; k < n; ++k) {
    out[k] = std::exp(s[k] - m);
    sum += out[k];
  }
  if (blocked) {
    for (k = 0; k < n; ++k) {
      if (blocked[k]) {
        sum -= out[k];
        out[k] = 0.0f;  // exactly 0, whatever the vectorised exp returns for -inf
      }
    }
  }
  w *= 1.0f / sum;
  return true;
}

// (B, h, T_q, d_k) → transpose (B, T_q, h, d_k) → reshape (B, T_q, d_model): heads side by side.
void mergeHeads(const Tensor& headOut /*(B, h, T_q, d_k)*/, Tensor& concat /*(B, T_q, d_model)*/) {
  const auto B = headOut.dim(0), h = headOut.dim(1), T = headOut.dim(2), dk = headOut.dim(3);
  for (std::int64_t b = 0; b < B; ++b) {
    MatrixMap c(concat.ptr() + b * T * h * dk, T, h * dk);
    for (std::int64_t i = 0; i < h; ++i) {
      c.middleCols(i * dk, dk) = ConstMatrixMap(headOut.ptr() + (b * h + i) * T * dk, T, dk);
    }
  }
}

void copyInput(const Tensor& src, Tensor& dst, const char* kvAxis) {
  shapeStage(dst, src.shape, {"B", kvAxis, "d_model"});
  std::copy(src.data.begin(), src.data.end(), dst.data.begin());
}

// Threads worth starting: none below ~4 MFLOP (a thread start costs about what that does).
int threadsFor(int wanted, double flops) {
  if (wanted <= 1 || flops < 4e6) return 1;
  return std::min(wanted, 64);
}

// The projections X W + b of `jobs`, in blocks of kRowBlock rows shared out among the threads.
// The block size is fixed, never derived from the thread count: a GEMM's rounding may depend on
// its sizes, and the threaded forward must give the same bits as the one-thread forward.
struct ProjectJob {
  const Tensor* x;
  const RowMatrix* weight;
  const RowVector* bias;
  Tensor* out;
};
void projectAll(std::initializer_list<ProjectJob> jobs, int threads) {
  constexpr std::int64_t kRowBlock = 256;
  std::vector<std::pair<const ProjectJob*, std::int64_t>> blocks;  // (job, first row)
  for (const ProjectJob& j : jobs) {
    const std::int64_t rows = j.x->dim(0) * j.x->dim(1);
    for (std::int64_t r0 = 0; r0 < rows; r0 += kRowBlock) blocks.emplace_back(&j, r0);
  }
  parallelFor(threads, static_cast<std::int64_t>(blocks.size()), [&](std::int64_t i) {
    const ProjectJob& j = *blocks[static_cast<std::size_t>(i)].first;
    const std::int64_t r0 = blocks[static_cast<std::size_t>(i)].second, rows = j.x->dim(0) * j.x->dim(1);
    project(j.x->ptr(), *j.weight, *j.bias, j.out->ptr(), j.x->dim(2), r0, std::min(kRowBlock, rows - r0));
  });
}

// Scores, scale, mask, softmax and A V of one (batch item, head) pair bh = b*h + head, in blocks of
// query rows: each block (kQueryBlock x T_k) is still in cache for its next step. The arithmetic
// is exactly that of whole-matrix products; only the order of work differs. Without full
// recording the scores go straight into the weights' buffer (each step in place) and A V straight
// into concat's columns: the same operations on the same numbers, three tables fewer to write.
void attendOneHead(Trace& t, const AttentionOptions& opt, const std::vector<std::uint8_t>& rowAny, float factor,
                   std::int64_t bh) {
  const std::int64_t Tq = t.tensor(StageId::Weights).dim(2), Tk = t.tensor(StageId::Weights).dim(3);
  const std::int64_t dk = t.tensor(StageId::QHeads).dim(3), h = t.tensor(StageId::QHeads).dim(1);
  const std::int64_t b = bh / h, d = h * dk;
  const int head = static_cast<int>(bh % h);
  const bool all = opt.recordEveryStage;
  ConstMatrixMap qh(t.tensor(StageId::QHeads).ptr() + bh * Tq * dk, Tq, dk);
  ConstMatrixMap kh(t.tensor(StageId::KHeads).ptr() + bh * Tk * dk, Tk, dk);
  ConstMatrixMap vh(t.tensor(StageId::VHeads).ptr() + bh * Tk * dk, Tk, dk);
  float* weights = t.tensor(StageId::Weights).ptr() + bh * Tq * Tk;
  float* scores = all ? t.tensor(StageId::Scores).ptr() + bh * Tq * Tk : weights;
  float* scaled = all ? t.tensor(StageId::ScaledScores).ptr() + bh * Tq * Tk : weights;
  float* masked = all ? t.tensor(StageId::MaskedScores).ptr() + bh * Tq * Tk : weights;
  // A V: head_outputs (T_q, d_k) rows, or head `head`'s columns of concat (row stride d_model).
  float* headOut = all ? t.tensor(StageId::HeadOutputs).ptr() + bh * Tq * dk
                       : t.tensor(StageId::Concat).ptr() + b * Tq * d + head * dk;
  const std::int64_t outStride = all ? dk : d;
  constexpr std::int64_t kQueryBlock = 128;
  for (std::int64_t q0 = 0; q0 < Tq; q0 += kQueryBlock) {
    const std::int64_t nq = std::min(kQueryBlock, Tq - q0);
    attentionScores(ConstMatrixMap(qh.data() + q0 * dk, nq, dk), kh, MatrixMap(scores + q0 * Tk, nq, Tk));
    if (opt.scoresOverride) overrideScores(*opt.scoresOverride, b, head, scores, Tq, Tk, q0, nq);
    for (std::int64_t q = q0; q < q0 + nq; ++q) {
      const std::size_t row = static_cast<std::size_t>(b * Tq + q);
      const std::uint8_t* blk = rowAny[row] ? t.blocked.data() + row * static_cast<std::size_t>(Tk) : nullptr;
      scaleRow(scores + q * Tk, factor, scaled + q * Tk, Tk);
      const float rowMax = maskRow(scaled + q * Tk, blk, masked + q * Tk, Tk);
      softmaxRow(masked + q * Tk, rowMax, blk, rowAny[row] == 2, weights + q * Tk, Tk);
    }
    sgemm(false, false, nq, dk, Tk, weights + q0 * Tk, Tk, vh.data(), dk, 0.0f, headOut + q0 * outStride, outStride);
  }
}

// The shapes of the per-head stages and the concat (Output is shaped after the heads). Without
// full recording the tables nobody reads stay empty, so nothing can read a stale one.
void shapeHeadStages(Trace& t, std::int64_t B, std::int64_t Tq, std::int64_t Tk, std::int64_t d, int h, bool all) {
  const std::int64_t dk = d / h;
  auto T = [&t](StageId id) -> Tensor& { return t.tensor(id); };
  // Split d_model into h heads of d_k.
  shapeStage(T(StageId::QHeads), {B, h, Tq, dk}, {"B", "h", "T_q", "d_k"});
  shapeStage(T(StageId::KHeads), {B, h, Tk, dk}, {"B", "h", "T_k", "d_k"});
  shapeStage(T(StageId::VHeads), {B, h, Tk, dk}, {"B", "h", "T_k", "d_k"});

  for (StageId id : {StageId::Scores, StageId::ScaledScores, StageId::MaskedScores, StageId::Weights}) {
    if (all || id == StageId::Weights) shapeStage(T(id), {B, h, Tq, Tk}, {"B", "h", "T_q", "T_k"});
  }
  if (all) shapeStage(T(StageId::HeadOutputs), {B, h, Tq, dk}, {"B", "h", "T_q", "d_k"});
  shapeStage(T(StageId::Concat), {B, Tq, d}, {"B", "T_q", "d_model"});
  if (!all) {  // not recorded: empty, so nothing can read a stale table as this forward's
    for (StageId id : {StageId::Key, StageId::Value, StageId::Scores, StageId::ScaledScores, StageId::MaskedScores,
                       StageId::HeadOutputs}) {
      shapeStage(T(id), {0}, {});
    }
  }
}

// Everything a trace says besides its tables: sizes, mask kinds, scale, token labels and the
// learned parameters as used (the window and `export` draw these very numbers).
void recordDescription(Trace& t, const AttentionInputs& in, const MhaWeights& w, const AttentionOptions& opt,
                       float factor) {
  const std::int64_t B = in.query.dim(0), Tq = in.query.dim(1), Tk = in.key.dim(1), d = in.query.dim(2);
  t.batch = static_cast<int>(B);
  t.tq = static_cast<int>(Tq);
  t.tk = static_cast<int>(Tk);
  t.dModel = static_cast<int>(d);
  t.heads = opt.heads;
  t.dk = static_cast<int>(d / opt.heads);
  t.selfAttention = in.selfAttention;
  t.causal = opt.causal;
  t.keyPadding = opt.keyPaddingMask.has_value();
  t.attnMask = opt.attnMask.has_value();
  t.scale = opt.scale;
  t.scaleFactor = factor;
  auto labelsOr = [](const std::vector<std::vector<std::string>>& given, std::int64_t nb, std::int64_t nt) {
    if (!given.empty()) return given;
    std::vector<std::vector<std::string>> out(static_cast<std::size_t>(nb));
    for (auto& row : out) {
      for (std::int64_t i = 0; i < nt; ++i) row.push_back(std::string("t").append(std::to_string(i)));
    }
    return out;
  };
  t.weights.resize(kWeightCount);
  auto keep = [&t](WeightId id, const float* data, std::int64_t rows, std::int64_t cols, bool matrix) {
    Tensor& dst = t.weights[static_cast<std::size_t>(id)];
    dst.reshape({rows, cols}, matrix ? std::vector<std::string>{"d_model_in", "d_model_out"}
                                     : std::vector<std::string>{"1", "d_model_out"});
    std::copy(data, data + rows * cols, dst.ptr());
  };
  keep(WeightId::Wq, w.wq.data(), d, d, true);
  keep(WeightId::Wk, w.wk.data(), d, d, true);
  keep(WeightId::Wv, w.wv.data(), d, d, true);
  keep(WeightId::Wo, w.wo.data(), d, d, true);
  keep(WeightId::Bq, w.bq.data(), 1, d, false);
  keep(WeightId::Bk, w.bk.data(), 1, d, false);
  keep(WeightId::Bv, w.bv.data(), 1, d, false);
  keep(WeightId::Bo, w.bo.data(), 1, d, false);
  t.hasBias = w.hasBias;
  t.queryTokens = labelsOr(in.queryTokens, B, Tq);
  t.keyTokens = labelsOr(in.keyTokens, B, Tk);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// [SECTION] forward
// ---------------------------------------------------------------------------------------------

Status forward(const AttentionInputs& in, const MhaWeights& w, const AttentionOptions& opt, Trace& trace) {
  if (auto s = validate(in, w, opt); !s) return s;
  const auto B = in.query.dim(0), Tq = in.query.dim(1), Tk = in.key.dim(1), d = in.query.dim(2);
  const int h = opt.heads;
  const std::uint64_t generation = trace.generation;
  try {
    Trace t = std::move(trace);  // reuse the old buffers: no reallocation when shapes are unchanged
    t.stages.resize(kStageCount);
    for (int i = 0; i < kStageCount; ++i) t.stages[static_cast<std::size_t>(i)].id = static_cast<StageId>(i);
    auto T = [&t](StageId id) -> Tensor& { return t.tensor(id); };

    copyInput(in.query, T(StageId::Query), "T_q");
    const bool all = opt.recordEveryStage;
    if (all) {
      copyInput(in.key, T(StageId::Key), "T_k");
      copyInput(in.value, T(StageId::Value), "T_k");
    }
    const int threads = threadsFor(opt.threads, countFlops(B, Tq, Tk, d, h).total());

    // Q, K, V projections: every output feature mixes all d_model input features.
    shapeStage(T(StageId::QProj), {B, Tq, d}, {"B", "T_q", "d_model"});
    shapeStage(T(StageId::KProj), {B, Tk, d}, {"B", "T_k", "d_model"});
    shapeStage(T(StageId::VProj), {B, Tk, d}, {"B", "T_k", "d_model"});
    projectAll({{&in.query, &w.wq, &w.bq, &T(StageId::QProj)},
                {&in.key, &w.wk, &w.bk, &T(StageId::KProj)},
                {&in.value, &w.wv, &w.bv, &T(StageId::VProj)}},
               threads);

    shapeHeadStages(t, B, Tq, Tk, d, h, all);
    splitHeads(T(StageId::QProj), h, T(StageId::QHeads));
    splitHeads(T(StageId::KProj), h, T(StageId::KHeads));
    splitHeads(T(StageId::VProj), h, T(StageId::VHeads));

    std::vector<std::uint8_t> rowAny;
    buildBlocked(opt, B, Tq, Tk, t.blocked, rowAny);
    t.fullyMasked.assign(static_cast<std::size_t>(B * Tq), 0);
    for (std::size_t row = 0; row < rowAny.size(); ++row) t.fullyMasked[row] = rowAny[row] == 2;
    const float factor = scaleFactorFor(opt.scale, d, h);

    // Attention per (batch item, head); the pairs are shared out among the threads, each pair's
    // work is the same whichever thread does it, so the numbers do not depend on the thread count.
    parallelFor(threads, B * h, [&](std::int64_t bh) { attendOneHead(t, opt, rowAny, factor, bh); });

    if (all) mergeHeads(T(StageId::HeadOutputs), T(StageId::Concat));
    shapeStage(T(StageId::Output), {B, Tq, d}, {"B", "T_q", "d_model"});
    projectAll({{&T(StageId::Concat), &w.wo, &w.bo, &T(StageId::Output)}}, threads);

    recordDescription(t, in, w, opt, factor);
    t.generation += 1;
    trace = std::move(t);
  } catch (const std::bad_alloc&) {
    trace = Trace{};  // half-overwritten buffers are not a trace: leave an empty one
    trace.generation = generation + 1;
    return makeError("out of memory while computing attention (needs about " +
                     formatBytes(estimateMemory(B, Tq, Tk, d, h).total()) + "); lower --memory-budget or the sizes");
  }
  return Ok{};
}

}  // namespace mhascope
