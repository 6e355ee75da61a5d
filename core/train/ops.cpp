// Forward and backward of LayerNorm, Linear, exact GELU and cross-entropy.
#include "train/ops.hpp"

#include <cmath>

#include "kernels/gemm.hpp"

namespace mhascope::train {

void layerNormForward(const RowMatrix& x, const RowMatrix& w, const RowMatrix& b, RowMatrix& y, LayerNormCache& c) {
  const Eigen::Index rows = x.rows(), d = x.cols();
  c.xhat.resize(rows, d);
  c.rstd.resize(rows);
  y.resize(rows, d);
  for (Eigen::Index r = 0; r < rows; ++r) {
    const float mean = x.row(r).mean();
    const float var = (x.row(r).array() - mean).square().mean();
    const float rstd = 1.0f / std::sqrt(var + kLayerNormEps);
    c.rstd[r] = rstd;
    c.xhat.row(r) = (x.row(r).array() - mean) * rstd;
    y.row(r) = c.xhat.row(r).cwiseProduct(w.row(0)) + b.row(0);
  }
}

// With g = dy * w: dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) per row.
void layerNormBackward(const RowMatrix& dy, const RowMatrix& w, const LayerNormCache& c, RowMatrix& dx,
                       RowMatrix& dw, RowMatrix& db) {
  const Eigen::Index rows = dy.rows(), d = dy.cols();
  dx.resize(rows, d);
  dw.row(0) += dy.cwiseProduct(c.xhat).colwise().sum();
  db.row(0) += dy.colwise().sum();
  for (Eigen::Index r = 0; r < rows; ++r) {
    const Eigen::Array<float, 1, Eigen::Dynamic> g = dy.row(r).array() * w.row(0).array();
    const float mg = g.mean();
    const float mgx = (g * c.xhat.row(r).array()).mean();
    dx.row(r) = c.rstd[r] * (g - mg - c.xhat.row(r).array() * mgx);
  }
}

// The products go through the engine's GEMM (Eigen, or OpenBLAS with MHASCOPE_GEMM=openblas).
void linearForward(const RowMatrix& x, const RowMatrix& W, const RowMatrix& b, RowMatrix& y) {
  const Eigen::Index rows = x.rows(), in = x.cols(), out = W.rows();
  y.resize(rows, out);
  sgemm(false, true, rows, out, in, x.data(), in, W.data(), in, 0.0f, y.data(), out);  // x W^T
  y.rowwise() += b.row(0);
}

void linearBackward(const RowMatrix& dy, const RowMatrix& x, const RowMatrix& W, RowMatrix* dx, RowMatrix& dW,
                    RowMatrix& db) {
  const Eigen::Index rows = dy.rows(), out = W.rows(), in = W.cols();
  if (dx) {
    dx->resize(rows, in);
    sgemm(false, false, rows, in, out, dy.data(), out, W.data(), in, 0.0f, dx->data(), in);  // dy W
  }
  sgemm(true, false, out, in, rows, dy.data(), out, x.data(), in, 1.0f, dW.data(), in);  // dW += dy^T x
  db.row(0) += dy.colwise().sum();
}

void geluForward(const RowMatrix& x, RowMatrix& y) {
  y.resize(x.rows(), x.cols());
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    const float v = x.data()[i];
    y.data()[i] = 0.5f * v * (1.0f + std::erf(v * 0.70710678118654752f));
  }
}

// d/dx [x Phi(x)] = Phi(x) + x phi(x).
void geluBackward(const RowMatrix& x, const RowMatrix& dy, RowMatrix& dx) {
  dx.resize(x.rows(), x.cols());
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    const float v = x.data()[i];
    const float cdf = 0.5f * (1.0f + std::erf(v * 0.70710678118654752f));
    const float pdf = 0.39894228040143268f * std::exp(-0.5f * v * v);
    dx.data()[i] = dy.data()[i] * (cdf + v * pdf);
  }
}

CrossEntropyResult crossEntropy(const RowMatrix& logits, const std::vector<int>& targets, RowMatrix* dlogits) {
  CrossEntropyResult r;
  const Eigen::Index rows = logits.rows(), V = logits.cols();
  for (int t : targets) r.count += t >= 0 ? 1 : 0;
  if (dlogits) dlogits->setZero(rows, V);
  const float inv = r.count > 0 ? 1.0f / static_cast<float>(r.count) : 0.0f;
  Eigen::Array<float, 1, Eigen::Dynamic> e(V);
  double sum = 0;
  for (Eigen::Index i = 0; i < rows; ++i) {
    const int t = targets[static_cast<std::size_t>(i)];
    if (t < 0) continue;
    Eigen::Index arg = 0;
    const float m = logits.row(i).maxCoeff(&arg);
    e = (logits.row(i).array() - m).exp();  // softmax numerators, max subtracted
    const double z = static_cast<double>(e.sum());
    sum += std::log(z) - static_cast<double>(logits(i, t) - m);
    if (arg == t) ++r.correct;
    if (dlogits) {
      dlogits->row(i) = e * (inv / static_cast<float>(z));
      (*dlogits)(i, t) -= inv;
    }
  }
  r.loss = r.count > 0 ? sum / r.count : 0.0;
  return r;
}

}  // namespace mhascope::train
