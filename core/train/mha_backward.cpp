// Backward of multi-head self-attention from the recorded stages, in reverse pipeline order:
// output projection → merge heads → A V → softmax → scale → Q K^T → split heads → projections.
#include "train/mha_backward.hpp"

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

  // Output projection y = concat Wo^T + bo.
  dOutW.noalias() += dOut.transpose() * concat;
  dOutB.row(0) += dOut.colwise().sum();
  RowMatrix& dConcat = ws.dConcat;
  dConcat.noalias() = dOut * outW;  // (rows, d)

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
  for (Eigen::Index b = 0; b < B; ++b) {
    for (Eigen::Index i = 0; i < h; ++i) {
      const Eigen::Index bh = b * h + i;
      const ConstMatrixMap q(qH + bh * T * dk, T, dk), k(kH + bh * T * dk, T, dk), v(vH + bh * T * dk, T, dk);
      const ConstMatrixMap a(wts + bh * T * T, T, T);
      // Merge heads: head i's output is columns i*dk .. (i+1)*dk - 1 of concat.
      const Eigen::Block<RowMatrix> dO = dConcat.block(b * T, i * dk, T, dk);  // (T_q, d_k)
      // O = A V.
      dA.noalias() = dO * v.transpose();
      dQKV.block(b * T, 2 * d + i * dk, T, dk).noalias() = a.transpose() * dO;
      // Softmax per row: dS = A * (dA - sum_k dA*A); then the scale factor.
      const Eigen::VectorXf rowDot = (dA.cwiseProduct(a)).rowwise().sum();
      dS = (a.array() * (dA.colwise() - rowDot).array()) * t.scaleFactor;
      // S = Q K^T.
      dQKV.block(b * T, i * dk, T, dk).noalias() = dS * k;
      dQKV.block(b * T, d + i * dk, T, dk).noalias() = dS.transpose() * q;
    }
  }
  // Projections q = x Wq^T + bq (and k, v): in_proj_weight rows [Wq; Wk; Wv].
  dInW.noalias() += dQKV.transpose() * x;
  dInB.row(0) += dQKV.colwise().sum();
  dX.noalias() = dQKV * inW;
}

}  // namespace mhascope::train
