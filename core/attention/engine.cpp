// The forward pass of multi-head attention, written in the order of the lesson:
// project → split heads → scores → scale → mask → softmax → weighted sum → merge heads →
// output projection. Every stage is written into the Trace as it is computed.
//
// [SECTION] one function per equation
// [SECTION] forward
// Validation, memory/FLOP estimates, weight initialisation and the non-finite scan are in
// engine_checks.cpp; the GEMM itself in gemm.cpp; the kernels in head_kernels.cpp and
// row_kernels.cpp; the query block rows in block_rows.cpp.
// Over 500 lines, kept in one file on purpose: the forward and the one-head forward share the
// block helpers of the anonymous namespace (projectAll, scoresAndWeights, attendBlock, the
// packed weights), which a split would have to publish in a header for this one caller.
#include "attention/engine.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <new>

#include <sys/mman.h>

#include "attention/block_rows.hpp"
#include "attention/gemm.hpp"
#include "attention/head_kernels.hpp"
#include "attention/row_kernels.hpp"

namespace mhascope {

// ---------------------------------------------------------------------------------------------
// [SECTION] one function per equation
// ---------------------------------------------------------------------------------------------
namespace {

// data = n zeros. Buffers of 8 MiB and more ask the kernel for 2 MiB pages (madvise) before their
// first touch: 512 times fewer page faults, which cost microseconds each on virtual machines (a
// fresh trace at T = 2048, d_model 512, h 8 took 150 000 of them, a second of system time). The
// first touch is shared out among `threads` threads: the kernel clears a fresh page on the CPU
// that faults on it, and clearing is most of a new big trace's time (T = 4096: 1 GiB of tables).
void allocateZeroed(FloatBuffer& data, std::size_t n, int threads) {
  constexpr std::size_t kHuge = std::size_t{2} << 20;
  if (n * sizeof(float) < 4 * kHuge) {
    data.assign(n, 0.0f);
    return;
  }
  FloatBuffer().swap(data);  // give the old buffer back first: never two big ones at once
  data.reserve(n);           // allocated, not yet touched
  const auto begin = reinterpret_cast<std::uintptr_t>(data.data());
  const std::uintptr_t first = (begin + kHuge - 1) & ~(kHuge - 1);
  const std::uintptr_t last = (begin + n * sizeof(float)) & ~(kHuge - 1);
  if (last > first) madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);  // a hint; may be refused
  if (threads > 1) {  // fault the pages in, 2 MiB a task; resize below then writes warm memory
    auto* bytes = reinterpret_cast<unsigned char*>(data.data());
    const std::size_t size = n * sizeof(float);
    parallelFor(threads, static_cast<std::int64_t>((size + kHuge - 1) / kHuge), [&](std::int64_t c) {
      const std::size_t at = static_cast<std::size_t>(c) * kHuge;
      std::memset(bytes + at, 0, std::min(kHuge, size - at));
    });
  }
  data.resize(n);  // zeros, faulted in 2 MiB at a time where the kernel agreed
}

// Tensor::reshape, with a new buffer from allocateZeroed.
void shapeStage(Tensor& t, Shape shape, std::vector<std::string> axes, int threads = 1) {
  const auto n = static_cast<std::size_t>(Tensor::numelOf(shape));
  if (t.data.size() != n) allocateZeroed(t.data, n, threads);
  t.reshape(std::move(shape), std::move(axes));
}

// Q = X W + b for the rows [r0, r0 + n) of the B*T rows, one block of rows at a time (see forward):
// on productBlock, the A V kernel, with the head kernels (README, **Projections on the head kernel**).
void project(const float* x /*(B*T, d_model)*/, const RowMatrix& weight /*(d_model, d_model)*/,
             const RowVector& bias /*(1, d_model)*/, float* out /*(B*T, d_model)*/, std::int64_t d, std::int64_t r0,
             std::int64_t n, const float* packed /*weight as packStrips made it, or null*/) {
  // Each sum starts from the bias: the kernel loads it into its registers; for sgemm the bias rows
  // are written first and the product added (beta = 1), one pass fewer than adding it afterwards
  // (with beta = 0 OpenBLAS clears the rows itself first). The same sums in the same order.
  if (headKernelsEnabled()) {
    return productBlock(x + r0 * d, d, weight.data(), d, n, d, d, out + r0 * d, d, bias.data(), packed);
  }
  for (std::int64_t r = r0; r < r0 + n; ++r) std::copy_n(bias.data(), d, out + r * d);
  sgemm(false, false, n, d, d, x + r0 * d, d, weight.data(), d, 1.0f, out + r0 * d, d);
}

// (B, T, d_model) → view (B, T, h, d_k) → transpose (B, h, T, d_k): head i's columns are the
// block i*d_k .. (i+1)*d_k of every token's row. Numbers are only regrouped, never changed. Done
// for the rows [r0, r0 + n) of the B*T rows, right after their projection (still in cache).
void splitHeads(const Tensor& proj /*(B, T, d_model)*/, int heads, std::int64_t r0, std::int64_t n,
                Tensor& out /*(B, h, T, d_k)*/) {
  const auto T = proj.dim(1), d = proj.dim(2), dk = d / heads;
  for (std::int64_t r = r0; r < r0 + n; ++r) {
    const std::int64_t b = r / T, tok = r % T;
    for (std::int64_t i = 0; i < heads; ++i) {
      std::copy_n(proj.ptr() + r * d + i * dk, dk, out.ptr() + ((b * heads + i) * T + tok) * dk);
    }
  }
}

// (B, h, T_q, d_k) → transpose (B, T_q, h, d_k) → reshape (B, T_q, d_model): heads side by side,
// for the rows [r0, r0 + n) of the B*T_q rows, right before their output projection.
void mergeHeads(const Tensor& headOut /*(B, h, T_q, d_k)*/, std::int64_t r0, std::int64_t n,
                Tensor& concat /*(B, T_q, d_model)*/) {
  const auto h = headOut.dim(1), T = headOut.dim(2), dk = headOut.dim(3);
  for (std::int64_t r = r0; r < r0 + n; ++r) {
    const std::int64_t b = r / T, tok = r % T;
    for (std::int64_t i = 0; i < h; ++i) {
      std::copy_n(headOut.ptr() + ((b * h + i) * T + tok) * dk, dk, concat.ptr() + (r * h + i) * dk);
    }
  }
}

// dst[0, n) = src[0, n), skipping the write when dst already holds these exact bits (a recompute
// with unchanged inputs: reading both is cheaper than writing one).
void copyUnlessSame(const float* src, std::size_t n, float* dst) {
  if (std::memcmp(src, dst, n * sizeof(float)) != 0) std::copy(src, src + n, dst);
}

// The rows [r0, r0 + n) of an input into its recorded stage (shaped beforehand).
void copyInputRows(const Tensor& src /*(B, T, d_model)*/, std::int64_t r0, std::int64_t n, Tensor& dst) {
  const std::int64_t d = src.dim(2);
  copyUnlessSame(src.ptr() + r0 * d, static_cast<std::size_t>(n * d), dst.ptr() + r0 * d);
}

// Threads worth starting: none below ~4 MFLOP (a thread start costs about what that does).
int threadsFor(int wanted, double flops) {
  if (wanted <= 1 || flops < 4e6) return 1;
  return std::min(wanted, 64);
}

// The projections X W + b of `jobs`, in blocks of rows shared out among the threads: 256 rows,
// 512 from 1024 rows on (a GEMM of 512 rows ran ~4 % faster here, and 1024 rows still give two
// blocks per projection for two threads), 1024 from 2048 rows on (the whole forward ~4 % faster
// at T = 2048, d_model 1024: OpenBLAS packs the d_model x d_model matrix once per block). The
// block size depends on the row count only, never on the thread count: a GEMM's rounding may
// depend on its sizes, and the threaded forward must give the same bits as the one-thread
// forward. The regrouping on either side of a projection (recording the input, splitting into
// heads, merging the heads) goes with its block: no serial pass, no extra section, rows read
// while in cache.
using RowRange = std::function<void(std::int64_t r0, std::int64_t n)>;
struct ProjectJob {
  const Tensor* x;
  const RowMatrix* weight;
  const RowVector* bias;
  Tensor* out;
  RowRange before;  // on the block's rows before their GEMM (may be empty)
  RowRange after;   // and after it
  const float* packed = nullptr;  // the weight packed for the head kernels (packedWeightsFor), or null
};
void projectAll(std::initializer_list<ProjectJob> jobs, int threads) {
  std::vector<std::pair<const ProjectJob*, std::int64_t>> blocks;  // (job, first row)
  auto rowBlock = [](std::int64_t rows) -> std::int64_t { return rows >= 2048 ? 1024 : rows >= 1024 ? 512 : 256; };
  for (const ProjectJob& j : jobs) {
    const std::int64_t rows = j.x->dim(0) * j.x->dim(1);
    for (std::int64_t r0 = 0; r0 < rows; r0 += rowBlock(rows)) blocks.emplace_back(&j, r0);
  }
  parallelFor(threads, static_cast<std::int64_t>(blocks.size()), [&](std::int64_t i) {
    const ProjectJob& j = *blocks[static_cast<std::size_t>(i)].first;
    const std::int64_t r0 = blocks[static_cast<std::size_t>(i)].second, rows = j.x->dim(0) * j.x->dim(1);
    const std::int64_t n = std::min(rowBlock(rows), rows - r0);
    if (j.before) j.before(r0, n);
    project(j.x->ptr(), *j.weight, *j.bias, j.out->ptr(), j.x->dim(2), r0, n, j.packed);
    if (j.after) j.after(r0, n);
  });
}

// Scores, scale, mask, softmax and A V of one block of query rows [q0, q0 + nq) of one (batch item,
// head) pair bh = b*h + head (128 or 64 rows: block_rows.hpp): the block is still in cache for its next step,
// and the scores, scaled and masked into the weights' row with each row's maximum (scoresBlock in
// one pass with the head kernels; else sgemm, then scaleMaskRow per row), then the softmax in
// place and A V (weightedSumBlock, else sgemm). The arithmetic is exactly that of whole-matrix products; only the order of work
// differs. The scaled and masked scores are not stored: the trace derives them from the scores
// with the same two operations when read (trace.cpp), so they are the numbers this pass used.
// Without full recording the scores go straight into the weights' buffer too and A V straight
// into concat's columns: the same operations on the same numbers, two tables fewer to write.
// The recorded scores are written by the kernel with streaming stores (storeRecord in
// head_kernels.cpp): nothing in this pass reads them again. (A scratch block for the scores and
// the weights, copied out to both tables with streaming stores, was 3-7 % slower at T = 512 and
// 1024: the weights are read again by the softmax and A V, and the copy is a pass of its own.)

// The part of attendBlock before A V, for the rows [q0, q0 + nq) of head `head` of batch item b:
// the scores (into `scores` when recorded; kernels off, they go there first whatever), scaled and
// masked into `weights` with each row's maximum, then each row's softmax in place. `weights` null:
// the scores alone. qh, kh: the head's (T, d_k) rows; scores and weights: its (T_q, T_k) tables.
// Shared with attentionHead (one head alone), so that head has the very bits of the forward.
void scoresAndWeights(const AttentionOptions& opt, const std::vector<std::uint8_t>& blocked,
                      const std::vector<std::uint8_t>& rowAny, const std::vector<std::int64_t>& runFrom, float factor,
                      std::int64_t b, int head, std::int64_t Tq, std::int64_t Tk, std::int64_t dk, const float* qh,
                      const float* kh, const float* khPacked, std::int64_t q0, std::int64_t nq, float* scores,
                      float* weights) {
  const std::uint8_t* blk[kMaxQueryBlock];  // each row's blocked keys as bytes, or null: none
  BlockedKeys keys[kMaxQueryBlock];         // the same for the kernels: a run to the row's end where they are one
  for (std::int64_t q = q0; q < q0 + nq; ++q) {
    const std::size_t row = static_cast<std::size_t>(b * Tq + q);
    blk[q - q0] = rowAny[row] ? blocked.data() + row * static_cast<std::size_t>(Tk) : nullptr;
    if (rowAny[row]) keys[q - q0] = runFrom[row] >= 0 ? BlockedKeys{nullptr, runFrom[row]} : BlockedKeys{blk[q - q0]};
  }
  float rowMax[kMaxQueryBlock];
  const bool fused = headKernelsEnabled() && dk <= kScoresBlockMaxDk;
  if (!weights) {  // the scores only, as the branch below computes them
    if (fused) {
      scoresBlock(qh + q0 * dk, kh, nq, Tk, dk, factor, keys, scores + q0 * Tk, nullptr, Tk, rowMax, khPacked);
    } else {
      sgemm(false, true, nq, Tk, dk, qh + q0 * dk, dk, kh, dk, 0.0f, scores + q0 * Tk, Tk);
    }
    if (opt.scoresOverride) overrideScores(*opt.scoresOverride, b, head, scores, Tq, Tk, q0, nq);
    return;
  }
  if (fused && !opt.scoresOverride) {  // scores, scale, mask, max in one pass
    scoresBlock(qh + q0 * dk, kh, nq, Tk, dk, factor, keys, scores ? scores + q0 * Tk : nullptr, weights + q0 * Tk, Tk,
                rowMax, khPacked);
  } else {
    // The same products as without hand-set scores (the kernel's when it runs), so the scores a
    // hand-set table leaves alone keep their exact bits.
    if (!scores) scores = weights;  // not recorded: computed in the weights' rows, then scaled in place
    if (fused) {
      scoresBlock(qh + q0 * dk, kh, nq, Tk, dk, factor, keys, scores + q0 * Tk, nullptr, Tk, rowMax, khPacked);
    } else {
      sgemm(false, true, nq, Tk, dk, qh + q0 * dk, dk, kh, dk, 0.0f, scores + q0 * Tk, Tk);
    }
    if (opt.scoresOverride) overrideScores(*opt.scoresOverride, b, head, scores, Tq, Tk, q0, nq);
    for (std::int64_t q = q0; q < q0 + nq; ++q) {  // the scaled, then masked row into the weights' row
      rowMax[q - q0] = scaleMaskRow(scores + q * Tk, factor, blk[q - q0], weights + q * Tk, weights + q * Tk, Tk);
    }
  }
  for (std::int64_t q = q0; q < q0 + nq; ++q) {  // each row's softmax in place
    softmaxRow(weights + q * Tk, rowMax[q - q0], keys[q - q0], rowAny[static_cast<std::size_t>(b * Tq + q)] == 2,
               weights + q * Tk, Tk);
  }
}

void attendBlock(Trace& t, const AttentionOptions& opt, const std::vector<std::uint8_t>& rowAny,
                 const std::vector<std::int64_t>& runFrom, float factor,
                 std::int64_t bh, std::int64_t q0, std::int64_t nq) {
  const std::int64_t Tq = t.tensor(StageId::Weights).dim(2), Tk = t.tensor(StageId::Weights).dim(3);
  const std::int64_t dk = t.tensor(StageId::QHeads).dim(3), h = t.tensor(StageId::QHeads).dim(1);
  const std::int64_t b = bh / h, d = h * dk;
  const int head = static_cast<int>(bh % h);
  const bool all = opt.recordEveryStage;
  const float* vh = t.tensor(StageId::VHeads).ptr() + bh * Tk * dk;
  const std::int64_t head0 = bh * Tq * Tk;
  float* weights = t.tensor(StageId::Weights).ptr() + head0;
  scoresAndWeights(opt, t.blocked, rowAny, runFrom, factor, b, head, Tq, Tk, dk, t.tensor(StageId::QHeads).ptr() + bh * Tq * dk,
                   t.tensor(StageId::KHeads).ptr() + bh * Tk * dk,
                   t.packedKeys.empty() ? nullptr : t.packedKeys.data() + bh * packedKeysFloats(Tk, dk), q0, nq,
                   all ? t.tensor(StageId::Scores).ptr() + head0 : nullptr, weights);
  // A V: head_outputs (T_q, d_k) rows, or head `head`'s columns of concat (row stride d_model).
  float* headOut = all ? t.tensor(StageId::HeadOutputs).ptr() + bh * Tq * dk
                       : t.tensor(StageId::Concat).ptr() + b * Tq * d + head * dk;
  const std::int64_t outStride = all ? dk : d;
  if (headKernelsEnabled()) {
    weightedSumBlock(weights + q0 * Tk, Tk, vh, nq, Tk, dk, headOut + q0 * outStride, outStride);
  } else {
    sgemm(false, false, nq, dk, Tk, weights + q0 * Tk, Tk, vh, dk, 0.0f, headOut + q0 * outStride, outStride);
  }
}

// The shapes of the per-head stages and the concat (Output is shaped after the heads). Without
// full recording the tables nobody reads stay empty, so nothing can read a stale one. The lazy
// stages (scaled, masked) get their shape and axes only, and lose any whole table made from the
// previous scores (Trace::tensor), so they always read as this pass's.
void shapeHeadStages(Trace& t, std::int64_t B, std::int64_t Tq, std::int64_t Tk, std::int64_t d, int h, bool all,
                     int threads) {
  const std::int64_t dk = d / h;
  auto T = [&t](StageId id) -> Tensor& { return t.stages[static_cast<std::size_t>(id)].tensor; };
  // Split d_model into h heads of d_k.
  shapeStage(T(StageId::QHeads), {B, h, Tq, dk}, {"B", "h", "T_q", "d_k"});
  shapeStage(T(StageId::KHeads), {B, h, Tk, dk}, {"B", "h", "T_k", "d_k"});
  shapeStage(T(StageId::VHeads), {B, h, Tk, dk}, {"B", "h", "T_k", "d_k"});

  t.lazyTables.reset();
  for (StageId id : {StageId::ScaledScores, StageId::MaskedScores}) {
    FloatBuffer().swap(T(id).data);  // derived from the scores when read: no table of its own
    T(id).shape = all ? Shape{B, h, Tq, Tk} : Shape{0};
    T(id).axes = all ? std::vector<std::string>{"B", "h", "T_q", "T_k"} : std::vector<std::string>{};
  }
  if (all) shapeStage(T(StageId::Scores), {B, h, Tq, Tk}, {"B", "h", "T_q", "T_k"}, threads);
  shapeStage(T(StageId::Weights), {B, h, Tq, Tk}, {"B", "h", "T_q", "T_k"}, threads);
  if (all) shapeStage(T(StageId::HeadOutputs), {B, h, Tq, dk}, {"B", "h", "T_q", "d_k"});
  shapeStage(T(StageId::Concat), {B, Tq, d}, {"B", "T_q", "d_model"});
  if (!all) {  // not recorded: empty, so nothing can read a stale table as this forward's
    for (StageId id : {StageId::Key, StageId::Value, StageId::Scores, StageId::HeadOutputs}) shapeStage(T(id), {0}, {});
  }
}

// Everything else a trace says besides its tables: sizes, mask kinds, scale, token labels.
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
  t.hasBias = w.hasBias;
  t.queryTokens = labelsOr(in.queryTokens, B, Tq);
  t.keyTokens = labelsOr(in.keyTokens, B, Tk);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// [SECTION] forward
// ---------------------------------------------------------------------------------------------

namespace {

// W_q, W_k, W_v, W_o packed for the head kernels (Trace::packedWeights), or null: made when the
// forward shares the caller's weights (`shared`), kept while the trace holds that same object (a
// recompute with the same model packs nothing; at T = 128 the packing was ~6 % of the forward).
const float* packedWeightsFor(Trace& t, const MhaWeights& w, const MhaWeights* shared, std::int64_t d, int threads) {
  Trace::PackedWeights& p = t.packedWeights;
  const std::int64_t each = packedStripsFloats(d, d), strips = (d + 63) / 64;
  if (!shared || !headKernelsEnabled()) {
    p = {};
    return nullptr;
  }
  const bool sized = static_cast<std::int64_t>(p.data.size()) == 4 * each;
  if (p.of != shared || t.weights.get() != shared || !sized) {
    p.of = nullptr;  // until packed: a failure midway leaves no half-packed copy that claims to be one
    if (!sized) FloatBuffer(static_cast<std::size_t>(4 * each)).swap(p.data);
    const RowMatrix* mats[4] = {&w.wq, &w.wk, &w.wv, &w.wo};
    parallelFor(threads, 4 * strips, [&](std::int64_t i) {
      packStrips(mats[i / strips]->data(), d, d, d, i % strips, i % strips + 1, p.data.data() + (i / strips) * each);
    });
    p.of = shared;
  }
  return p.data.data();
}

// The keys of `heads` heads (k: heads x T_k x d_k, as k_heads holds them) transposed in chunks of
// 64 into `out` as the scores kernel reads them (packKeyChunks; head i at i * packedKeysFloats),
// once per forward (Trace::packedKeys) or per one-head forward: without, each block of query rows
// transposed them again (at T = 4096 with 64-row blocks, 64 times per head: ~6 % of the forward in
// perf). Empty without the kernels (or d_k too wide for them): the kernel then packs per block.
void packKeysFor(const float* k, std::int64_t heads, std::int64_t Tk, std::int64_t dk, int threads, FloatBuffer& out) {
  if (!headKernelsEnabled() || dk > kScoresBlockMaxDk) {
    FloatBuffer().swap(out);
    return;
  }
  const std::int64_t each = packedKeysFloats(Tk, dk), chunks = (Tk + 63) / 64;
  if (static_cast<std::int64_t>(out.size()) != heads * each) FloatBuffer(static_cast<std::size_t>(heads * each)).swap(out);
  // In pieces of up to 16 chunks, so that one head alone still gives two threads work.
  const std::int64_t per = std::min<std::int64_t>(16, chunks), pieces = (chunks + per - 1) / per;
  parallelFor(threads, heads * pieces, [&](std::int64_t i) {
    const std::int64_t head = i / pieces, c0 = (i % pieces) * per;
    packKeyChunks(k + head * Tk * dk, Tk, dk, c0, std::min(chunks, c0 + per), out.data() + head * each);
  });
}

// The forward with `w`'s numbers; the trace keeps `keep` as its record of them (w itself, shared,
// or a copy made here when null).
Status forwardInto(const AttentionInputs& in, const MhaWeights& w, std::shared_ptr<const MhaWeights> keep,
                   const AttentionOptions& opt, Trace& trace) {
  if (auto s = validate(in, w, opt); !s) return s;
  const auto B = in.query.dim(0), Tq = in.query.dim(1), Tk = in.key.dim(1), d = in.query.dim(2);
  const int h = opt.heads;
  const std::uint64_t generation = trace.generation;
  try {
    Trace t = std::move(trace);  // reuse the old buffers: no reallocation when shapes are unchanged
    t.stages.resize(kStageCount);
    for (int i = 0; i < kStageCount; ++i) t.stages[static_cast<std::size_t>(i)].id = static_cast<StageId>(i);
    auto T = [&t](StageId id) -> Tensor& { return t.tensor(id); };

    const bool all = opt.recordEveryStage;
    shapeStage(T(StageId::Query), in.query.shape, {"B", "T_q", "d_model"});
    if (all) {
      shapeStage(T(StageId::Key), in.key.shape, {"B", "T_k", "d_model"});
      shapeStage(T(StageId::Value), in.value.shape, {"B", "T_k", "d_model"});
    }
    const int threads = threadsFor(opt.threads, countFlops(B, Tq, Tk, d, h).total());

    // Q, K, V projections: every output feature mixes all d_model input features. Each block of
    // rows also records its input rows and splits its projected rows into the heads.
    shapeStage(T(StageId::QProj), {B, Tq, d}, {"B", "T_q", "d_model"});
    shapeStage(T(StageId::KProj), {B, Tk, d}, {"B", "T_k", "d_model"});
    shapeStage(T(StageId::VProj), {B, Tk, d}, {"B", "T_k", "d_model"});
    shapeHeadStages(t, B, Tq, Tk, d, h, all, threads);
    auto recordInput = [&](const Tensor& x, StageId id, bool recorded) -> RowRange {
      if (!recorded) return {};
      return [&x, &dst = T(id)](std::int64_t r0, std::int64_t n) { copyInputRows(x, r0, n, dst); };
    };
    auto split = [&](StageId proj, StageId heads) -> RowRange {
      return [&p = T(proj), &o = T(heads), h](std::int64_t r0, std::int64_t n) { splitHeads(p, h, r0, n, o); };
    };
    const float* packed = packedWeightsFor(t, w, keep.get(), d, threads);
    const auto packedAt = [&](int i) { return packed ? packed + i * packedStripsFloats(d, d) : nullptr; };
    projectAll({{&in.query, &w.wq, &w.bq, &T(StageId::QProj), recordInput(in.query, StageId::Query, true),
                 split(StageId::QProj, StageId::QHeads), packedAt(0)},
                {&in.key, &w.wk, &w.bk, &T(StageId::KProj), recordInput(in.key, StageId::Key, all),
                 split(StageId::KProj, StageId::KHeads), packedAt(1)},
                {&in.value, &w.wv, &w.bv, &T(StageId::VProj), recordInput(in.value, StageId::Value, all),
                 split(StageId::VProj, StageId::VHeads), packedAt(2)}},
               threads);

    packKeysFor(T(StageId::KHeads).ptr(), B * h, Tk, d / h, threads, t.packedKeys);

    std::vector<std::uint8_t> rowAny;
    std::vector<std::int64_t> runFrom;
    buildBlocked(opt, B, Tq, Tk, t.blocked, rowAny, &runFrom);
    t.fullyMasked.assign(static_cast<std::size_t>(B * Tq), 0);
    for (std::size_t row = 0; row < rowAny.size(); ++row) t.fullyMasked[row] = rowAny[row] == 2;
    const float factor = scaleFactorFor(opt.scale, d, h);

    // Attention per (batch item, head, block of query rows); the blocks are shared out among the
    // threads, each block's work is the same whichever thread does it and whatever its rows, so the
    // numbers depend on neither. The tables are the measurement's scratch: written over below.
    Tensor &wt = T(StageId::Weights), &st = T(StageId::Scores);
    const std::int64_t rows = queryBlockRows({{wt.ptr(), wt.numel()}, {st.ptr(), all ? st.numel() : 0}});
    const std::int64_t blocks = (Tq + rows - 1) / rows;
    parallelFor(threads, B * h * blocks, [&](std::int64_t i) {
      const std::int64_t q0 = (i % blocks) * rows;
      attendBlock(t, opt, rowAny, runFrom, factor, i / blocks, q0, std::min(rows, Tq - q0));
    });

    // Merge the heads (each block of rows before its output projection; without full recording
    // A V wrote straight into concat).
    shapeStage(T(StageId::Output), {B, Tq, d}, {"B", "T_q", "d_model"});
    RowRange merge;
    if (all) {
      merge = [&ho = T(StageId::HeadOutputs), &c = T(StageId::Concat)](std::int64_t r0, std::int64_t n) {
        mergeHeads(ho, r0, n, c);
      };
    }
    projectAll({{&T(StageId::Concat), &w.wo, &w.bo, &T(StageId::Output), merge, {}, packedAt(3)}}, threads);

    recordDescription(t, in, w, opt, factor);
    // The learned parameters as used (the window and `export` draw these very numbers). A copy
    // of d_model 512's was 4 MiB to compare or write on every recompute.
    t.weights = keep ? std::move(keep) : std::make_shared<const MhaWeights>(w);
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

}  // namespace

Status forward(const AttentionInputs& in, const MhaWeights& w, const AttentionOptions& opt, Trace& trace) {
  return forwardInto(in, w, nullptr, opt, trace);
}

Status forward(const AttentionInputs& in, std::shared_ptr<const MhaWeights> w, const AttentionOptions& opt,
               Trace& trace) {
  if (!w) return makeError("no weights were given");
  const MhaWeights& numbers = *w;
  return forwardInto(in, numbers, std::move(w), opt, trace);
}

// ---------------------------------------------------------------------------------------------
// [SECTION] one head alone
// ---------------------------------------------------------------------------------------------

bool isAttentionTable(StageId id) {
  return id == StageId::Scores || id == StageId::ScaledScores || id == StageId::MaskedScores || id == StageId::Weights;
}

Result<Trace> attentionHead(const AttentionInputs& in, const MhaWeights& w, const AttentionOptions& opt, StageId stage,
                            int batch, int head) {
  if (auto s = validate(in, w, opt); !s) return s.error();
  if (!isAttentionTable(stage)) {
    return makeError(std::string("one head alone is computed for the (T_q, T_k) stages only (scores, scaled_scores, "
                                 "masked_scores, weights), not ") + stageInfo(stage).name);
  }
  const auto B = in.query.dim(0), Tq = in.query.dim(1), Tk = in.key.dim(1), d = in.query.dim(2);
  const int h = opt.heads;
  if (batch < 0 || batch >= B) {
    return makeError("batch index " + std::to_string(batch) + " is out of range (valid 0.." + std::to_string(B - 1) + ")");
  }
  if (head < 0 || head >= h) {
    return makeError("head " + std::to_string(head) + " is out of range (valid 0.." + std::to_string(h - 1) + ")");
  }
  const std::int64_t dk = d / h;
  try {
    const FlopCount flops = countFlops(B, Tq, Tk, d, h);
    const int threads = threadsFor(opt.threads, flops.projections / 2 + flops.attention / (2.0 * h * static_cast<double>(B)));
    // Q and K of every head, as forward() projects and splits them (the same row blocks).
    Tensor qProj, kProj, qHeads, kHeads;
    shapeStage(qProj, {B, Tq, d}, {"B", "T_q", "d_model"});
    shapeStage(kProj, {B, Tk, d}, {"B", "T_k", "d_model"});
    shapeStage(qHeads, {B, h, Tq, dk}, {"B", "h", "T_q", "d_k"});
    shapeStage(kHeads, {B, h, Tk, dk}, {"B", "h", "T_k", "d_k"});
    auto split = [h](const Tensor& p, Tensor& o) -> RowRange {
      return [&p, &o, h](std::int64_t r0, std::int64_t n) { splitHeads(p, h, r0, n, o); };
    };
    projectAll({{&in.query, &w.wq, &w.bq, &qProj, {}, split(qProj, qHeads)},
                {&in.key, &w.wk, &w.bk, &kProj, {}, split(kProj, kHeads)}},
               threads);
    std::vector<std::uint8_t> blocked, rowAny;
    std::vector<std::int64_t> runFrom;
    buildBlocked(opt, B, Tq, Tk, blocked, rowAny, &runFrom);
    const float factor = scaleFactorFor(opt.scale, d, h);

    // A trace of this one head: every stage empty but the table `stage` reads.
    Trace t;
    t.stages.resize(kStageCount);
    for (int i = 0; i < kStageCount; ++i) {
      t.stages[static_cast<std::size_t>(i)].id = static_cast<StageId>(i);
      t.stages[static_cast<std::size_t>(i)].tensor.shape = {0};
    }
    auto T = [&t](StageId id) -> Tensor& { return t.stages[static_cast<std::size_t>(id)].tensor; };
    const std::vector<std::string> axes{"B", "h", "T_q", "T_k"};
    const bool weightsOnly = stage == StageId::Weights;
    Tensor& table = T(weightsOnly ? StageId::Weights : StageId::Scores);
    shapeStage(table, {1, 1, Tq, Tk}, axes, threads);
    if (!weightsOnly) {
      for (StageId id : {StageId::ScaledScores, StageId::MaskedScores}) {  // lazy: derived from the scores
        T(id).shape = {1, 1, Tq, Tk};
        T(id).axes = axes;
      }
    }
    const std::int64_t rows = queryBlockRows();
    const std::int64_t bh = static_cast<std::int64_t>(batch) * h + head, blocks = (Tq + rows - 1) / rows;
    FloatBuffer keysPacked;  // this head's keys as the scores kernel reads them
    packKeysFor(kHeads.ptr() + bh * Tk * dk, 1, Tk, dk, threads, keysPacked);
    parallelFor(threads, blocks, [&](std::int64_t i) {
      const std::int64_t q0 = i * rows;
      scoresAndWeights(opt, blocked, rowAny, runFrom, factor, batch, head, Tq, Tk, dk, qHeads.ptr() + bh * Tq * dk,
                       kHeads.ptr() + bh * Tk * dk, keysPacked.empty() ? nullptr : keysPacked.data(), q0,
                       std::min(rows, Tq - q0), weightsOnly ? nullptr : table.ptr(),
                       weightsOnly ? table.ptr() : nullptr);
    });

    recordDescription(t, in, w, opt, factor);
    t.batch = 1;
    t.heads = 1;
    t.dModel = t.dk;
    t.queryTokens = {t.queryTokens.at(static_cast<std::size_t>(batch))};
    t.keyTokens = {t.keyTokens.at(static_cast<std::size_t>(batch))};
    const auto item = static_cast<std::size_t>(batch);
    const auto perItem = static_cast<std::size_t>(Tq * Tk);
    t.blocked.assign(blocked.begin() + static_cast<std::ptrdiff_t>(item * perItem),
                     blocked.begin() + static_cast<std::ptrdiff_t>((item + 1) * perItem));
    t.fullyMasked.resize(static_cast<std::size_t>(Tq));
    for (std::int64_t q = 0; q < Tq; ++q) {
      t.fullyMasked[static_cast<std::size_t>(q)] = rowAny[item * static_cast<std::size_t>(Tq) + static_cast<std::size_t>(q)] == 2;
    }
    t.generation = 1;
    return t;
  } catch (const std::bad_alloc&) {
    return makeError("out of memory while computing one head of attention");
  }
}

}  // namespace mhascope
