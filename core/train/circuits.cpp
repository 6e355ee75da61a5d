// QK / OV circuits, composition scores with their random baseline, copying scores and attention
// rollout (definitions in circuits.hpp). Products and norms in double: a score is a ratio of
// Frobenius norms, and the eigenvalue sums cancel.
#include "train/circuits.hpp"

#include <Eigen/Eigenvalues>
#include <cmath>

#include "attention/random.hpp"

namespace mhascope::train {

namespace {

// Head i's d_k rows of one projection in in_proj_weight (3 d_model, d_model): block 0 = W_q,
// 1 = W_k, 2 = W_v.
RowMatrixD projectionRows(const GptParams& p, int layer, int head, int block) {
  const int d = p.cfg.dModel, dk = d / p.cfg.heads;
  return p.blocks[static_cast<std::size_t>(layer)].inW.middleRows(block * d + head * dk, dk).cast<double>();
}
// W_o^i: columns i*d_k … of out_proj.weight (d_model, d_model).
RowMatrixD outputColumns(const GptParams& p, int layer, int head) {
  const int dk = p.cfg.dModel / p.cfg.heads;
  return p.blocks[static_cast<std::size_t>(layer)].outW.middleCols(head * dk, dk).cast<double>();
}

RowMatrixD qkD(const GptParams& p, int layer, int head) {
  RowMatrixD m;
  m.noalias() = projectionRows(p, layer, head, 0).transpose() * projectionRows(p, layer, head, 1);  // (d, d)
  return m;
}
RowMatrixD ovD(const GptParams& p, int layer, int head) {
  RowMatrixD m;
  m.noalias() = projectionRows(p, layer, head, 2).transpose() * outputColumns(p, layer, head).transpose();  // (d, d)
  return m;
}

// ||X Y||_F / (||X||_F ||Y||_F); 0 when either is 0 (a dead head composes with nothing).
double ratio(const RowMatrixD& product, const RowMatrixD& x, const RowMatrixD& y) {
  const double den = x.norm() * y.norm();
  return den > 0 ? product.norm() / den : 0.0;
}

Composition composeD(const RowMatrixD& ovA, const RowMatrixD& qkB, const RowMatrixD& ovB) {
  Composition c;
  RowMatrixD m;
  m.noalias() = ovA * qkB;
  c.q = ratio(m, ovA, qkB);
  m.noalias() = qkB * ovA.transpose();
  c.k = ratio(m, ovA, qkB);
  m.noalias() = ovA * ovB;
  c.v = ratio(m, ovA, ovB);
  return c;
}

RowMatrixD gaussian(int rows, int cols, SplitMix64& rng) {
  RowMatrixD m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = rng.normal();
  return m;
}

// sum Re(lambda) / sum |lambda| (the imaginary parts of a real matrix's spectrum cancel in pairs).
double copyingScore(const std::vector<std::complex<double>>& eig) {
  double re = 0, mod = 0;
  for (const auto& l : eig) {
    re += l.real();
    mod += std::abs(l);
  }
  return mod > 0 ? re / mod : 0.0;
}

RowMatrixD rowNormalised(RowMatrixD m) {
  for (Eigen::Index r = 0; r < m.rows(); ++r) {
    const double s = m.row(r).sum();
    if (s > 0) m.row(r) /= s;
  }
  return m;
}

// A as stored in the snapshot: layer l, head h, (T, T).
Eigen::Map<const RowMatrix> headWeights(const Snapshot& s, int layer, int head) {
  const std::size_t per = static_cast<std::size_t>(s.seq) * static_cast<std::size_t>(s.seq);
  const std::size_t at = (static_cast<std::size_t>(layer) * static_cast<std::size_t>(s.heads) + static_cast<std::size_t>(head)) * per;
  return Eigen::Map<const RowMatrix>(s.weights.data() + at, s.seq, s.seq);
}

// rownorm(½ (A + I)): what one step of attention plus the residual passes on.
RowMatrixD withResidual(const RowMatrixD& a) {
  return rowNormalised(0.5 * (a + RowMatrixD::Identity(a.rows(), a.cols())));
}

}  // namespace

RowMatrix headQK(const GptParams& p, int layer, int head) { return qkD(p, layer, head).cast<float>(); }
RowMatrix headOV(const GptParams& p, int layer, int head) { return ovD(p, layer, head).cast<float>(); }

Composition compose(const RowMatrix& ovA, const RowMatrix& qkB, const RowMatrix& ovB) {
  return composeD(ovA.cast<double>(), qkB.cast<double>(), ovB.cast<double>());
}

double compositionBaseline(int dModel, int dk, int samples, std::uint64_t seed) {
  if (dModel < 1 || dk < 1 || samples < 1) return 0.0;
  SplitMix64 rng(seed);
  double sum = 0;
  for (int s = 0; s < samples; ++s) {
    // Head a's OV, head b's QK and OV, each a product of independent Gaussian factors.
    const RowMatrixD ovA = gaussian(dk, dModel, rng).transpose() * gaussian(dModel, dk, rng).transpose();
    const RowMatrixD qkB = gaussian(dk, dModel, rng).transpose() * gaussian(dk, dModel, rng);
    const RowMatrixD ovB = gaussian(dk, dModel, rng).transpose() * gaussian(dModel, dk, rng).transpose();
    const Composition c = composeD(ovA, qkB, ovB);
    sum += c.q + c.k + c.v;
  }
  return sum / (3.0 * samples);
}

Circuits computeCircuits(const GptParams& p) {
  Circuits out;
  out.layers = p.cfg.layers;
  out.heads = p.cfg.heads;
  out.dModel = p.cfg.dModel;
  out.dk = p.cfg.dModel / p.cfg.heads;
  out.vocab = p.cfg.vocab;
  out.tokenSpace = p.cfg.vocab <= kMaxTokenSpaceVocab;
  const RowMatrixD emb = p.emb.cast<double>();             // E (V, d)
  const RowMatrixD unemb = p.outW.transpose().cast<double>();  // U (d, V): logits = x U
  std::vector<RowMatrixD> qks, ovs;
  for (int l = 0; l < out.layers; ++l) {
    for (int h = 0; h < out.heads; ++h) {
      HeadCircuit hc;
      hc.layer = l;
      hc.head = h;
      RowMatrixD qk = qkD(p, l, h), ov = ovD(p, l, h);
      hc.qk = qk.cast<float>();
      hc.ov = ov.cast<float>();
      if (out.tokenSpace) {
        RowMatrixD t;
        t.noalias() = emb * qk * emb.transpose();  // (V, V)
        hc.qkTokens = t.cast<float>();
        t.noalias() = emb * ov * unemb;  // (V, V)
        hc.ovTokens = t.cast<float>();
      }
      // (d_k, d_k) W_oT U E W_vT: the nonzero spectrum of E OV U.
      RowMatrixD small;
      small.noalias() = outputColumns(p, l, h).transpose() * unemb * emb * projectionRows(p, l, h, 2).transpose();
      Eigen::EigenSolver<Eigen::MatrixXd> solver(small, /*computeEigenvectors=*/false);
      if (solver.info() == Eigen::Success) {
        const auto& ev = solver.eigenvalues();
        hc.eigenvalues.assign(ev.data(), ev.data() + ev.size());
      }
      hc.copying = copyingScore(hc.eigenvalues);
      out.perHead.push_back(std::move(hc));
      qks.push_back(std::move(qk));
      ovs.push_back(std::move(ov));
    }
  }
  for (int la = 0; la < out.layers; ++la)
    for (int ha = 0; ha < out.heads; ++ha)
      for (int lb = la + 1; lb < out.layers; ++lb)
        for (int hb = 0; hb < out.heads; ++hb) {
          const std::size_t a = static_cast<std::size_t>(la * out.heads + ha), b = static_cast<std::size_t>(lb * out.heads + hb);
          Composition c = composeD(ovs[a], qks[b], ovs[b]);
          c.fromLayer = la;
          c.fromHead = ha;
          c.toLayer = lb;
          c.toHead = hb;
          out.pairs.push_back(c);
        }
  out.baseline = compositionBaseline(out.dModel, out.dk);
  return out;
}

std::vector<RowMatrix> attentionRollout(const Snapshot& s) {
  std::vector<RowMatrix> out;
  if (s.layers < 1 || s.heads < 1 || s.seq < 1) return out;
  RowMatrixD rolled = RowMatrixD::Identity(s.seq, s.seq);
  for (int l = 0; l < s.layers; ++l) {
    RowMatrixD mean = RowMatrixD::Zero(s.seq, s.seq);  // (T, T) mean over heads
    for (int h = 0; h < s.heads; ++h) mean += headWeights(s, l, h).cast<double>();
    mean /= s.heads;
    const RowMatrixD step = withResidual(mean);
    RowMatrixD next;
    next.noalias() = step * rolled;  // Â_l (Â_{l-1} … Â_0)
    rolled = std::move(next);
    out.push_back(rolled.cast<float>());
  }
  return out;
}

RowMatrix pathRollout(const Snapshot& s, int layer, int headA, int headB) {
  if (layer < 0 || layer + 1 >= s.layers || headA < 0 || headA >= s.heads || headB < 0 || headB >= s.heads) return {};
  const RowMatrixD a = withResidual(headWeights(s, layer, headA).cast<double>());
  const RowMatrixD b = withResidual(headWeights(s, layer + 1, headB).cast<double>());
  RowMatrixD path;
  path.noalias() = b * a;
  return path.cast<float>();
}

}  // namespace mhascope::train
