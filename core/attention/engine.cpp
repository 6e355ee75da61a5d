// The forward pass of multi-head attention, written in the order of the lesson:
// project → split heads → scores → scale → mask → softmax → weighted sum → merge heads →
// output projection. One function per equation, each calling one kernel step
// (kernels/dispatch.hpp chooses the machine's kernel; nothing here asks which one runs). Every
// stage is written into the Trace as it is made.
//
// [SECTION] one function per equation
// [SECTION] one head's attention, a block of query rows at a time
// [SECTION] the forward
// [SECTION] one head alone
// The trace's shapes and description: engine_record.cpp. Validation, estimates, weight
// initialisation and the non-finite scan: engine_checks.cpp. The score rules shared with the
// lessons (scale factor, blocked keys, hand-set scores): score_rules.cpp.
#include "attention/engine.hpp"

#include <algorithm>
#include <functional>
#include <limits>
#include <new>

#include "attention/engine_record.hpp"
#include "kernels/block_rows.hpp"
#include "kernels/dispatch.hpp"
#include "util/thread_pool.hpp"

namespace mhascope {
namespace {

// ---------------------------------------------------------------------------------------------
// [SECTION] one function per equation
// ---------------------------------------------------------------------------------------------

// Q = X W_q + b_q (likewise K, V, and the output Y = O W_o + b_o) for the rows [r0, r0 + n) of the
// B*T rows: every output feature mixes all d_model input features of its own token. With N K/V
// heads, K and V have N*d_k features instead of d_model.
void project(const Tensor& x /*(B, T, d_model)*/, const RowMatrix& w /*(d_model, d_out)*/,
             const RowVector& b /*(1, d_out)*/, const float* packedW /*w as the kernel reads it, or null*/,
             std::int64_t r0, std::int64_t n, Tensor& out /*(B, T, d_out)*/) {
  const std::int64_t d = x.dim(2), dOut = out.dim(2);
  kernels::projectRowsTo(x.ptr() + r0 * d, n, d, dOut, w.data(), b.data(), packedW, out.ptr() + r0 * dOut);
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

// RoPE: every head's rows turned by their positions 0 .. T-1 (rotatePositions), into `rotated`;
// the split heads stay as recorded. Only q and k are turned, so position enters a score only through t - j.
void rotate(const Tensor& heads /*(B, h or N, T, d_k)*/, const AttentionOptions& opt, int threads,
            Tensor& rotated /*same shape*/) {
  const std::int64_t n = heads.dim(0) * heads.dim(1), T = heads.dim(2), dk = heads.dim(3);
  const RopeTable table = ropeTable(T, dk, 0, opt.ropeBase, opt.ropeInvFreq, opt.ropeGain);  // the angles once, for every head
  parallelFor(threads, n, [&](std::int64_t i) {
    if (&heads != &rotated) std::copy_n(heads.ptr() + i * T * dk, T * dk, rotated.ptr() + i * T * dk);
    rotateRows(rotated.ptr() + i * T * dk, T, dk, table, opt.ropeStyle);
  });
}

// q/k norm: every token's projected features (B, T, n·d_k) normed (normQueryKeyHeads, per head or over the whole
// row) into the split heads' layout; the split heads stay as recorded.
void normHeads(const Tensor& proj /*(B, T, n·d_k)*/, const std::vector<float>& gain, float eps, int threads,
               Tensor& normed /*(B, n, T, d_k)*/) {
  const std::int64_t n = normed.dim(1), T = normed.dim(2), dk = normed.dim(3);
  parallelFor(threads, proj.dim(0) * T, [&](std::int64_t r) {
    const std::int64_t b = r / T, tok = r % T;
    normQueryKeyHeads(proj.ptr() + r * n * dk, n, dk, gain, eps, normed.ptr() + (b * n * T + tok) * dk, T * dk);
  });
}

// Grouped-query attention: query head i reads K/V head i // (h/N). The (1, h, N) table of who reads
// what, and the K/V head of query head i.
int kvHeadOf(int head, int h, int n) { return head / (h / n); }
void groupKvHeads(int h, int n, Tensor& groups /*(1, h, N)*/) {
  std::fill(groups.data.begin(), groups.data.end(), 0.0f);
  for (int i = 0; i < h; ++i) groups.data[static_cast<std::size_t>(i * n + kvHeadOf(i, h, n))] = 1.0f;
}

// ALiBi's bias B_i[t, j] = -m_i (t - j) (|t - j| without a causal mask), one table per head.
void positionBias(const AttentionOptions& opt, std::int64_t Tq, std::int64_t Tk, int firstHead,
                  Tensor& bias /*(1, heads, T_q, T_k)*/) {
  const std::vector<float> slopes = alibiSlopes(opt.heads);
  for (std::int64_t i = 0; i < bias.dim(1); ++i) {
    const float m = slopes[static_cast<std::size_t>(firstHead + i)];
    float* table = bias.ptr() + i * Tq * Tk;
    for (std::int64_t t = 0; t < Tq; ++t) {
      for (std::int64_t j = 0; j < Tk; ++j) table[t * Tk + j] = alibiBias(m, opt.causal, t, j);
    }
  }
}

// The sliding window's rule alone (windowHides), as a (1, T_q, T_k) table: 1 = hidden.
void windowMask(const AttentionOptions& opt, std::int64_t Tq, std::int64_t Tk, Tensor& hidden /*(1, T_q, T_k)*/) {
  for (std::int64_t t = 0; t < Tq; ++t) {
    for (std::int64_t j = 0; j < Tk; ++j) hidden.data[static_cast<std::size_t>(t * Tk + j)] = windowHides(opt, t, j);
  }
}

// One (batch item, head)'s attention: its rows of Q, K and V, the tables it writes and the rules
// its scores follow. The forward makes one per head over the trace's tables; attentionHead makes
// one for a head alone. A new variant of attention is a new field here and a new step below.
struct HeadContext {
  std::int64_t b = 0;                       // batch item
  int head = 0;                             // head index i
  std::int64_t Tq = 0, Tk = 0, dk = 0;
  const float* q = nullptr;                 // (T_q, d_k) Q_i
  const float* k = nullptr;                 // (T_k, d_k) K_i
  const float* packedKeys = nullptr;        // K_i as the scores kernel reads it, or null
  const float* v = nullptr;                 // (T_k, d_k) V_i, or null: no weighted sum
  float* scores = nullptr;                  // (T_q, T_k) S_i as recorded, or null: not kept
  float* weights = nullptr;                 // (T_q, T_k) A_i, or null: the scores alone
  float* out = nullptr;                     // (T_q, d_k) O_i, row stride outStride
  std::int64_t outStride = 0;
  float factor = 1.0f;                      // the scale: 1/sqrt(d_k), 1/sqrt(d_model), 1 or a given one
  float softcap = 0.0f;                     // c of the softcap c tanh(s' / c), or 0: none
  const BlockedRows* mask = nullptr;        // which keys each query row may not see
  const Tensor* scoresOverride = nullptr;   // hand-set scores (NaN = keep the computed one), or null
  const float* bias = nullptr;              // (T_q, T_k) ALiBi's B_i added to the scaled scores, or null
  bool sink = false;                        // a learned sink: s_i joins each row's softmax as one more column
  float sinkLogit = 0.0f;                   // s_i
  float* sinkShare = nullptr;               // (T_q) each row's share on the sink, or null: not recorded
};

// The mask M: each query row's blocked keys (the causal rule, the key padding, the attention mask:
// buildBlocked), as the kernels take them — a run to the row's end where the blocked keys are one
// (no bytes read), else the row's flags.
void mask(const HeadContext& c, std::int64_t q0, std::int64_t nq, BlockedKeys* keys) {
  for (std::int64_t q = q0; q < q0 + nq; ++q) keys[q - q0] = c.mask->keysOf(c.b, q);
}

// The softcap's rows: S' = S * factor, then c tanh(S' / c) (Gemma 2's bent scores), then -inf on the blocked keys,
// into the weights' rows, with each row's maximum. The trace reads the softcapped and masked stages back from the
// scores with these same float operations (trace.cpp).
void capMaskRows(const float* s, float factor, float cap, const BlockedKeys* keys, std::int64_t nq, std::int64_t Tk,
                 float* weights, float* rowMax) {
  for (std::int64_t q = 0; q < nq; ++q) {
    float m = -std::numeric_limits<float>::infinity();
    for (std::int64_t j = 0; j < Tk; ++j) {
      const float v = keys[q].at(j) ? -std::numeric_limits<float>::infinity() : cap * std::tanh((s[q * Tk + j] * factor) / cap);
      weights[q * Tk + j] = v;
      m = std::max(m, v);
    }
    rowMax[q] = m;
  }
}

// S_i = Q_i K_i^T (T_q, T_k); S' = S * factor, the scale; S'' = S' with -inf on the blocked keys,
// the mask. The weights' rows receive S'' and rowMax each row's maximum. The scale and the mask are
// rules applied as each score is made; the trace reads S' and S'' back from the recorded S with the
// same float operations (trace.cpp), so neither is stored. Hand-set scores replace cells of S before
// the scale: then S is made first and the two rules applied after, to the same products.
void scaledMaskedScores(const HeadContext& c, std::int64_t q0, std::int64_t nq, const BlockedKeys* keys,
                        float* rowMax) {
  const float* q = c.q + q0 * c.dk;
  const std::int64_t at = q0 * c.Tk;
  if (!c.weights || c.scoresOverride || c.softcap > 0.0f) {
    float* s = c.scores ? c.scores : c.weights;  // not recorded: made in the weights' rows
    kernels::scoreProducts(q, c.k, c.packedKeys, nq, c.Tk, c.dk, keys, s + at, c.Tk);
    if (c.scoresOverride) overrideScores(*c.scoresOverride, c.b, c.head, s, c.Tq, c.Tk, q0, nq);
    if (!c.weights) return;
    if (c.softcap > 0.0f) {
      capMaskRows(s + at, c.factor, c.softcap, keys, nq, c.Tk, c.weights + at, rowMax);
    } else {
      kernels::scaleMaskRows(s + at, c.factor, keys, nq, c.Tk, c.Tk, c.weights + at, rowMax);
    }
    return;
  }
  kernels::scaledMaskedScores(q, c.k, c.packedKeys, nq, c.Tk, c.dk, c.factor, keys, c.scores ? c.scores + at : nullptr,
                              c.weights + at, c.Tk, rowMax);
}

// S''_i = S'_i + B_i on the keys the row may see (a blocked key stays -inf): ALiBi's bias, after the
// scale and before the softmax, whichever kernel made the scaled scores. The row maxima follow.
void addPositionBias(const HeadContext& c, std::int64_t q0, std::int64_t nq, const BlockedKeys* keys, float* rowMax) {
  for (std::int64_t q = q0; q < q0 + nq; ++q) {
    float* row = c.weights + q * c.Tk;
    const float* b = c.bias + q * c.Tk;
    float m = -std::numeric_limits<float>::infinity();
    for (std::int64_t j = 0; j < c.Tk; ++j) {
      if (!keys[q - q0].at(j)) row[j] += b[j];
      m = std::max(m, row[j]);
    }
    rowMax[q - q0] = m;
  }
}

// A_i = softmax(S''_i) over T_k, each row in place. The row's maximum is subtracted first only for
// numerical stability (it cancels); a fully masked row gets weights 0, not 0/0 = NaN. With a learned sink the
// softmax runs over [S''_i | s_i] and the sink's column is dropped: the row sums to 1 - its sink share, and a
// fully masked row gives the sink everything (weights 0, share 1).
void softmax(const HeadContext& c, std::int64_t q0, std::int64_t nq, const BlockedKeys* keys, const float* rowMax) {
  for (std::int64_t q = q0; q < q0 + nq; ++q) {
    float* row = c.weights + q * c.Tk;
    if (!c.sink) {
      softmaxRow(row, rowMax[q - q0], keys[q - q0], c.mask->allBlocked(c.b, q), row, c.Tk);
      continue;
    }
    const float share = softmaxRowWithSink(row, rowMax[q - q0], keys[q - q0], c.mask->allBlocked(c.b, q), c.sinkLogit, row, c.Tk);
    if (c.sinkShare) c.sinkShare[q] = share;
  }
}

// O_i = A_i V_i (T_q, d_k): the only step that mixes information across tokens.
void weightedSum(const HeadContext& c, std::int64_t q0, std::int64_t nq) {
  kernels::weightedSum(c.weights + q0 * c.Tk, c.Tk, c.v, nq, c.Tk, c.dk, c.out + q0 * c.outStride, c.outStride);
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

// ---------------------------------------------------------------------------------------------
// [SECTION] one head's attention, a block of query rows at a time
// ---------------------------------------------------------------------------------------------

// The query rows [q0, q0 + nq) of one head (128 or 64 rows: block_rows.hpp), through every step
// while the block is in cache: mask, scores with the scale and the mask, softmax, weighted sum. The
// arithmetic is exactly that of whole-matrix products; only the order of work differs. Without
// weights only the scores are made; without V the weighted sum is left out.
void attendRows(const HeadContext& c, std::int64_t q0, std::int64_t nq) {
  BlockedKeys keys[kMaxQueryBlock];
  float rowMax[kMaxQueryBlock];
  mask(c, q0, nq, keys);
  scaledMaskedScores(c, q0, nq, keys, rowMax);
  if (!c.weights) return;
  if (c.bias) addPositionBias(c, q0, nq, keys, rowMax);
  softmax(c, q0, nq, keys, rowMax);
  if (c.v) weightedSum(c, q0, nq);
}

// Every query block of every head in `heads` (a head's context from its index), shared out among
// the threads. Each block's work is the same whichever thread does it, so the numbers depend on
// neither the threads nor the order.
void attendAll(std::int64_t heads, std::int64_t Tq, std::int64_t rows, int threads,
               const std::function<HeadContext(std::int64_t)>& headOf) {
  const std::int64_t blocks = (Tq + rows - 1) / rows;
  parallelFor(threads, heads * blocks, [&](std::int64_t i) {
    const std::int64_t q0 = (i % blocks) * rows;
    attendRows(headOf(i / blocks), q0, std::min(rows, Tq - q0));
  });
}

// The projections X W + b of `jobs`, in blocks of rows (projectionBlockRows) shared out among the
// threads. The regrouping on either side of a projection (recording the input, splitting into
// heads, merging the heads) goes with its block: no serial pass, rows read while in cache.
using RowRange = std::function<void(std::int64_t r0, std::int64_t n)>;
struct ProjectJob {
  const Tensor* x;
  const RowMatrix* weight;
  const RowVector* bias;
  Tensor* out;
  RowRange before;                 // on the block's rows before their projection (may be empty)
  RowRange after;                  // and after it
  const float* packed = nullptr;   // the weight as the kernel reads it, or null
};
void projectAll(std::initializer_list<ProjectJob> jobs, int threads) {
  std::vector<std::pair<const ProjectJob*, std::int64_t>> blocks;  // (job, first row)
  for (const ProjectJob& j : jobs) {
    const std::int64_t rows = j.x->dim(0) * j.x->dim(1);
    for (std::int64_t r0 = 0; r0 < rows; r0 += projectionBlockRows(rows)) blocks.emplace_back(&j, r0);
  }
  parallelFor(threads, static_cast<std::int64_t>(blocks.size()), [&](std::int64_t i) {
    const ProjectJob& j = *blocks[static_cast<std::size_t>(i)].first;
    const std::int64_t r0 = blocks[static_cast<std::size_t>(i)].second, rows = j.x->dim(0) * j.x->dim(1);
    const std::int64_t n = std::min(projectionBlockRows(rows), rows - r0);
    if (j.before) j.before(r0, n);
    project(*j.x, *j.weight, *j.bias, j.packed, r0, n, *j.out);
    if (j.after) j.after(r0, n);
  });
}

RowRange splitInto(const Tensor& proj, int h, Tensor& heads) {
  return [&proj, &heads, h](std::int64_t r0, std::int64_t n) { splitHeads(proj, h, r0, n, heads); };
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// [SECTION] the forward
// ---------------------------------------------------------------------------------------------

Status Engine::run(const AttentionInputs& in, const MhaWeights& w, std::shared_ptr<const MhaWeights> keep,
                   const AttentionOptions& opt, Trace& trace) {
  if (auto s = validate(in, w, opt); !s) return s;
  const auto B = in.query.dim(0), Tq = in.query.dim(1), Tk = in.key.dim(1), d = in.query.dim(2);
  const int h = opt.heads, N = kvHeadsOf(opt);
  const std::int64_t dk = headDimOf(opt, d), hq = h * dk;  // hq: concat's width, d_model unless d_k is set
  const std::uint64_t generation = trace.generation;
  try {
    Trace t = std::move(trace);  // reuse the old buffers: no reallocation when shapes are unchanged
    const bool all = opt.recordEveryStage;
    const int threads = threadsWorthStarting(opt.threads, countFlops(B, Tq, Tk, d, h, N, dk).total());
    shapeStages(t, in, opt, all, threads);
    auto T = [&t](StageId id) -> Tensor& { return t.tensor(id); };

    // Q, K, V projections; each block of rows also records its input rows and splits its
    // projected rows into the heads.
    auto recordInput = [&](const Tensor& x, StageId id, bool recorded) -> RowRange {
      if (!recorded) return {};
      return [&x, &dst = T(id)](std::int64_t r0, std::int64_t n) { copyInputRows(x, r0, n, dst); };
    };
    kernels::Scratch::PackedWeights& packed = scratch_.packedWeights;
    // The packed copies are of four (d_model, d_model) matrices: with N K/V heads, or heads not
    // d_model / h wide, none is kept and each block packs what it reads.
    kernels::packWeights(packed, N == h && hq == d ? keep : nullptr, {w.wq.data(), w.wk.data(), w.wv.data(), w.wo.data()}, d,
                         threads);
    projectAll({{&in.query, &w.wq, &w.bq, &T(StageId::QProj), recordInput(in.query, StageId::Query, true),
                 splitInto(T(StageId::QProj), h, T(StageId::QHeads)), packed.matrix(0)},
                {&in.key, &w.wk, &w.bk, &T(StageId::KProj), recordInput(in.key, StageId::Key, all),
                 splitInto(T(StageId::KProj), N, T(StageId::KHeads)), packed.matrix(1)},
                {&in.value, &w.wv, &w.bv, &T(StageId::VProj), recordInput(in.value, StageId::Value, all),
                 splitInto(T(StageId::VProj), N, T(StageId::VHeads)), packed.matrix(2)}},
               threads);

    // The variants, each a step of its own: the q/k norm, then RoPE turns q and k, the group map says
    // which K/V head each query head reads, ALiBi's bias and the window's rule are tables the scores meet.
    const bool normed = !opt.qNorm.empty(), rope = opt.positions == AttnPositions::Rope;
    if (normed) {
      normHeads(T(StageId::QProj), opt.qNorm, opt.qkNormEps, threads, T(StageId::QNormed));
      normHeads(T(StageId::KProj), opt.kNorm, opt.qkNormEps, threads, T(StageId::KNormed));
    }
    const StageId qSplit = normed ? StageId::QNormed : StageId::QHeads, kSplit = normed ? StageId::KNormed : StageId::KHeads;
    if (rope) {
      rotate(T(qSplit), opt, threads, T(StageId::QRotated));
      rotate(T(kSplit), opt, threads, T(StageId::KRotated));
    }
    const StageId qStage = rope ? StageId::QRotated : qSplit, kStage = rope ? StageId::KRotated : kSplit;
    const Tensor& queries = T(qStage);
    const Tensor& keys = T(kStage);
    const bool hooked = static_cast<bool>(opt.stageHook);
    if (hooked) {
      opt.stageHook(qStage, T(qStage));
      opt.stageHook(kStage, T(kStage));
      opt.stageHook(StageId::VHeads, T(StageId::VHeads));
    }
    if (N != h) groupKvHeads(h, N, T(StageId::KvGroups));
    const bool alibi = opt.positions == AttnPositions::Alibi;
    if (alibi) positionBias(opt, Tq, Tk, 0, T(StageId::PositionBias));
    if (opt.window > 0) windowMask(opt, Tq, Tk, T(StageId::WindowMask));
    kernels::packKeys(keys.ptr(), B * N, Tk, dk, threads, scratch_.packedKeys);

    // Attention per (batch item, head, block of query rows). Without full recording the scores go
    // straight into the weights' rows and A V straight into concat's columns: the same operations
    // on the same numbers, two tables fewer to write. The tables are the block-size measurement's
    // scratch: written over below.
    const BlockedRows blocked = blockedRows(opt, B, Tq, Tk, t.blocked);
    t.fullyMasked = blocked.fullyMaskedRows();
    const float factor = scaleFactorFor(opt.scale, d, dk, opt.scaleFactor);
    Tensor &wt = T(StageId::Weights), &st = T(StageId::Scores);
    const std::int64_t rows = queryBlockRows({{wt.ptr(), wt.numel()}, {st.ptr(), all ? st.numel() : 0}});
    auto headOf = [&](std::int64_t bh) {
      HeadContext c;
      c.b = bh / h;
      c.head = static_cast<int>(bh % h);
      c.Tq = Tq;
      c.Tk = Tk;
      c.dk = dk;
      const std::int64_t kv = c.b * N + kvHeadOf(c.head, h, N);  // the K/V head this query head reads
      c.q = queries.ptr() + bh * Tq * dk;
      c.k = keys.ptr() + kv * Tk * dk;
      c.packedKeys = kernels::packedKeysOf(scratch_.packedKeys, kv, Tk, dk);
      c.v = T(StageId::VHeads).ptr() + kv * Tk * dk;
      c.scores = all ? st.ptr() + bh * Tq * Tk : nullptr;
      c.weights = wt.ptr() + bh * Tq * Tk;
      // head_outputs' (T_q, d_k) rows, or head i's columns of concat (row stride h·d_k)
      c.out = all ? T(StageId::HeadOutputs).ptr() + bh * Tq * dk : T(StageId::Concat).ptr() + c.b * Tq * hq + c.head * dk;
      c.outStride = all ? dk : hq;
      c.factor = factor;
      c.softcap = opt.softcap;
      c.mask = &blocked;
      c.scoresOverride = opt.scoresOverride ? &*opt.scoresOverride : nullptr;
      c.bias = alibi ? T(StageId::PositionBias).ptr() + c.head * Tq * Tk : nullptr;
      c.sink = !opt.sinkLogits.empty();
      c.sinkLogit = c.sink ? opt.sinkLogits[static_cast<std::size_t>(c.head)] : 0.0f;
      c.sinkShare = c.sink ? T(StageId::SinkShare).ptr() + bh * Tq : nullptr;
      return c;
    };
    // A hook on the weights sees them whole, before any weighted sum: then the sums are a pass of their own.
    attendAll(B * h, Tq, rows, threads, [&](std::int64_t bh) {
      HeadContext c = headOf(bh);
      if (hooked) c.v = nullptr;
      return c;
    });
    if (hooked) {
      opt.stageHook(StageId::Weights, wt);
      parallelFor(threads, B * h, [&](std::int64_t bh) { weightedSum(headOf(bh), 0, Tq); });
    }

    // Merge the heads (each block of rows right before its output projection; without full
    // recording A V wrote straight into concat), then Y = O W_o + b_o.
    RowRange merge;
    if (hooked) {  // the hook sees the heads merged whole, before the projection reads them
      if (all) mergeHeads(T(StageId::HeadOutputs), 0, B * Tq, T(StageId::Concat));
      opt.stageHook(StageId::Concat, T(StageId::Concat));
    } else if (all) {
      merge = [&ho = T(StageId::HeadOutputs), &c = T(StageId::Concat)](std::int64_t r0, std::int64_t n) {
        mergeHeads(ho, r0, n, c);
      };
    }
    projectAll({{&T(StageId::Concat), &w.wo, &w.bo, &T(StageId::Output), merge, {}, packed.matrix(3)}}, threads);

    recordDescription(t, in, w.hasBias, opt, factor);
    // The learned parameters as used (the window and `export` draw these very numbers).
    t.weights = keep ? std::move(keep) : std::make_shared<const MhaWeights>(w);
    t.generation += 1;
    trace = std::move(t);
  } catch (const std::bad_alloc&) {
    trace = Trace{};  // half-overwritten buffers are not a trace: leave an empty one
    trace.generation = generation + 1;
    scratch_ = {};
    return makeError("out of memory while computing attention (needs about " +
                     formatBytes(estimateMemory(B, Tq, Tk, d, h, withVariants({}, opt)).total()) +
                     "); lower --memory-budget or the sizes");
  }
  return Ok{};
}

Status Engine::forward(const AttentionInputs& in, const MhaWeights& w, const AttentionOptions& opt, Trace& trace) {
  return run(in, w, nullptr, opt, trace);
}

Status Engine::forward(const AttentionInputs& in, std::shared_ptr<const MhaWeights> w, const AttentionOptions& opt,
                       Trace& trace) {
  if (!w) return makeError("no weights were given");
  const MhaWeights& numbers = *w;
  return run(in, numbers, std::move(w), opt, trace);
}

Status forward(const AttentionInputs& in, const MhaWeights& w, const AttentionOptions& opt, Trace& trace) {
  return Engine().forward(in, w, opt, trace);
}

Status forward(const AttentionInputs& in, std::shared_ptr<const MhaWeights> w, const AttentionOptions& opt,
               Trace& trace) {
  return Engine().forward(in, std::move(w), opt, trace);
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
  const std::int64_t dk = headDimOf(opt, d);
  const int N = kvHeadsOf(opt);
  try {
    const FlopCount flops = countFlops(B, Tq, Tk, d, h, N, dk);
    const int threads =
        threadsWorthStarting(opt.threads, flops.projections / 2 + flops.attention / (2.0 * h * static_cast<double>(B)));
    // Q and K of every head, as forward() projects and splits them (the same row blocks).
    Tensor qProj, kProj, qHeads, kHeads;
    shapeStage(qProj, {B, Tq, h * dk}, {"B", "T_q", "d_model"});
    shapeStage(kProj, {B, Tk, N * dk}, {"B", "T_k", "d_model"});
    shapeStage(qHeads, {B, h, Tq, dk}, {"B", "h", "T_q", "d_k"});
    shapeStage(kHeads, {B, N, Tk, dk}, {"B", "N", "T_k", "d_k"});
    projectAll({{&in.query, &w.wq, &w.bq, &qProj, {}, splitInto(qProj, h, qHeads)},
                {&in.key, &w.wk, &w.bk, &kProj, {}, splitInto(kProj, N, kHeads)}},
               threads);
    if (!opt.qNorm.empty()) {  // normed in place, from the projections: the split ones are not recorded here
      normHeads(qProj, opt.qNorm, opt.qkNormEps, threads, qHeads);
      normHeads(kProj, opt.kNorm, opt.qkNormEps, threads, kHeads);
    }
    if (opt.positions == AttnPositions::Rope) {  // turned in place: the split ones are not recorded here
      rotate(qHeads, opt, threads, qHeads);
      rotate(kHeads, opt, threads, kHeads);
    }
    std::vector<std::uint8_t> flags;
    const BlockedRows blocked = blockedRows(opt, B, Tq, Tk, flags);
    const float factor = scaleFactorFor(opt.scale, d, dk, opt.scaleFactor);

    // A trace of this one head: every stage empty but the table `stage` reads.
    const bool weightsOnly = stage == StageId::Weights;
    Trace t = oneHeadTrace(Tq, Tk, weightsOnly, threads);
    Tensor& table = t.stages[static_cast<std::size_t>(weightsOnly ? StageId::Weights : StageId::Scores)].tensor;
    const std::int64_t bh = static_cast<std::int64_t>(batch) * h + head;
    const std::int64_t kv = static_cast<std::int64_t>(batch) * N + kvHeadOf(head, h, N);
    FloatBuffer keysPacked;  // this head's keys as the scores kernel reads them
    kernels::packKeys(kHeads.ptr() + kv * Tk * dk, 1, Tk, dk, threads, keysPacked);
    Tensor& bias = t.stages[static_cast<std::size_t>(StageId::PositionBias)].tensor;
    if (opt.positions == AttnPositions::Alibi) {  // this head's bias: the lazy masked scores add it too
      shapeStage(bias, {1, 1, Tq, Tk}, {"B", "h", "T_q", "T_k"});
      positionBias(opt, Tq, Tk, head, bias);
    }
    HeadContext c;
    c.b = batch;
    c.head = head;
    c.Tq = Tq;
    c.Tk = Tk;
    c.dk = dk;
    c.q = qHeads.ptr() + bh * Tq * dk;
    c.k = kHeads.ptr() + kv * Tk * dk;
    c.packedKeys = kernels::packedKeysOf(keysPacked, 0, Tk, dk);
    c.scores = weightsOnly ? nullptr : table.ptr();
    c.weights = weightsOnly ? table.ptr() : nullptr;
    c.factor = factor;
    c.softcap = opt.softcap;
    c.mask = &blocked;
    c.scoresOverride = opt.scoresOverride ? &*opt.scoresOverride : nullptr;
    c.bias = opt.positions == AttnPositions::Alibi ? bias.ptr() : nullptr;
    c.sink = !opt.sinkLogits.empty();
    c.sinkLogit = c.sink ? opt.sinkLogits[static_cast<std::size_t>(head)] : 0.0f;
    attendAll(1, Tq, queryBlockRows(), threads, [&c](std::int64_t) { return c; });

    recordDescription(t, in, w.hasBias, opt, factor);
    keepOneItem(t, blocked, batch);
    return t;
  } catch (const std::bad_alloc&) {
    return makeError("out of memory while computing one head of attention");
  }
}

}  // namespace mhascope
