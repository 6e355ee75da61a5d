// Backward of multi-head self-attention from the recorded stages, in reverse pipeline order:
// output projection → merge heads → A V → softmax → (ALiBi's bias) → scale → Q K^T → (RoPE) →
// (K/V groups) → split heads → projections.
#include "train/mha_backward.hpp"

#include <algorithm>

#include "attention/engine_record.hpp"  // ropeTable, rotateRows: the engine's own RoPE
#include "kernels/gemm.hpp"

namespace mhascope::train {

MhaWeights mhaWeightsFromPacked(const RowMatrix& inW, const RowMatrix& inB, const RowMatrix& outW,
                                const RowMatrix& outB) {
  const Eigen::Index d = outW.rows(), kvw = (inW.rows() - d) / 2;  // kvw = N·d_k (= d when N = h)
  MhaWeights w;
  w.dModel = static_cast<int>(d);
  w.hasBias = true;
  // PyTorch: q = x Wq^T + bq with Wq = in_proj_weight[0:d]; the engine's layout is x W.
  w.wq = inW.middleRows(0, d).transpose();
  w.wk = inW.middleRows(d, kvw).transpose();
  w.wv = inW.middleRows(d + kvw, kvw).transpose();
  w.wo = outW.transpose();
  w.bq = inB.block(0, 0, 1, d);
  w.bk = inB.block(0, d, 1, kvw);
  w.bv = inB.block(0, d + kvw, 1, kvw);
  w.bo = outB.row(0);
  return w;
}

namespace {

// RoPE's backward: the rotation is orthogonal, so the gradient of the unrotated rows is the
// gradient of the rotated ones turned back by the same angle (sin negated: R(-θ) = R(θ)^T). The
// rows of one head sit in a wider matrix (row stride ld); each goes through the engine's
// rotateRows in a (T, d_k) buffer.
void unrotateColumns(float* g /*(T, d_k) at row stride ld*/, Eigen::Index T, Eigen::Index dk, Eigen::Index ld,
                     const RopeTable& inverse, RopeStyle style, std::vector<float>& buffer) {
  buffer.resize(static_cast<std::size_t>(T * dk));
  for (Eigen::Index r = 0; r < T; ++r) std::copy_n(g + r * ld, dk, buffer.data() + r * dk);
  rotateRows(buffer.data(), T, dk, inverse, style);
  for (Eigen::Index r = 0; r < T; ++r) std::copy_n(buffer.data() + r * dk, dk, g + r * ld);
}

}  // namespace

void mhaBackward(const Trace& t, const RowMatrix& inW, const RowMatrix& outW, const RowMatrix& dOut, RowMatrix& dX,
                 RowMatrix& dInW, RowMatrix& dInB, RowMatrix& dOutW, RowMatrix& dOutB, Workspace* work) {
  Workspace local;
  Workspace& ws = work ? *work : local;
  const Eigen::Index B = t.batch, T = t.tq, d = t.dModel, h = t.heads, dk = t.dk, rows = B * T;
  const Eigen::Index N = t.kvHeads > 0 ? t.kvHeads : h, group = h / N, kvw = N * dk;
  const bool rope = t.positions == AttnPositions::Rope;
  const ConstMatrixMap x(t.tensor(StageId::Query).ptr(), rows, d);
  const ConstMatrixMap concat(t.tensor(StageId::Concat).ptr(), rows, d);

  // Output projection y = concat Wo^T + bo. Every product is one call of the engine's GEMM.
  sgemm(true, false, d, d, rows, dOut.data(), d, concat.data(), d, 1.0f, dOutW.data(), d);  // dWo += dOut^T concat
  dOutB.row(0) += dOut.colwise().sum();
  RowMatrix& dConcat = ws.dConcat;
  dConcat.resize(rows, d);
  sgemm(false, false, rows, d, d, dOut.data(), d, outW.data(), d, 0.0f, dConcat.data(), d);  // dOut Wo

  // dQ, dK, dV side by side in one (rows, d + 2 N d_k) matrix: columns [0, d) are dQ, then dK
  // (N d_k), then dV (N d_k), the row order of in_proj_weight, so the projections' backward is one
  // GEMM each.
  RowMatrix &dQKV = ws.dQKV, &dA = ws.dScoresA, &dS = ws.dScores;
  const Eigen::Index ld = d + 2 * kvw;
  dQKV.resize(rows, ld);
  dA.resize(T, T);
  dS.resize(T, T);
  // The scores read the rotated q and k under RoPE: their gradients are those of the rotated rows.
  const float* qH = t.tensor(rope ? StageId::QRotated : StageId::QHeads).ptr();
  const float* kH = t.tensor(rope ? StageId::KRotated : StageId::KHeads).ptr();
  const float* vH = t.tensor(StageId::VHeads).ptr();
  const float* wts = t.tensor(StageId::Weights).ptr();
  for (Eigen::Index b = 0; b < B; ++b) {
    for (Eigen::Index i = 0; i < h; ++i) {
      const Eigen::Index bh = b * h + i, kv = i / group, bkv = b * N + kv;  // query head i reads K/V head i / (h/N)
      const float *q = qH + bh * T * dk, *k = kH + bkv * T * dk, *v = vH + bkv * T * dk;
      const ConstMatrixMap a(wts + bh * T * T, T, T);
      // Merge heads: head i's output is columns i*dk .. (i+1)*dk - 1 of concat.
      const float* dO = dConcat.data() + b * T * d + i * dk;  // (T_q, d_k), row stride d
      float* dQ = dQKV.data() + b * T * ld + i * dk;          // (T, d_k) blocks, row stride ld
      float* dK = dQKV.data() + b * T * ld + d + kv * dk;
      float* dV = dK + kvw;
      // A shared K/V head's gradient is the sum over the query heads of its group: the first one
      // writes it, the others add.
      const float accumulate = i % group == 0 ? 0.0f : 1.0f;
      // O = A V: dA = dO V^T, dV = A^T dO.
      sgemm(false, true, T, T, dk, dO, d, v, dk, 0.0f, dA.data(), T);
      sgemm(true, false, T, dk, T, a.data(), T, dO, d, accumulate, dV, ld);
      // Softmax per row: dS = A * (dA - sum_k dA*A); then the scale factor. ALiBi's bias is a
      // constant added after the scale: it passes the gradient through unchanged.
      const Eigen::VectorXf rowDot = (dA.cwiseProduct(a)).rowwise().sum();
      dS = (a.array() * (dA.colwise() - rowDot).array()) * t.scaleFactor;
      // S = Q K^T: dQ = dS K, dK = dS^T Q.
      sgemm(false, false, T, dk, T, dS.data(), T, k, dk, 0.0f, dQ, ld);
      sgemm(true, false, T, dk, T, dS.data(), T, q, dk, accumulate, dK, ld);
    }
  }
  if (rope) {
    RopeTable inverse = ropeTable(T, dk, 0, t.ropeBase);  // the forward's angles, bit for bit
    for (float& s : inverse.sin) s = -s;
    std::vector<float> buffer;
    for (Eigen::Index b = 0; b < B; ++b) {
      float* base = dQKV.data() + b * T * ld;
      for (Eigen::Index i = 0; i < h; ++i) unrotateColumns(base + i * dk, T, dk, ld, inverse, t.ropeStyle, buffer);
      for (Eigen::Index j = 0; j < N; ++j) unrotateColumns(base + d + j * dk, T, dk, ld, inverse, t.ropeStyle, buffer);
    }
  }
  // Projections q = x Wq^T + bq (and k, v): in_proj_weight rows [Wq; Wk; Wv].
  sgemm(true, false, ld, d, rows, dQKV.data(), ld, x.data(), d, 1.0f, dInW.data(), d);  // dW += dQKV^T x
  dInB.row(0) += dQKV.colwise().sum();
  dX.resize(rows, d);
  sgemm(false, false, rows, d, ld, dQKV.data(), ld, inW.data(), d, 0.0f, dX.data(), d);  // dQKV W
}

}  // namespace mhascope::train
