// Multi-head latent attention, expanded and absorbed (latent.hpp). The scale, the causal mask and the
// softmax are the engine's row kernels, so a row here is made by the same rules as the forward's.
#include "attention/latent.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "attention/engine.hpp"
#include "attention/engine_record.hpp"
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
               {"q_lora_rank r_q", s.qRank > 0 ? s.qRank : 1},
               {"qk_rope_head_dim d_r", s.ropeDim}, {"qk_nope_head_dim d_n", s.nopeDim}, {"v_head_dim d_v", s.valueDim}};
  for (const auto& z : sizes) {
    if (z.v < 1 || z.v > (1 << 16)) return makeError(std::string(z.name) + " must be from 1 to 65536, got " + std::to_string(z.v));
  }
  if (s.ropeDim % 2 != 0) {
    return makeError("RoPE turns pairs of features, so qk_rope_head_dim d_r must be even, got " + std::to_string(s.ropeDim));
  }
  if (tokens < 1) return makeError("latent attention needs at least one token, got " + std::to_string(tokens));
  if (!s.ropeInvFreq.empty() && s.ropeInvFreq.size() != static_cast<std::size_t>(s.ropeDim / 2)) {
    return makeError("RoPE's given frequencies must be d_r / 2 = " + std::to_string(s.ropeDim / 2) + ", got " +
                     std::to_string(s.ropeInvFreq.size()));
  }
  const Eigen::Index d = s.dModel, h = s.heads, r = s.kvRank, dr = s.ropeDim, dn = s.nopeDim, dv = s.valueDim, rq = s.qRank;
  const struct {
    const char* name;
    const RowMatrix& m;
    Eigen::Index rows, cols;
  } mats[] = {{rq > 0 ? "q_a_proj" : "q_proj", rq > 0 ? w.wqa : w.wq, d, rq > 0 ? rq : h * (dn + dr)},
              {"q_b_proj", rq > 0 ? w.wqb : w.wq, rq > 0 ? rq : d, h * (dn + dr)},
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
  if (rq > 0 && w.qNorm.size() != rq) {
    return makeError("q_a_layernorm must have r_q = " + std::to_string(rq) + " entries, got " + std::to_string(w.qNorm.size()));
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
  if (s.qRank > 0) {
    fill(w.wqa, d, s.qRank);
    fill(w.wqb, s.qRank, h * (dn + dr));
    w.qNorm.resize(s.qRank);
    for (Eigen::Index i = 0; i < s.qRank; ++i) w.qNorm[i] = 1.0f + rng.uniform(-0.1f, 0.1f);
  } else {
    fill(w.wq, d, h * (dn + dr));
  }
  fill(w.wkva, d, r + dr);
  fill(w.wkvb, r, h * (dn + dv));
  fill(w.wo, h * dv, d);
  w.kvNorm.resize(r);
  for (Eigen::Index i = 0; i < r; ++i) w.kvNorm[i] = 1.0f + rng.uniform(-0.1f, 0.1f);
  return w;
}

float LatentSizes::scoreScale() const {
  return scale > 0.0f ? scale : 1.0f / std::sqrt(static_cast<float>(queryDim()));
}

namespace {
// Each row of m times RMSNorm's 1 / sqrt(mean(x²) + eps), then the gain: DeepSeek's RMSNorm in float32.
void rmsRows(RowMatrix& m, const RowVector& gain, float eps) {
  for (Eigen::Index t = 0; t < m.rows(); ++t) {
    const float ms = m.row(t).squaredNorm() / static_cast<float>(m.cols());
    m.row(t) = m.row(t).cwiseProduct(gain) / std::sqrt(ms + eps);
  }
}

// The trace's stages shaped for a latent layer of T tokens (every stage, or the weights, concat and output only),
// and its description: one batch item, h heads of d_n + d_r for q and k, the causal mask, the given scale.
void shapeLatentTrace(Trace& t, const LatentSizes& s, std::int64_t T, const LatentRecord& rec) {
  const std::int64_t h = s.heads, dq = s.queryDim(), dv = s.valueDim, d = s.dModel;
  t.stages.resize(kStageCount);
  for (int i = 0; i < kStageCount; ++i) {
    t.stages[static_cast<std::size_t>(i)].id = static_cast<StageId>(i);
    shapeStage(t.stages[static_cast<std::size_t>(i)].tensor, {0}, {});
  }
  auto S = [&t](StageId id) -> Tensor& { return t.stages[static_cast<std::size_t>(id)].tensor; };
  const bool all = rec.everyStage;
  shapeStage(S(StageId::Query), {1, T, d}, {"B", "T_q", "d_model"});
  if (all) {
    shapeStage(S(StageId::Key), {1, T, d}, {"B", "T_k", "d_model"});
    shapeStage(S(StageId::Value), {1, T, d}, {"B", "T_k", "d_model"});
    shapeStage(S(StageId::QProj), {1, T, h * dq}, {"B", "T_q", "h·d_k"});
    shapeStage(S(StageId::KProj), {1, T, h * dq}, {"B", "T_k", "h·d_k"});
    shapeStage(S(StageId::VProj), {1, T, h * dv}, {"B", "T_k", "h·d_v"});
    shapeStage(S(StageId::QHeads), {1, h, T, dq}, {"B", "h", "T_q", "d_k"});
    shapeStage(S(StageId::KHeads), {1, h, T, dq}, {"B", "h", "T_k", "d_k"});
    shapeStage(S(StageId::VHeads), {1, h, T, dv}, {"B", "h", "T_k", "d_v"});
    shapeStage(S(StageId::QRotated), {1, h, T, dq}, {"B", "h", "T_q", "d_k"});
    shapeStage(S(StageId::KRotated), {1, h, T, dq}, {"B", "h", "T_k", "d_k"});
    shapeStage(S(StageId::Scores), {1, h, T, T}, {"B", "h", "T_q", "T_k"});
    for (StageId id : {StageId::ScaledScores, StageId::MaskedScores}) {  // derived from the scores when read
      FloatBuffer().swap(S(id).data);
      S(id).shape = {1, h, T, T};
      S(id).axes = {"B", "h", "T_q", "T_k"};
    }
    shapeStage(S(StageId::HeadOutputs), {1, h, T, dv}, {"B", "h", "T_q", "d_v"});
  }
  shapeStage(S(StageId::Weights), {1, h, T, T}, {"B", "h", "T_q", "T_k"});
  shapeStage(S(StageId::Concat), {1, T, h * dv}, {"B", "T_q", "h·d_v"});
  shapeStage(S(StageId::Output), {1, T, d}, {"B", "T_q", "d_model"});
  t.batch = 1;
  t.tq = t.tk = static_cast<int>(T);
  t.dModel = s.dModel;
  t.heads = s.heads;
  t.dk = s.queryDim();
  t.selfAttention = true;
  t.causal = true;
  t.keyPadding = t.attnMask = false;
  t.scale = ScaleKind::Given;
  t.scaleFactor = s.scoreScale();
  t.softcap = 0.0f;
  t.kvHeads = s.heads;
  t.positions = AttnPositions::Rope;
  t.ropeStyle = s.ropeStyle;
  t.ropeBase = s.ropeBase;
  t.window = t.sinks = 0;
  t.sinkLogits.clear();
  t.layer = rec.layer;
  t.latentRank = s.kvRank;
  t.latentRopeDim = s.ropeDim;
  t.weights = nullptr;
  t.hasBias = false;
  std::vector<std::string> labels = rec.tokens;
  if (labels.empty()) {
    for (std::int64_t i = 0; i < T; ++i) labels.push_back("t" + std::to_string(i));
  }
  t.queryTokens = {labels};
  t.keyTokens = {labels};
  AttentionOptions causal;
  causal.heads = s.heads;
  causal.causal = true;
  std::vector<std::uint8_t> rowAny;
  buildBlocked(causal, 1, T, T, t.blocked, rowAny);
  t.fullyMasked.assign(static_cast<std::size_t>(T), 0);  // the causal mask leaves every row its own key
}

// Rows r of a (T, n) matrix's columns [at, at + w) into a (h, T, w) stage's head i.
void intoHead(const RowMatrix& m, Eigen::Index at, Eigen::Index w, Tensor& stage, Eigen::Index i) {
  const Eigen::Index T = m.rows();
  MatrixMap(stage.ptr() + i * T * w, T, w) = m.middleCols(at, w);
}
}  // namespace

Result<LatentResult> latentAttention(const RowMatrix& x, const LatentWeights& w, const LatentSizes& s,
                                     const LatentRecord& rec) {
  const std::int64_t T = x.rows();
  if (x.cols() != s.dModel) {
    return makeError("the input has " + std::to_string(x.cols()) + " features, the sizes say d_model = " +
                     std::to_string(s.dModel));
  }
  if (auto st = validateLatent(s, w, T); !st) return st.error();
  const Eigen::Index h = s.heads, r = s.kvRank, dr = s.ropeDim, dn = s.nopeDim, dv = s.valueDim, dq = dn + dr;
  const float factor = s.scoreScale();
  // Turns the rotary part of rows (T, d_r) by their positions, as the sizes say.
  const auto turn = [&s](RowMatrix& m) {
    rotatePositions(m.data(), m.rows(), m.cols(), 0, s.ropeBase, s.ropeStyle, s.ropeInvFreq, s.ropeGain);
  };
  LatentResult out;
  try {
    RowMatrix q;                           // (T, h (d_n + d_r))
    if (s.qRank > 0) {
      RowMatrix qa = x * w.wqa;            // (T, r_q): the query's own latent, normed
      rmsRows(qa, w.qNorm, s.normEps);
      q.noalias() = qa * w.wqb;
    } else {
      q.noalias() = x * w.wq;
    }
    const RowMatrix kva = x * w.wkva;      // (T, r + d_r)
    RowMatrix c = kva.leftCols(r);         // the latent, then its RMSNorm
    rmsRows(c, w.kvNorm, s.normEps);
    RowMatrix kRope = kva.rightCols(dr);   // (T, d_r), one for every head
    turn(kRope);
    const RowMatrix kvb = c * w.wkvb;      // (T, h (d_n + d_v)): expanded keys and values

    Trace* tr = rec.trace;
    const bool all = tr && rec.everyStage;
    if (tr) shapeLatentTrace(*tr, s, T, rec);
    auto S = [tr](StageId id) -> Tensor& { return tr->tensor(id); };
    if (all) {
      for (StageId id : {StageId::Query, StageId::Key, StageId::Value}) MatrixMap(S(id).ptr(), T, s.dModel) = x;
      MatrixMap(S(StageId::QProj).ptr(), T, h * dq) = q;
    } else if (tr) {
      MatrixMap(S(StageId::Query).ptr(), T, s.dModel) = x;
    }

    out.latent = Tensor({T, r}, {"T", "r"});
    MatrixMap(out.latent.ptr(), T, r) = c;
    out.kRope = Tensor({T, dr}, {"T", "d_r"});
    MatrixMap(out.kRope.ptr(), T, dr) = kRope;
    if (!tr) out.weights = Tensor({h, T, T}, {"h", "T_q", "T_k"});
    out.weightsAbsorbed = Tensor({h, T, T}, {"h", "T_q", "T_k"});
    float* weights = tr ? S(StageId::Weights).ptr() : out.weights.ptr();
    RowMatrix heads(T, h * dv), headsAbsorbed(T, h * dv);
    RowMatrix scores(T, T);
    for (Eigen::Index i = 0; i < h; ++i) {
      const Eigen::Index qAt = i * dq, kvAt = i * (dn + dv);
      const RowMatrix qNope = q.middleCols(qAt, dn);
      RowMatrix qRope = q.middleCols(qAt + dn, dr);
      turn(qRope);
      const RowMatrix ropePart = qRope * kRope.transpose();  // (T, T): the positions' part, shared by both forms
      // Expanded: k_nope and v made for every token.
      scores.noalias() = qNope * kvb.middleCols(kvAt, dn).transpose() + ropePart;
      if (all) {
        float* stage = S(StageId::Scores).ptr() + i * T * T;  // Q K^T before the scale, as the engine records it
        std::copy(scores.data(), scores.data() + T * T, stage);
        RowMatrix k(T, dq), kTurned(T, dq);  // head i's key [k_nope_i | k_r] before and after the turn
        k << kvb.middleCols(kvAt, dn), kva.rightCols(dr);
        kTurned << kvb.middleCols(kvAt, dn), kRope;
        RowMatrix qTurned(T, dq);
        qTurned << qNope, qRope;
        intoHead(q, qAt, dq, S(StageId::QHeads), i);
        intoHead(qTurned, 0, dq, S(StageId::QRotated), i);
        intoHead(k, 0, dq, S(StageId::KHeads), i);
        intoHead(kTurned, 0, dq, S(StageId::KRotated), i);
        intoHead(kvb, kvAt + dn, dv, S(StageId::VHeads), i);
        MatrixMap(S(StageId::KProj).ptr(), T, h * dq).middleCols(i * dq, dq) = k;
        MatrixMap(S(StageId::VProj).ptr(), T, h * dv).middleCols(i * dv, dv) = kvb.middleCols(kvAt + dn, dv);
      }
      float* a = weights + i * T * T;
      for (std::int64_t t = 0; t < T; ++t) causalSoftmaxRow(scores.data() + t * T, t, T, factor, a + t * T);
      heads.middleCols(i * dv, dv).noalias() = ConstMatrixMap(a, T, T) * kvb.middleCols(kvAt + dn, dv);
      if (all) intoHead(heads, i * dv, dv, S(StageId::HeadOutputs), i);
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
    if (tr) {
      MatrixMap(S(StageId::Concat).ptr(), T, h * dv) = heads;
      std::copy(out.output.data.begin(), out.output.data.end(), S(StageId::Output).data.begin());
      out.maxWeightDiff = 0;
      for (std::size_t i = 0; i < out.weightsAbsorbed.data.size(); ++i) {
        out.maxWeightDiff = std::max(out.maxWeightDiff, std::abs(double(weights[i]) - double(out.weightsAbsorbed.data[i])));
      }
      ++tr->generation;
    } else {
      out.maxWeightDiff = maxDiff(out.weights, out.weightsAbsorbed);
    }
  } catch (const std::bad_alloc&) {
    return makeError("out of memory while computing latent attention");
  }
  out.maxOutputDiff = maxDiff(out.output, out.outputAbsorbed);
  return out;
}

}  // namespace mhascope
