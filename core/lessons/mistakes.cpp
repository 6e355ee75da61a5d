// The library of mistakes: each one's stage computed as the mistaken code computes it, and the
// output of the pipeline continued correctly from it (the plain PyTorch way, below).
#include "lessons/mistakes.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <stdexcept>

#include "attention/engine.hpp"
#include "lessons/common.hpp"

namespace mhascope {

using namespace lesson_detail;  // NOLINT(google-build-using-namespace): the lessons' shared helpers

const std::vector<MistakeInfo>& allMistakes() {
  static const std::vector<MistakeInfo> kAll = {
      {Mistake::ScaleBySqrtDModel, "scale_by_sqrt_d_model", "Scaled by \xe2\x88\x9a" "d_model", StageId::ScaledScores, true},
      {Mistake::NoScaling, "no_scaling", "No scaling", StageId::ScaledScores, true},
      {Mistake::ScaleByDk, "scale_by_d_k", "Scaled by d_k, not \xe2\x88\x9a" "d_k", StageId::ScaledScores, true},
      {Mistake::SplitWithoutTranspose, "split_without_transpose", "Split without the transpose", StageId::QHeads, true},
      {Mistake::ViewOnTransposed, "view_on_transposed", ".view on a transposed tensor", StageId::Concat, false},
      {Mistake::MaskIgnored, "mask_ignored", "The mask is never applied", StageId::MaskedScores, true},
      {Mistake::MaskInverted, "mask_inverted", "Mask polarity inverted (True = keep)", StageId::MaskedScores, true},
      {Mistake::MaskedWithZero, "masked_with_zero", "Blocked scores set to 0, not \xe2\x88\x92inf", StageId::MaskedScores, true},
      {Mistake::CausalHidesDiagonal, "causal_hides_diagonal", "The causal mask hides the diagonal", StageId::MaskedScores, true},
      {Mistake::CausalWrongDirection, "causal_wrong_direction", "The causal mask blocks the past", StageId::MaskedScores, true},
      {Mistake::MaskAfterSoftmax, "mask_after_softmax", "Mask applied after the softmax", StageId::Weights, true},
      {Mistake::SoftmaxOverQueries, "softmax_over_queries", "Softmax over the query axis", StageId::Weights, true},
      {Mistake::NoMaxSubtraction, "no_max_subtraction", "Softmax without the max subtracted", StageId::Weights, true},
      {Mistake::SumHeads, "sum_heads", "Heads summed, not concatenated", StageId::Concat, true},
      {Mistake::MergeWithoutTranspose, "merge_without_transpose", "Merge without the transpose back", StageId::Concat, true},
      {Mistake::NoOutputProjection, "no_output_projection", "No output projection", StageId::Output, true},
      {Mistake::ProjectionTransposed, "projection_transposed", "Projection with W\xe1\xb5\x80", StageId::QProj, true},
      {Mistake::KvHeadsTiled, "kv_heads_tiled", "K/V heads repeated as a tile", StageId::KHeads, true},
      {Mistake::RopeInterleaved, "rope_interleaved", "RoPE on interleaved pairs", StageId::QRotated, true},
      {Mistake::RopeOnQueriesOnly, "rope_on_queries_only", "RoPE on q only", StageId::KRotated, true},
      {Mistake::CacheNotKept, "cache_not_kept", "The KV cache is not kept", StageId::Output, true},
      {Mistake::NoDivisibilityCheck, "no_divisibility_check", "d_model not divisible by h accepted", StageId::QProj, false},
  };
  return kAll;
}

const MistakeInfo& mistakeInfo(Mistake m) {
  for (const MistakeInfo& i : allMistakes())
    if (i.id == m) return i;
  throw std::logic_error("mistakeInfo: a mistake missing from allMistakes");
}

std::optional<Mistake> mistakeFromKey(std::string_view key) {
  for (const MistakeInfo& i : allMistakes())
    if (key == i.key) return i.id;
  return std::nullopt;
}

// [SECTION] the pipeline from the heads on, the plain PyTorch way

namespace {

constexpr float kMinusInf = -std::numeric_limits<float>::infinity();


}  // namespace

Tensor scoresFromHeads(const Tensor& q, const Tensor& k) {
  const auto B = q.dim(0), h = q.dim(1), Tq = q.dim(2), dk = q.dim(3), Tk = k.dim(2);
  Tensor s({B, h, Tq, Tk}, {"B", "h", "T_q", "T_k"});
  for (std::int64_t bh = 0; bh < B * h; ++bh) {
    MatrixMap(s.ptr() + bh * Tq * Tk, Tq, Tk).noalias() =
        ConstMatrixMap(q.ptr() + bh * Tq * dk, Tq, dk) * ConstMatrixMap(k.ptr() + bh * Tk * dk, Tk, dk).transpose();
  }
  return s;
}

Tensor softmaxRowsTorch(const Tensor& masked) {
  Tensor w(masked.shape, masked.axes);
  const std::int64_t n = masked.dim(masked.rank() - 1);
  for (std::int64_t row = 0; row < masked.numel(); row += n) {
    const float* in = masked.ptr() + row;
    float* out = w.ptr() + row;
    float mx = kMinusInf;
    for (std::int64_t k = 0; k < n; ++k) mx = std::max(mx, in[k]);
    if (mx == kMinusInf) {  // every key blocked: torch's softmax gives NaN (exp(-inf - -inf))
      for (std::int64_t k = 0; k < n; ++k) out[k] = std::numeric_limits<float>::quiet_NaN();
      continue;
    }
    float sum = 0;
    for (std::int64_t k = 0; k < n; ++k) sum += (out[k] = std::exp(in[k] - mx));
    for (std::int64_t k = 0; k < n; ++k) out[k] /= sum;
  }
  return w;
}

Tensor headOutputsFrom(const Tensor& weights, const Tensor& v) {
  const auto B = weights.dim(0), h = weights.dim(1), Tq = weights.dim(2), Tk = weights.dim(3), dk = v.dim(3);
  Tensor o({B, h, Tq, dk}, {"B", "h", "T_q", "d_k"});
  for (std::int64_t bh = 0; bh < B * h; ++bh) {
    MatrixMap(o.ptr() + bh * Tq * dk, Tq, dk).noalias() =
        ConstMatrixMap(weights.ptr() + bh * Tq * Tk, Tq, Tk) * ConstMatrixMap(v.ptr() + bh * Tk * dk, Tk, dk);
  }
  return o;
}

Tensor expandKvHeads(const Tensor& kv, int h, bool tiled) {
  const auto B = kv.dim(0), N = kv.dim(1), T = kv.dim(2), dk = kv.dim(3);
  Tensor out({B, h, T, dk}, {"B", "h", "T_k", "d_k"});
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t i = 0; i < h; ++i) {
      const std::int64_t src = tiled ? i % N : i / (h / N);
      std::copy_n(kv.ptr() + (b * N + src) * T * dk, T * dk, out.ptr() + (b * h + i) * T * dk);
    }
  return out;
}

