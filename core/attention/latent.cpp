// Multi-head latent attention, expanded and absorbed (latent.hpp). The scale, the causal mask and the
// softmax are the engine's row kernels, so a row here is made by the same rules as the forward's.
#include "attention/latent.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "attention/engine.hpp"
#include "attention/random.hpp"
#include "kernels/row_kernels.hpp"

namespace mhascope {
namespace {

std::string shapeText(Eigen::Index r, Eigen::Index c) { return "(" + std::to_string(r) + ", " + std::to_string(c) + ")"; }

// One causal row t of n = T scores: scaled by `factor`, keys after t blocked, softmax into `out`.
void causalSoftmaxRow(float* scores, std::int64_t t, std::int64_t n, float factor, float* out) {
  BlockedKeys blocked;
  blocked.from = t + 1;
  const float m = scaleMaskRow(scores, factor, blocked, scores, scores, n);
  softmaxRow(scores, m, blocked, false, out, n);
}

double maxDiff(const Tensor& a, const Tensor& b) {
  double m = 0;
  for (std::size_t i = 0; i < a.data.size(); ++i) m = std::max(m, std::abs(double(a.data[i]) - double(b.data[i])));
  return m;
}

}  // namespace

Status validateLatent(const LatentSizes& s, const LatentWeights& w, std::int64_t tokens) {
  const struct {
    const char* name;
    int v;
  } sizes[] = {{"d_model", s.dModel}, {"heads h", s.heads}, {"kv_lora_rank r", s.kvRank},
               {"qk_rope_head_dim d_r", s.ropeDim}, {"qk_nope_head_dim d_n", s.nopeDim}, {"v_head_dim d_v", s.valueDim}};
  for (const auto& z : sizes) {
    if (z.v < 1 || z.v > (1 << 16)) return makeError(std::string(z.name) + " must be from 1 to 65536, got " + std::to_string(z.v));
  }
  if (s.ropeDim % 2 != 0) {
    return makeError("RoPE turns pairs of features, so qk_rope_head_dim d_r must be even, got " + std::to_string(s.ropeDim));
  }
  if (tokens < 1) return makeError("latent attention needs at least one token, got " + std::to_string(tokens));
  const Eigen::Index d = s.dModel, h = s.heads, r = s.kvRank, dr = s.ropeDim, dn = s.nopeDim, dv = s.valueDim;
  const struct {
    const char* name;
    const RowMatrix& m;
    Eigen::Index rows, cols;
  } mats[] = {{"q_proj", w.wq, d, h * (dn + dr)},
              {"kv_a_proj_with_mqa", w.wkva, d, r + dr},
              {"kv_b_proj", w.wkvb, r, h * (dn + dv)},
              {"o_proj", w.wo, h * dv, d}};
  for (const auto& m : mats) {
    if (m.m.rows() != m.rows || m.m.cols() != m.cols) {
      return makeError(std::string(m.name) + " must be (in, out) = " + shapeText(m.rows, m.cols) + ", got " +
                       shapeText(m.m.rows(), m.m.cols()));
    }
  }
  if (w.kvNorm.size() != r) {
    return makeError("kv_a_layernorm must have r = " + std::to_string(r) + " entries, got " + std::to_string(w.kvNorm.size()));
  }
  return Ok{};
}

LatentWeights randomLatentWeights(const LatentSizes& s, std::uint64_t seed) {
  SplitMix64 rng(seed ^ 0x6C6174656E74ull);  // "latent"
  auto fill = [&](RowMatrix& m, Eigen::Index rows, Eigen::Index cols) {
    m.resize(rows, cols);
    const float bound = std::sqrt(3.0f / static_cast<float>(rows));
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = rng.uniform(-bound, bound);
  };
  const Eigen::Index d = s.dModel, h = s.heads, r = s.kvRank, dr = s.ropeDim, dn = s.nopeDim, dv = s.valueDim;
  LatentWeights w;
  fill(w.wq, d, h * (dn + dr));
  fill(w.wkva, d, r + dr);
  fill(w.wkvb, r, h * (dn + dv));
  fill(w.wo, h * dv, d);
  w.kvNorm.resize(r);
  for (Eigen::Index i = 0; i < r; ++i) w.kvNorm[i] = 1.0f + rng.uniform(-0.1f, 0.1f);
  return w;
}

Result<LatentResult> latentAttention(const RowMatrix& x, const LatentWeights& w, const LatentSizes& s) {
  const std::int64_t T = x.rows();
  if (x.cols() != s.dModel) {
    return makeError("the input has " + std::to_string(x.cols()) + " features, the sizes say d_model = " +
                     std::to_string(s.dModel));
  }
  if (auto st = validateLatent(s, w, T); !st) return st.error();
  const Eigen::Index h = s.heads, r = s.kvRank, dr = s.ropeDim, dn = s.nopeDim, dv = s.valueDim;
  const float factor = 1.0f / std::sqrt(static_cast<float>(dn + dr));
  LatentResult out;
  try {
    const RowMatrix q = x * w.wq;          // (T, h (d_n + d_r))
    const RowMatrix kva = x * w.wkva;      // (T, r + d_r)
    RowMatrix c = kva.leftCols(r);         // the latent, then its RMSNorm
    for (Eigen::Index t = 0; t < T; ++t) {
      const float ms = c.row(t).squaredNorm() / static_cast<float>(r);
      c.row(t) = c.row(t).cwiseProduct(w.kvNorm) / std::sqrt(ms + s.normEps);
    }
    RowMatrix kRope = kva.rightCols(dr);   // (T, d_r), one for every head
    rotatePositions(kRope.data(), T, dr, 0, s.ropeBase, RopeStyle::Half);
    const RowMatrix kvb = c * w.wkvb;      // (T, h (d_n + d_v)): expanded keys and values

    out.latent = Tensor({T, r}, {"T", "r"});
    MatrixMap(out.latent.ptr(), T, r) = c;
    out.kRope = Tensor({T, dr}, {"T", "d_r"});
    MatrixMap(out.kRope.ptr(), T, dr) = kRope;
    out.weights = Tensor({h, T, T}, {"h", "T_q", "T_k"});
    out.weightsAbsorbed = Tensor({h, T, T}, {"h", "T_q", "T_k"});
    RowMatrix heads(T, h * dv), headsAbsorbed(T, h * dv);
    RowMatrix scores(T, T);
    for (Eigen::Index i = 0; i < h; ++i) {
      const Eigen::Index qAt = i * (dn + dr), kvAt = i * (dn + dv);
      const RowMatrix qNope = q.middleCols(qAt, dn);
      RowMatrix qRope = q.middleCols(qAt + dn, dr);
      rotatePositions(qRope.data(), T, dr, 0, s.ropeBase, RopeStyle::Half);
      const RowMatrix ropePart = qRope * kRope.transpose();  // (T, T): the positions' part, shared by both forms
      // Expanded: k_nope and v made for every token.
      scores.noalias() = qNope * kvb.middleCols(kvAt, dn).transpose() + ropePart;
      float* a = out.weights.ptr() + i * T * T;
      for (std::int64_t t = 0; t < T; ++t) causalSoftmaxRow(scores.data() + t * T, t, T, factor, a + t * T);
      heads.middleCols(i * dv, dv).noalias() = ConstMatrixMap(a, T, T) * kvb.middleCols(kvAt + dn, dv);
      // Absorbed: W_uk^i folded into the query, W_uv^i applied after the weighted sum of the latents.
      const RowMatrix qLatent = qNope * w.wkvb.middleCols(kvAt, dn).transpose();  // (T, r)
      scores.noalias() = qLatent * c.transpose() + ropePart;
      float* b = out.weightsAbsorbed.ptr() + i * T * T;
      for (std::int64_t t = 0; t < T; ++t) causalSoftmaxRow(scores.data() + t * T, t, T, factor, b + t * T);
      const RowMatrix context = ConstMatrixMap(b, T, T) * c;  // (T, r)
      headsAbsorbed.middleCols(i * dv, dv).noalias() = context * w.wkvb.middleCols(kvAt + dn, dv);
    }
    out.output = Tensor({T, static_cast<std::int64_t>(s.dModel)}, {"T", "d_model"});
    MatrixMap(out.output.ptr(), T, s.dModel) = heads * w.wo;
    out.outputAbsorbed = Tensor({T, static_cast<std::int64_t>(s.dModel)}, {"T", "d_model"});
    MatrixMap(out.outputAbsorbed.ptr(), T, s.dModel) = headsAbsorbed * w.wo;
  } catch (const std::bad_alloc&) {
    return makeError("out of memory while computing latent attention");
  }
  out.maxWeightDiff = maxDiff(out.weights, out.weightsAbsorbed);
  out.maxOutputDiff = maxDiff(out.output, out.outputAbsorbed);
  return out;
}

}  // namespace mhascope
