// Split — one big matrix = h small ones: the per-head loop against the vectorized forward, and
// what a skipped transpose does.
#include <algorithm>
#include <cmath>
#include <limits>

#include "lessons/common.hpp"
#include "lessons/split.hpp"

namespace mhascope {

using namespace lesson_detail;  // NOLINT(google-build-using-namespace): the lessons' shared helpers

Result<LoopVsVectorized> perHeadLoopVsVectorized(const Model& model) {
  // The per-head loop below is multi-head attention's: h K/V heads, no rotation, no bias.
  if (kvHeadsOf(model.options) != model.options.heads || model.options.positions != AttnPositions::None) {
    return makeError("the per-head loop covers multi-head attention (N = h K/V heads, no RoPE or ALiBi)");
  }
  Trace trace;
  if (auto s = forward(model.inputs, model.weights, model.options, trace); !s) return s.error();
  const auto& in = model.inputs;
  const auto& w = model.weights;
  const auto B = in.query.dim(0), Tq = in.query.dim(1), Tk = in.key.dim(1), d = in.query.dim(2);
  const int h = model.options.heads;
  const auto dk = d / h;
  const auto blocked = blockedCells(model.options, B, Tq, Tk);
  const float factor = scaleFactorFor(model.options.scale, d, h);

  // Per-head formulation: head hh has its own small projection W_Q[hh] = W_q[:, hh*d_k:(hh+1)*d_k]
  // (d_model, d_k), applied to each batch item on its own.
  HeadPipeline loop;
  auto projectPerHead = [&](const Tensor& x /*(B,T,d_model)*/, const RowMatrix& W, const RowVector& bias,
                            Tensor& out /*(B,h,T,d_k)*/) {
    const auto T = x.dim(1);
    out = Tensor({B, h, T, dk}, {"B", "h", T == Tq ? "T_q" : "T_k", "d_k"});
    for (std::int64_t b = 0; b < B; ++b) {
      ConstMatrixMap xb(x.ptr() + b * T * d, T, d);  // (T, d_model)
      for (int hh = 0; hh < h; ++hh) {
        MatrixMap o(out.ptr() + (b * h + hh) * T * dk, T, dk);  // (T, d_k)
        o.noalias() = xb * W.middleCols(hh * dk, dk);
        o.rowwise() += bias.segment(hh * dk, dk);
      }
    }
  };
  projectPerHead(in.query, w.wq, w.bq, loop.qh);
  projectPerHead(in.key, w.wk, w.bk, loop.kh);
  projectPerHead(in.value, w.wv, w.bv, loop.vh);
  attendEachHead(loop, model.options, blocked, factor);
  loop.concat = concatHeads(loop.headOut);
  loop.output = outputProjection(loop.concat, w);

  // Transpose skipped: the (B, T, d_model) projection's memory read as (B, h, T, d_k). Head hh
  // then holds T*d_k consecutive numbers — whole rows of a few tokens, not column block hh.
  HeadPipeline skipped;
  auto wrongSplit = [&](const Tensor& proj /*(B,T,d_model)*/, Tensor& out) {
    const auto T = proj.dim(1);
    out = Tensor({B, h, T, dk}, {"B", "h", T == Tq ? "T_q" : "T_k", "d_k"});
    out.data = proj.data;  // the same numbers in the same order: only the shape changed
  };
  wrongSplit(trace.tensor(StageId::QProj), skipped.qh);
  wrongSplit(trace.tensor(StageId::KProj), skipped.kh);
  wrongSplit(trace.tensor(StageId::VProj), skipped.vh);
  attendEachHead(skipped, model.options, blocked, factor);
  skipped.concat = Tensor({B, Tq, d}, {"B", "T_q", "d_model"});
  skipped.concat.data = skipped.headOut.data;  // the matching wrong merge: reshape without transpose
  skipped.output = outputProjection(skipped.concat, w);

  LoopVsVectorized r;
  r.heads = h;
  r.tq = static_cast<int>(Tq);
  r.tk = static_cast<int>(Tk);
  r.dModel = static_cast<int>(d);
  r.dk = static_cast<int>(dk);
  for (StageId id : kPerHeadStages) {
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
        const std::int64_t flat = (hh * Tq + t) * dk + c;  // offset in batch item 0's (T, d_model) block
        FeatureSource src{static_cast<int>(flat / d), static_cast<int>(flat % d)};
        r.skippedSources[idx(flat)] = src;
        if (src.token != t) ++r.skippedWrongToken;
      }
  return r;
}

const char* headSplitReasonText() {
  return "Why d_k = d_model / h: h heads of d_k columns cost exactly the parameters and FLOPs of one "
         "full-width head, yet give h attention patterns instead of one. Each head's score table is a product "
         "of (T_q, d_k) and (d_k, T_k), so its rank is at most d_k. Nothing in the layer forces heads to "
         "differ: which roles they take is learned, differs between training runs, and many trained heads turn "
         "out redundant (Michel et al. 2019 pruned most heads of trained models with little loss).";
}

std::string headCircuitsText(int dModel, int heads, bool hasBias) {
  const int dk = dModel / std::max(1, heads);
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