// [SECTION] the mistakes

namespace {

// The correct trace's parts a continuation starts from.
struct Parts {
  const Trace& t;
  const MhaWeights& w;
  Tensor q, k, v;  // (B, h, T, d_k): after RoPE when the trace has it; K/V one per query head
};

Parts partsOf(const Trace& t) {
  if (!t.weights) throw std::logic_error("computeMistake: a trace without its weights");
  const bool rope = t.positions == AttnPositions::Rope;
  Parts p{t, *t.weights, t.tensor(rope ? StageId::QRotated : StageId::QHeads), {}, {}};
  p.k = expandKvHeads(t.tensor(rope ? StageId::KRotated : StageId::KHeads), t.heads, false);
  p.v = expandKvHeads(t.tensor(StageId::VHeads), t.heads, false);
  return p;
}

using BlockedFn = std::function<bool(int b, int q, int k)>;

Tensor maskScores(const Trace& t, Tensor scaled, const BlockedFn& blocked, float fill = kMinusInf) {
  for (int b = 0; b < t.batch; ++b)
    for (int hh = 0; hh < t.heads; ++hh)
      for (int q = 0; q < t.tq; ++q)
        for (int k = 0; k < t.tk; ++k)
          if (blocked(b, q, k)) scaled.data[((static_cast<std::size_t>(b) * t.heads + hh) * t.tq + q) * t.tk + k] = fill;
  return scaled;
}

Tensor scaledBy(Tensor s, float factor) {
  for (float& x : s.data) x *= factor;
  return s;
}

Tensor outputFromHeadOutputs(const Parts& p, const Tensor& headOut) { return outputProjection(concatHeads(headOut), p.w); }

Tensor outputFromWeightsTorch(const Parts& p, const Tensor& weights) {
  return outputFromHeadOutputs(p, headOutputsFrom(weights, p.v));
}

BlockedFn traceBlocked(const Trace& t) {
  return [&t](int b, int q, int k) { return t.isBlocked(b, q, k); };
}

// The key padding part of the trace's mask: keys blocked for every query of an item.
bool paddedKey(const Trace& t, int b, int k) {
  for (int q = 0; q < t.tq; ++q)
    if (!t.isBlocked(b, q, k)) return false;
  return t.tq > 0;
}

bool anyBlocked(const Trace& t) {
  for (std::uint8_t x : t.blocked)
    if (x) return true;
  return false;
}

// (B, T, width) → (B, n, T, width / n) by reinterpreting the memory: view(B, n, T, d_k).
Tensor viewAsHeads(const Tensor& x, std::int64_t n) {
  const auto B = x.dim(0), T = x.dim(1), width = x.dim(2);
  Tensor out({B, n, T, width / n}, {"B", "h", "T", "d_k"});
  std::copy(x.data.begin(), x.data.end(), out.data.begin());
  return out;
}

// x (B, T, d_in) times Wᵀ (W: (d_in, d_out), square).
Tensor projectTransposed(const Tensor& x, const RowMatrix& w) {
  const auto B = x.dim(0), T = x.dim(1), d = x.dim(2);
  Tensor out({B, T, static_cast<std::int64_t>(w.rows())}, x.axes);
  MatrixMap(out.ptr(), B * T, w.rows()).noalias() = ConstMatrixMap(x.ptr(), B * T, d) * w.transpose();
  return out;
}

// The heads of (B, T, N·d_k) projections, split the right way: (B, N, T, d_k).
Tensor splitRight(const Tensor& x, std::int64_t n) {
  const auto B = x.dim(0), T = x.dim(1), dk = x.dim(2) / n;
  Tensor out({B, n, T, dk}, {"B", "h", "T", "d_k"});
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t t = 0; t < T; ++t)
      for (std::int64_t i = 0; i < n; ++i)
        std::copy_n(x.ptr() + (b * T + t) * n * dk + i * dk, dk, out.ptr() + ((b * n + i) * T + t) * dk);
  return out;
}

