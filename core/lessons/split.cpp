// Split — one big matrix = h small ones: the per-head loop against the vectorized forward, and
// what a skipped transpose does.
#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>

#include "lessons/common.hpp"
#include "lessons/split.hpp"

namespace mhascope {

using namespace lesson_detail;  // NOLINT(google-build-using-namespace): the lessons' shared helpers

namespace {

// The loop's own words for the variants: RoPE turns each head's rows at positions 0 .. T-1,
// query head i reads K/V head i / (h/N) (grouped-query attention), ALiBi adds head i's bias to
// its scaled scores before the mask.
struct LoopRun {
  HeadPipeline p;      // p.qh (B, h, T_q, d_k), p.kh and p.vh (B, N, T_k, d_k) as split
  Tensor qRot, kRot;   // RoPE only: the split Q and K turned, same shapes
  const Tensor& stage(StageId id) const {
    if (id == StageId::QRotated) return qRot;
    if (id == StageId::KRotated) return kRot;
    return p.stage(id);
  }
};

Tensor rotatedCopy(const Tensor& heads /*(B, heads, T, d_k)*/, const AttentionOptions& opt) {
  Tensor out = heads;
  const auto n = heads.dim(0) * heads.dim(1), T = heads.dim(2), dk = heads.dim(3);
  for (std::int64_t i = 0; i < n; ++i) {
    rotatePositions(out.ptr() + i * T * dk, T, dk, 0, opt.ropeBase, opt.ropeStyle, opt.ropeInvFreq, opt.ropeGain);
  }
  return out;
}

// Scores → scale → (+ ALiBi) → mask → softmax → weighted values, one (b, query head) at a time;
// query head hh reads K/V head hh / (h/N) of k and v (B, N, T_k, d_k).
void attendGrouped(HeadPipeline& p, const Tensor& q, const Tensor& k, const Tensor& v, const AttentionOptions& opt,
                   const std::vector<std::uint8_t>& blocked, float factor) {
  const auto B = q.dim(0), h = q.dim(1), Tq = q.dim(2), dk = q.dim(3), N = k.dim(1), Tk = k.dim(2);
  const std::vector<float> slopes = opt.positions == AttnPositions::Alibi ? alibiSlopes(static_cast<int>(h))
                                                                          : std::vector<float>{};
  for (Tensor* t : {&p.scores, &p.scaled, &p.masked, &p.weights}) *t = Tensor({B, h, Tq, Tk}, {"B", "h", "T_q", "T_k"});
  p.headOut = Tensor({B, h, Tq, dk}, {"B", "h", "T_q", "d_k"});
  for (std::int64_t b = 0; b < B; ++b) {
    for (std::int64_t hh = 0; hh < h; ++hh) {
      const std::int64_t bh = b * h + hh, bg = b * N + hh / (h / N);  // the K/V head this query head reads
      ConstMatrixMap qm(q.ptr() + bh * Tq * dk, Tq, dk);  // (T_q, d_k)
      ConstMatrixMap km(k.ptr() + bg * Tk * dk, Tk, dk);  // (T_k, d_k)
      ConstMatrixMap vm(v.ptr() + bg * Tk * dk, Tk, dk);  // (T_k, d_k)
      MatrixMap sm(p.scores.ptr() + bh * Tq * Tk, Tq, Tk);  // (T_q, T_k)
      sm.noalias() = qm * km.transpose();
      if (opt.scoresOverride) overrideScores(*opt.scoresOverride, b, static_cast<int>(hh), sm.data(), Tq, Tk, 0, Tq);
      for (std::int64_t qi = 0; qi < Tq; ++qi) {
        const std::int64_t row = bh * Tq * Tk + qi * Tk;
        for (std::int64_t ki = 0; ki < Tk; ++ki) {
          const float x = p.scores.data[idx(row + ki)] * factor;
          p.scaled.data[idx(row + ki)] = x;
          const float biased = slopes.empty() ? x : x + alibiBias(slopes[idx(hh)], opt.causal, qi, ki);
          p.masked.data[idx(row + ki)] = blocked[idx((b * Tq + qi) * Tk + ki)] ? kNegInf : biased;
        }
        stableSoftmax(p.masked.ptr() + row, p.weights.ptr() + row, Tk);
      }
      MatrixMap(p.headOut.ptr() + bh * Tq * dk, Tq, dk).noalias() =
          ConstMatrixMap(p.weights.ptr() + bh * Tq * Tk, Tq, Tk) * vm;
    }
  }
}

// After the split: RoPE (when on), the grouped attention, the merge and W_o.
void finishHeads(LoopRun& run, const Model& model, const std::vector<std::uint8_t>& blocked, float factor,
                 bool rightMerge) {
  const AttentionOptions& opt = model.options;
  const bool rope = opt.positions == AttnPositions::Rope;
  if (rope) {
    run.qRot = rotatedCopy(run.p.qh, opt);
    run.kRot = rotatedCopy(run.p.kh, opt);
  }
  attendGrouped(run.p, rope ? run.qRot : run.p.qh, rope ? run.kRot : run.p.kh, run.p.vh, opt, blocked, factor);
  if (rightMerge) {
    run.p.concat = concatHeads(run.p.headOut);
  } else {
    const auto& o = run.p.headOut;  // the matching wrong merge: reshape without transpose
    run.p.concat = Tensor({o.dim(0), o.dim(2), o.dim(1) * o.dim(3)}, {"B", "T_q", "d_model"});
    run.p.concat.data = o.data;
  }
  run.p.output = outputProjection(run.p.concat, model.weights);
}

}  // namespace

Result<LoopVsVectorized> perHeadLoopVsVectorized(const Model& model) {
  Trace trace;
  if (auto s = forward(model.inputs, model.weights, model.options, trace); !s) return s.error();
  const auto& in = model.inputs;
  const auto& w = model.weights;
  const auto B = in.query.dim(0), Tq = in.query.dim(1), Tk = in.key.dim(1), d = in.query.dim(2);
  const int h = model.options.heads, N = kvHeadsOf(model.options);
  const auto dk = headDimOf(model.options, d);
  const auto blocked = blockedCells(model.options, B, Tq, Tk);
  const float factor = scaleFactorFor(model.options.scale, d, dk);

  // Per-head formulation: head hh has its own small projection W_Q[hh] = W_q[:, hh*d_k:(hh+1)*d_k]
  // (d_model, d_k), applied to each batch item on its own; K and V have N such heads.
  LoopRun loop;
  auto projectPerHead = [&](const Tensor& x /*(B,T,d_model)*/, const RowMatrix& W, const RowVector& bias, int heads,
                            Tensor& out /*(B,heads,T,d_k)*/) {
    const auto T = x.dim(1);
    out = Tensor({B, heads, T, dk}, {"B", heads == h ? "h" : "N", T == Tq ? "T_q" : "T_k", "d_k"});
    for (std::int64_t b = 0; b < B; ++b) {
      ConstMatrixMap xb(x.ptr() + b * T * d, T, d);  // (T, d_model)
      for (int hh = 0; hh < heads; ++hh) {
        MatrixMap o(out.ptr() + (b * heads + hh) * T * dk, T, dk);  // (T, d_k)
        o.noalias() = xb * W.middleCols(hh * dk, dk);
        o.rowwise() += bias.segment(hh * dk, dk);
      }
    }
  };
  projectPerHead(in.query, w.wq, w.bq, h, loop.p.qh);
  projectPerHead(in.key, w.wk, w.bk, N, loop.p.kh);
  projectPerHead(in.value, w.wv, w.bv, N, loop.p.vh);
  finishHeads(loop, model, blocked, factor, true);

  // Transpose skipped: the (B, T, d_model) projection's memory read as (B, h, T, d_k) (K and V:
  // (B, T, N·d_k) read as (B, N, T, d_k)). Head hh then holds T*d_k consecutive numbers — whole
  // rows of a few tokens, not column block hh.
  LoopRun skipped;
  auto wrongSplit = [&](const Tensor& proj /*(B,T,heads*d_k)*/, Tensor& out) {
    const auto T = proj.dim(1), heads = proj.dim(2) / dk;
    out = Tensor({B, heads, T, dk}, {"B", heads == h ? "h" : "N", T == Tq ? "T_q" : "T_k", "d_k"});
    out.data = proj.data;  // the same numbers in the same order: only the shape changed
  };
  wrongSplit(trace.tensor(StageId::QProj), skipped.p.qh);
  wrongSplit(trace.tensor(StageId::KProj), skipped.p.kh);
  wrongSplit(trace.tensor(StageId::VProj), skipped.p.vh);
  finishHeads(skipped, model, blocked, factor, false);

  LoopVsVectorized r;
  r.heads = h;
  r.kvHeads = N;
  r.positions = model.options.positions;
  r.tq = static_cast<int>(Tq);
  r.tk = static_cast<int>(Tk);
  r.dModel = static_cast<int>(d);
  r.dk = static_cast<int>(dk);
  std::vector<StageId> compared(std::begin(kPerHeadStages), std::end(kPerHeadStages));
  if (model.options.positions == AttnPositions::Rope) {  // after the split of V, in pipeline order
    const auto at = std::find(compared.begin(), compared.end(), StageId::VHeads) + 1;
    compared.insert(at, {StageId::QRotated, StageId::KRotated});
  }
  for (StageId id : compared) {
    const Tensor ref = trace.copyOf(id);  // the lazy stages have no stored table
    const double a = maxAbsDiff(loop.stage(id).ptr(), ref.ptr(), ref.data.size());
    const double b = maxAbsDiff(skipped.stage(id).ptr(), ref.ptr(), ref.data.size());
    r.loopVsVectorized.push_back({id, a});
    r.skippedVsCorrect.push_back({id, b});
    r.loopMaxAbsDiff = std::max(r.loopMaxAbsDiff, a);
  }
  r.skippedOutputMaxAbsDiff = r.skippedVsCorrect.back().maxAbsDiff;
  r.skippedSources.resize(idx(h * Tq * dk));
  for (int hh = 0; hh < h; ++hh)
    for (std::int64_t t = 0; t < Tq; ++t)
      for (std::int64_t c = 0; c < dk; ++c) {
        const std::int64_t flat = (hh * Tq + t) * dk + c;  // offset in batch item 0's (T, h·d_k) block
        FeatureSource src{static_cast<int>(flat / (h * dk)), static_cast<int>(flat % (h * dk))};
        r.skippedSources[idx(flat)] = src;
        if (src.token != t) ++r.skippedWrongToken;
      }
  return r;
}

const char* headSplitReasonText() {
  return "Why d_k = d_model / h, the usual choice: h heads of d_k columns cost exactly the parameters and FLOPs of "
         "one full-width head, yet give h attention patterns instead of one. It is a choice, not a rule: only W_q and "
         "W_o must agree on h*d_k, and some models make the heads wider (Qwen3-0.6B: d_model 1024, 16 heads of "
         "128) or narrower (Gemma-2-2B: d_model 2304, 8 heads of 256); the d_k control under Sizes tries it. Each head's score table is a product "
         "of (T_q, d_k) and (d_k, T_k), so its rank is at most d_k. Nothing in the layer forces heads to "
         "differ: which roles they take is learned, differs between training runs, and many trained heads turn "
         "out redundant (Michel et al. 2019 pruned most heads of trained models with little loss).";
}

std::string headCircuitsText(int dModel, int dk, bool hasBias) {
  const std::string D = std::to_string(dModel), DK = std::to_string(dk);
  return "Read a head through two products, not through W_q, W_k, W_v, W_o one by one. Head i's columns "
         "W_q^(i), W_k^(i), W_v^(i) (d_model, d_k) and rows W_o^(i) (d_k, d_model) meet as W_QK^(i) = W_q^(i) "
         "W_k^(i)^T and W_OV^(i) = W_v^(i) W_o^(i), each (" + D + ", " + D + ") of rank at most d_k = " + DK +
         ": where the head looks depends only on W_QK^(i)" +
         (hasBias ? std::string(" (and the biases b_q^(i), b_k^(i))") : std::string()) +
         ", what it writes only on W_OV^(i). W_q^(i) and W_k^(i) alone are not identifiable: W_q^(i) M and "
         "W_k^(i) M^-T, for any invertible (" + DK + ", " + DK + ") M" +
         (hasBias ? std::string(" (with b_q^(i) M and b_k^(i) M^-T)") : std::string()) +
         ", give exactly the same scores, so the pattern of a W_q or W_k heatmap means little on its own; "
         "the same holds for W_v^(i) and W_o^(i).";
}

}  // namespace mhascope
