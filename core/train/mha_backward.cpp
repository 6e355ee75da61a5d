// Backward of multi-head self-attention from the recorded stages, in reverse pipeline order:
// output projection → merge heads → A V → softmax → scale → Q K^T → split heads → projections.
#include "train/mha_backward.hpp"

#include "kernels/gemm.hpp"

namespace mhascope::train {

MhaWeights mhaWeightsFromPacked(const RowMatrix& inW, const RowMatrix& inB, const RowMatrix& outW,
                                const RowMatrix& outB) {
  const Eigen::Index d = outW.rows();
  MhaWeights w;
  w.dModel = static_cast<int>(d);
  w.hasBias = true;
  // PyTorch: q = x Wq^T + bq with Wq = in_proj_weight[0:d]; the engine's layout is x W.
  w.wq = inW.middleRows(0, d).transpose();
  w.wk = inW.middleRows(d, d).transpose();
  w.wv = inW.middleRows(2 * d, d).transpose();
  w.wo = outW.transpose();
  w.bq = inB.block(0, 0, 1, d);
  w.bk = inB.block(0, d, 1, d);
  w.bv = inB.block(0, 2 * d, 1, d);
  w.bo = outB.row(0);
  return w;
}

void mhaBackward(const Trace& t, const RowMatrix& inW, const RowMatrix& outW, const RowMatrix& dOut, RowMatrix& dX,
                 RowMatrix& dInW, RowMatrix& dInB, RowMatrix& dOutW, RowMatrix& dOutB, Workspace* work) {
  Workspace local;
  Workspace& ws = work ? *work : local;
  const Eigen::Index B = t.batch, T = t.tq, d = t.dModel, h = t.heads, dk = t.dk, rows = B * T;
  const ConstMatrixMap x(t.tensor(StageId::Query).ptr(), rows, d);
  const ConstMatrixMap concat(t.tensor(StageId::Concat).ptr(), rows, d);

  // Output projection y = concat Wo^T + bo. Every product is one call of the engine's GEMM.
  sgemm(true, false, d, d, rows, dOut.data(), d, concat.data(), d, 1.0f, dOutW.data(), d);  // dWo += dOut^T concat
  dOutB.row(0) += dOut.colwise().sum();
  RowMatrix& dConcat = ws.dConcat;
  dConcat.resize(rows, d);
  sgemm(false, false, rows, d, d, dOut.data(), d, outW.data(), d, 0.0f, dConcat.data(), d);  // dOut Wo

  // dQ, dK, dV side by side in one (rows, 3 d) matrix: columns [0, d) are dQ, [d, 2d) dK, [2d, 3d) dV,
  // the row order of in_proj_weight, so the projections' backward is one GEMM each.
  RowMatrix &dQKV = ws.dQKV, &dA = ws.dScoresA, &dS = ws.dScores;
  dQKV.resize(rows, 3 * d);
  dA.resize(T, T);
  dS.resize(T, T);
  const float* qH = t.tensor(StageId::QHeads).ptr();
  const float* kH = t.tensor(StageId::KHeads).ptr();
  const float* vH = t.tensor(StageId::VHeads).ptr();
  const float* wts = t.tensor(StageId::Weights).ptr();
  const Eigen::Index ld = 3 * d;
  for (Eigen::Index b = 0; b < B; ++b) {
    for (Eigen::Index i = 0; i < h; ++i) {
      const Eigen::Index bh = b * h + i;
      const float *q = qH + bh * T * dk, *k = kH + bh * T * dk, *v = vH + bh * T * dk;
      const ConstMatrixMap a(wts + bh * T * T, T, T);
      // Merge heads: head i's output is columns i*dk .. (i+1)*dk - 1 of concat.
      const float* dO = dConcat.data() + b * T * d + i * dk;  // (T_q, d_k), row stride d
      float* dQ = dQKV.data() + b * T * ld + i * dk;          // (T, d_k) blocks, row stride 3 d
      // O = A V: dA = dO V^T, dV = A^T dO.
      sgemm(false, true, T, T, dk, dO, d, v, dk, 0.0f, dA.data(), T);
      sgemm(true, false, T, dk, T, a.data(), T, dO, d, 0.0f, dQ + 2 * d, ld);
      // Softmax per row: dS = A * (dA - sum_k dA*A); then the scale factor.
      const Eigen::VectorXf rowDot = (dA.cwiseProduct(a)).rowwise().sum();
      dS = (a.array() * (dA.colwise() - rowDot).array()) * t.scaleFactor;
      // S = Q K^T: dQ = dS K, dK = dS^T Q.
      sgemm(false, false, T, dk, T, dS.data(), T, k, dk, 0.0f, dQ, ld);
      sgemm(true, false, T, dk, T, dS.data(), T, q, dk, 0.0f, dQ + d, ld);
    }
  }
  // Projections q = x Wq^T + bq (and k, v): in_proj_weight rows [Wq; Wk; Wv].
  sgemm(true, false, 3 * d, d, rows, dQKV.data(), ld, x.data(), d, 1.0f, dInW.data(), d);  // dW += dQKV^T x
  dInB.row(0) += dQKV.colwise().sum();
  dX.resize(rows, d);
  sgemm(false, false, rows, d, 3 * d, dQKV.data(), ld, inW.data(), d, 0.0f, dX.data(), d);  // dQKV W
}

}  // namespace mhascope::train