Tensor rotated(const Trace& t, Tensor heads, RopeStyle style) {
  const auto T = heads.dim(2), dk = heads.dim(3);
  for (std::int64_t bh = 0; bh < heads.dim(0) * heads.dim(1); ++bh) {
    rotatePositions(heads.ptr() + bh * T * dk, T, dk, 0, t.ropeBase, style);
  }
  return heads;
}

// The pipeline from split heads (before RoPE) to the merged heads, the right way: q (B, h, T_q, d_k),
// k and v (B, N, T_k, d_k).
Tensor concatFromSplit(const Trace& t, Tensor q, Tensor kvK, const Tensor& kvV) {
  if (t.positions == AttnPositions::Rope) {
    q = rotated(t, std::move(q), t.ropeStyle);
    kvK = rotated(t, std::move(kvK), t.ropeStyle);
  }
  const Tensor k = expandKvHeads(kvK, t.heads, false), v = expandKvHeads(kvV, t.heads, false);
  const Tensor masked = maskScores(t, scaledBy(scoresFromHeads(q, k), t.scaleFactor), traceBlocked(t));
  return concatHeads(headOutputsFrom(softmaxRowsTorch(masked), v));
}

}  // namespace

std::optional<MistakeOutcome> computeMistake(const Trace& t, Mistake m) {
  const Parts p = partsOf(t);
  const Tensor& scores = t.tensor(StageId::Scores);
  const bool hasMask = anyBlocked(t);
  const bool rope = t.positions == AttnPositions::Rope;
  const int N = t.kvHeads > 0 ? t.kvHeads : t.heads;
  MistakeOutcome r;
  const auto fromWeights = [&](Tensor weights) {
    if (r.stage.data.empty()) r.stage = weights;
    r.output = outputFromWeightsTorch(p, weights);
    r.weights = std::move(weights);
    return r;
  };
  const auto fromMasked = [&](Tensor masked) {
    if (r.stage.data.empty()) r.stage = masked;
    return fromWeights(softmaxRowsTorch(masked));
  };
  const auto fromScaled = [&](Tensor scaled) {
    r.stage = scaled;
    return fromMasked(maskScores(t, std::move(scaled), traceBlocked(t)));
  };
  const Tensor scaled = scaledBy(scores, t.scaleFactor);
  switch (m) {
    case Mistake::ScaleBySqrtDModel:
      if (t.heads == 1) return std::nullopt;  // d_k = d_model: the same number
      return fromScaled(scaledBy(scores, 1.0f / std::sqrt(static_cast<float>(t.dModel))));
    case Mistake::NoScaling: return fromScaled(scores);
    case Mistake::ScaleByDk:
      if (t.dk == 1) return std::nullopt;
      return fromScaled(scaledBy(scores, 1.0f / static_cast<float>(t.dk)));
    case Mistake::SplitWithoutTranspose: {
      if (t.heads == 1 || t.tq == 1) return std::nullopt;  // the view and the split agree
      Tensor q = viewAsHeads(t.tensor(StageId::QProj), t.heads);
      r.stage = q;
      r.output = outputProjection(
          concatFromSplit(t, std::move(q), viewAsHeads(t.tensor(StageId::KProj), N), viewAsHeads(t.tensor(StageId::VProj), N)),
          p.w);
      return r;
    }
    case Mistake::MaskIgnored:
      if (!hasMask) return std::nullopt;
      return fromMasked(scaled);
    case Mistake::MaskInverted:
      if (!hasMask) return std::nullopt;
      return fromMasked(maskScores(t, scaled, [&t](int b, int q, int k) { return !t.isBlocked(b, q, k); }));
    case Mistake::MaskedWithZero:
      if (!hasMask) return std::nullopt;
      return fromMasked(maskScores(t, scaled, traceBlocked(t), 0.0f));
    case Mistake::CausalHidesDiagonal:
    case Mistake::CausalWrongDirection: {
      if (!t.causal) return std::nullopt;
      const bool diagonal = m == Mistake::CausalHidesDiagonal;
      const auto wrong = [diagonal](int q, int k) { return diagonal ? k >= q : k < q; };
      Tensor blocked({t.tq, t.tk}, {"T_q", "T_k"}), kept({t.tq, t.tk}, {"T_q", "T_k"});
      for (int q = 0; q < t.tq; ++q)
        for (int k = 0; k < t.tk; ++k) {
          blocked.data[static_cast<std::size_t>(q * t.tk + k)] = wrong(q, k) ? 1.0f : 0.0f;
          kept.data[static_cast<std::size_t>(q * t.tk + k)] = wrong(q, k) ? 0.0f : 1.0f;
        }
      r.earlier = {std::move(blocked), std::move(kept)};
      return fromMasked(maskScores(t, scaled, [&t, wrong](int b, int q, int k) { return wrong(q, k) || paddedKey(t, b, k); }));
    }
    case Mistake::MaskAfterSoftmax: {
      if (!hasMask) return std::nullopt;
      Tensor w = softmaxRowsTorch(scaled);
      return fromWeights(maskScores(t, std::move(w), traceBlocked(t), 0.0f));
    }
    case Mistake::SoftmaxOverQueries: {
      const Tensor masked = maskScores(t, scaled, traceBlocked(t));
      Tensor w(masked.shape, masked.axes);
      const auto Tq = t.tq, Tk = t.tk;
      for (std::int64_t bh = 0; bh < static_cast<std::int64_t>(t.batch) * t.heads; ++bh) {
        Tensor column({Tq}, {"T_q"}), out;
        for (std::int64_t k = 0; k < Tk; ++k) {
          for (std::int64_t q = 0; q < Tq; ++q) column.data[static_cast<std::size_t>(q)] = masked.data[static_cast<std::size_t>((bh * Tq + q) * Tk + k)];
          out = softmaxRowsTorch(column);
          for (std::int64_t q = 0; q < Tq; ++q) w.data[static_cast<std::size_t>((bh * Tq + q) * Tk + k)] = out.data[static_cast<std::size_t>(q)];
        }
      }
      return fromWeights(std::move(w));
    }
    case Mistake::NoMaxSubtraction: {
      // What a naive float implementation does: exp(s) / sum exp(s). exp(s) overflows to inf past
      // s ≈ 88.7, and inf / inf is NaN.
      Tensor w = maskScores(t, scaled, traceBlocked(t));
      for (float& x : w.data) x = std::exp(x);
      r.earlier = {w};
      bool overflows = false;
      for (std::size_t row = 0; row < w.data.size(); row += static_cast<std::size_t>(t.tk)) {
        float sum = 0;
        for (int k = 0; k < t.tk; ++k) sum += w.data[row + static_cast<std::size_t>(k)];
        for (int k = 0; k < t.tk; ++k) w.data[row + static_cast<std::size_t>(k)] /= sum;
        overflows = overflows || !std::isfinite(sum);
      }
      if (!overflows) return std::nullopt;  // at these scores the naive softmax is right
      return fromWeights(std::move(w));
    }
    case Mistake::SumHeads: {
      if (t.heads == 1) return std::nullopt;
      // Σ_i O_i (B, T_q, d_k); to reach d_model it can only pass through Σ_i of W_o's row blocks.
      const Tensor& ho = t.tensor(StageId::HeadOutputs);
      const auto B = t.batch, h = t.heads, Tq = t.tq, dk = t.dk;
      Tensor sum({B, Tq, dk}, {"B", "T_q", "d_k"});
      for (std::int64_t b = 0; b < B; ++b)
        for (std::int64_t i = 0; i < h; ++i)
          MatrixMap(sum.ptr() + b * Tq * dk, Tq, dk) += ConstMatrixMap(ho.ptr() + (b * h + i) * Tq * dk, Tq, dk);
      RowMatrix woSum = RowMatrix::Zero(dk, t.dModel);
      for (int i = 0; i < h; ++i) woSum += p.w.wo.middleRows(static_cast<Eigen::Index>(i) * dk, dk);
      r.output = Tensor({B, Tq, t.dModel}, {"B", "T_q", "d_model"});
      MatrixMap o(r.output.ptr(), B * Tq, t.dModel);
      o.noalias() = ConstMatrixMap(sum.ptr(), B * Tq, dk) * woSum;
      o.rowwise() += p.w.bo;
      r.stage = std::move(sum);
      return r;
    }
    case Mistake::MergeWithoutTranspose: {
      if (t.heads == 1 || t.tq == 1) return std::nullopt;
      const Tensor& ho = t.tensor(StageId::HeadOutputs);
      Tensor merged({t.batch, t.tq, t.dModel}, {"B", "T_q", "d_model"});
      std::copy(ho.data.begin(), ho.data.end(), merged.data.begin());
      r.output = outputProjection(merged, p.w);
      r.stage = std::move(merged);
      return r;
    }
    case Mistake::NoOutputProjection:
      r.stage = t.tensor(StageId::Concat);
      r.output = r.stage;
      return r;
    case Mistake::ProjectionTransposed: {
      if (p.w.wk.cols() != p.w.wk.rows()) return std::nullopt;  // Wᵀ does not fit: an error, not a tensor
      // Every projection x Wᵀ, W_o's too; the rest right.
      r.stage = projectTransposed(t.tensor(StageId::Query), p.w.wq);
      const Tensor kp = projectTransposed(t.tensor(StageId::Key), p.w.wk);
      const Tensor vp = projectTransposed(t.tensor(StageId::Value), p.w.wv);
      r.output = projectTransposed(concatFromSplit(t, splitRight(r.stage, t.heads), splitRight(kp, N), splitRight(vp, N)),
                                   p.w.wo);
      for (std::int64_t row = 0; row < r.output.dim(0) * r.output.dim(1); ++row)
        MatrixMap(r.output.ptr() + row * t.dModel, 1, t.dModel) += p.w.bo;
      return r;
    }
    case Mistake::KvHeadsTiled: {
      if (N == t.heads || N == 1) return std::nullopt;  // tile and interleave agree
      const Tensor k = expandKvHeads(t.tensor(rope ? StageId::KRotated : StageId::KHeads), t.heads, true);
      const Tensor v = expandKvHeads(t.tensor(StageId::VHeads), t.heads, true);
      const Tensor masked = maskScores(t, scaledBy(scoresFromHeads(p.q, k), t.scaleFactor), traceBlocked(t));
      r.stage = k;
      r.output = outputFromHeadOutputs(p, headOutputsFrom(softmaxRowsTorch(masked), v));
      return r;
    }
    case Mistake::RopeInterleaved: {
      if (!rope || t.ropeStyle != RopeStyle::Half) return std::nullopt;
      Tensor q = rotated(t, t.tensor(StageId::QHeads), RopeStyle::Interleaved);
      const Tensor k = expandKvHeads(rotated(t, t.tensor(StageId::KHeads), RopeStyle::Interleaved), t.heads, false);
      const Tensor masked = maskScores(t, scaledBy(scoresFromHeads(q, k), t.scaleFactor), traceBlocked(t));
      r.output = outputFromHeadOutputs(p, headOutputsFrom(softmaxRowsTorch(masked), p.v));
      // The even features of q, taken first: (B, h, T_q, d_k/2).
      const Tensor& qh = t.tensor(StageId::QHeads);
      Tensor even({qh.dim(0), qh.dim(1), qh.dim(2), qh.dim(3) / 2}, qh.axes);
      for (std::int64_t row = 0; row < qh.dim(0) * qh.dim(1) * qh.dim(2); ++row)
        for (std::int64_t i = 0; i < qh.dim(3) / 2; ++i) even.data[static_cast<std::size_t>(row * (qh.dim(3) / 2) + i)] = qh.data[static_cast<std::size_t>(row * qh.dim(3) + 2 * i)];
      r.earlier = {std::move(even)};
      r.stage = std::move(q);
      return r;
    }
    case Mistake::RopeOnQueriesOnly: {
      if (!rope) return std::nullopt;
      r.stage = t.tensor(StageId::KHeads);
      const Tensor k = expandKvHeads(r.stage, t.heads, false);
      const Tensor masked = maskScores(t, scaledBy(scoresFromHeads(p.q, k), t.scaleFactor), traceBlocked(t));
      r.output = outputFromHeadOutputs(p, headOutputsFrom(softmaxRowsTorch(masked), p.v));
      return r;
    }
    case Mistake::CacheNotKept: {
      if (!t.causal) return std::nullopt;
      // One key, its own: weight 1, so each head's output is its own token's value.
      r.output = outputFromHeadOutputs(p, p.v);
      r.stage = r.output;
      return r;
    }
    case Mistake::ViewOnTransposed:
    case Mistake::NoDivisibilityCheck: return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace mhascope
