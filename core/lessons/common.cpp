// The lesson files' shared helpers (see common.hpp).
#include "lessons/common.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace mhascope::lesson_detail {

// Max |a - b| over n values; equal infinities (a masked -inf on both sides) count as 0, a NaN or
// an infinity on one side only as +inf.
double maxAbsDiff(const float* a, const float* b, std::size_t n) {
  double m = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (a[i] == b[i]) continue;
    const double d = std::abs(static_cast<double>(a[i]) - static_cast<double>(b[i]));
    m = std::max(m, std::isfinite(d) ? d : std::numeric_limits<double>::infinity());
  }
  return m;
}

// Max |a - b| over the cells where both are finite (the pitfall lab reports NaN/Inf separately).
// Largest |a - b|; a cell that is finite in the reference but NaN/inf in the other counts as an
// infinite difference, so a pipeline that lost rows never looks "almost right".
double maxFiniteAbsDiff(const Tensor& a, const Tensor& b) {
  double m = 0;
  for (std::size_t i = 0; i < a.data.size() && i < b.data.size(); ++i) {
    const bool fa = std::isfinite(a.data[i]), fb = std::isfinite(b.data[i]);
    if (fa && fb) {
      m = std::max(m, std::abs(static_cast<double>(a.data[i]) - static_cast<double>(b.data[i])));
    } else if (fa != fb) {
      return std::numeric_limits<double>::infinity();
    }
  }
  return m;
}

// Softmax of one row with the max subtracted (exp never overflows); a fully blocked row (all
// -inf) gets weights 0 rather than 0/0.
void stableSoftmax(const float* logits, float* out, std::int64_t n, std::int64_t stride) {
  float m = kNegInf;
  for (std::int64_t i = 0; i < n; ++i) m = std::max(m, logits[i * stride]);
  if (m == kNegInf) {
    for (std::int64_t i = 0; i < n; ++i) out[i * stride] = 0.0f;
    return;
  }
  float sum = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const float e = logits[i * stride] == kNegInf ? 0.0f : std::exp(logits[i * stride] - m);
    out[i * stride] = e;
    sum += e;
  }
  for (std::int64_t i = 0; i < n; ++i) out[i * stride] /= sum;
}

// out = concat W_o + b_o: (B, T_q, d_model).
Tensor outputProjection(const Tensor& concat /*(B, T_q, h·d_k)*/, const MhaWeights& w) {
  Tensor out({concat.dim(0), concat.dim(1), w.wo.cols()}, {"B", "T_q", "d_model"});
  const auto rows = concat.dim(0) * concat.dim(1), hq = concat.dim(2);
  MatrixMap o(out.ptr(), rows, w.wo.cols());
  o.noalias() = ConstMatrixMap(concat.ptr(), rows, hq) * w.wo;
  o.rowwise() += w.bo;
  return out;
}

// (B, h, T_q, d_k) → (B, T_q, h·d_k), head i in columns i*d_k .. (i+1)*d_k - 1 (the right merge).
Tensor concatHeads(const Tensor& headOut) {
  const auto B = headOut.dim(0), h = headOut.dim(1), T = headOut.dim(2), dk = headOut.dim(3);
  Tensor c({B, T, h * dk}, {"B", "T_q", "d_model"});
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t hh = 0; hh < h; ++hh)
      for (std::int64_t t = 0; t < T; ++t)
        for (std::int64_t j = 0; j < dk; ++j)
          c.data[idx((b * T + t) * h * dk + hh * dk + j)] = headOut.data[idx(((b * h + hh) * T + t) * dk + j)];
  return c;
}

// Everything after the weights, for a pitfall's weights: A V per head, concatenate, W_o.
Tensor outputFromWeights(const Trace& t, const Tensor& weights /*(B,h,T_q,T_k)*/, const MhaWeights& w) {
  const auto B = t.batch, h = t.heads, Tq = t.tq, Tk = t.tk, dk = t.dk;
  Tensor headOut({B, h, Tq, dk}, {"B", "h", "T_q", "d_k"});
  const Tensor& vh = t.tensor(StageId::VHeads);
  for (std::int64_t bh = 0; bh < static_cast<std::int64_t>(B) * h; ++bh) {
    MatrixMap(headOut.ptr() + bh * Tq * dk, Tq, dk).noalias() =
        ConstMatrixMap(weights.ptr() + bh * Tq * Tk, Tq, Tk) * ConstMatrixMap(vh.ptr() + bh * Tk * dk, Tk, dk);
  }
  return outputProjection(concatHeads(headOut), w);
}

std::string num(double v, int precision) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", precision, v);
  return buf;
}

std::string grouped(std::int64_t v) {
  const std::string digits = std::to_string(v);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && digits[i - 1] != '-' && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

// "the projections cost 102.4x the attention matmuls", or the other way round.
std::string costRatioPhrase(const CostCrossover& c) {
  return c.projectionsOverAttention >= 1
             ? "the projections cost " + num(c.projectionsOverAttention) + "x the attention matmuls"
             : "the attention matmuls cost " + num(1.0 / c.projectionsOverAttention) + "x the projections";
}

}  // namespace mhascope::lesson_detail
