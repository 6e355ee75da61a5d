// The circuits of circuits.hpp, from any LayerSource: computeCircuits, every head and pair in double
// (a score is a ratio of Frobenius norms, and the eigenvalue sums cancel), the scores and factors
// both computations share, the random baseline and the selectors. The circuits around one head
// (computeOneHeadCircuits) are circuits_one_head.cpp.
//
// [SECTION] index: random draws · scores and factors · baseline · all pairs · selectors
#include "analysis/circuits.hpp"

#include <algorithm>
#include <cmath>

#include "attention/random.hpp"
#include "util/decompositions.hpp"
#include "util/thread_pool.hpp"

namespace mhascope::analysis {

namespace {

// [SECTION] random draws

// SplitMix64::normal() by the million: the baseline of a 4096-wide model draws 630 million, and
// one std::log plus one std::cos each took two thirds of its time. Box–Muller's inputs are 24-bit
// integers, so both functions come from small tables: cos(2π k/2²⁴) = cos(a + b) with a from the
// top 12 bits of k and b from the low 12; log(m/2²⁴) = (e − 24) ln 2 + log c + log1p((f − c)/c) with
// m = 2^e f, c = f's top 12 bits (|(f − c)/c| < 2⁻¹², a degree-5 series). Each is within a few
// ulps of the double the libm functions give, so after the cast to float the draws are the same
// numbers (1 differed by one float ulp in 59 million, measured) about three times as fast.
class NormalDraws {
 public:
  NormalDraws() : cosHi_(kN), sinHi_(kN), cosLo_(kN), sinLo_(kN), logC_(kN), invC_(kN), pow2_(32) {
    constexpr double tau = 6.283185307179586;
    for (int i = 0; i < kN; ++i) {
      cosHi_[i] = std::cos(tau * i / kN);
      sinHi_[i] = std::sin(tau * i / kN);
      cosLo_[i] = std::cos(tau * i / (double(kN) * kN));
      sinLo_[i] = std::sin(tau * i / (double(kN) * kN));
      logC_[i] = std::log1p(static_cast<double>(i) / kN);
      invC_[i] = 1.0 / (1.0 + static_cast<double>(i) / kN);
    }
    for (int e = 0; e < 32; ++e) pow2_[static_cast<std::size_t>(e)] = std::ldexp(1.0, -e);
  }
  // rows x cols of rng.normal(), in the order normal() draws them.
  RowMatrixD matrix(int rows, int cols, SplitMix64& rng) const {
    RowMatrixD m(rows, cols);
    constexpr std::int64_t kBlock = 1024;
    std::uint32_t u1[kBlock], u2[kBlock];
    const std::int64_t n = m.size();
    for (std::int64_t i0 = 0; i0 < n; i0 += kBlock) {
      const std::int64_t b = std::min(kBlock, n - i0);
      for (std::int64_t j = 0; j < b; ++j) {  // normal(): u1 = (top 24 bits + 1) / 2²⁴, then u2 = top 24 bits / 2²⁴
        u1[j] = static_cast<std::uint32_t>(rng.next() >> 40) + 1u;
        u2[j] = static_cast<std::uint32_t>(rng.next() >> 40);
      }
      for (std::int64_t j = 0; j < b; ++j) {
        const std::uint32_t k1 = u1[j], k2 = u2[j];
        const int e = 31 - __builtin_clz(k1);
        const double f = static_cast<double>(k1) * pow2_[static_cast<std::size_t>(e)];  // [1, 2)
        const int c = static_cast<int>((f - 1.0) * kN);
        const double x = (f - (1.0 + static_cast<double>(c) / kN)) * invC_[static_cast<std::size_t>(c)];
        const double log1pX = x * (1.0 - x * (0.5 - x * (1.0 / 3.0 - x * (0.25 - x * 0.2))));
        const double logU1 = (e - 24) * 0.6931471805599453 + logC_[static_cast<std::size_t>(c)] + log1pX;
        const std::size_t hi = k2 >> 12, lo = k2 & (kN - 1u);
        const double cosU2 = cosHi_[hi] * cosLo_[lo] - sinHi_[hi] * sinLo_[lo];
        m.data()[i0 + j] = static_cast<double>(static_cast<float>(std::sqrt(-2.0 * logU1) * cosU2));
      }
    }
    return m;
  }

 private:
  static constexpr int kN = 4096;
  std::vector<double> cosHi_, sinHi_, cosLo_, sinLo_, logC_, invC_, pow2_;
};

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

}  // namespace

// [SECTION] scores and factors

// The imaginary parts of a real matrix's spectrum cancel in pairs, so the real parts' sum is the sum.
double copyingScore(const std::vector<std::complex<double>>& eig) {
  double re = 0, mod = 0;
  for (const auto& l : eig) {
    re += l.real();
    mod += std::abs(l);
  }
  return mod > 0 ? re / mod : 0.0;
}

double diagonalTopShare(const RowMatrix& m) {
  const Eigen::Index n = std::min(m.rows(), m.cols());
  if (n == 0) return 0.0;
  Eigen::Index top = 0;
  for (Eigen::Index i = 0; i < n; ++i) {
    bool above = true;
    for (Eigen::Index j = 0; j < m.cols() && above; ++j) above = j == i || m(i, j) < m(i, i);
    top += above ? 1 : 0;
  }
  return static_cast<double>(top) / static_cast<double>(n);
}

Composition compose(const RowMatrix& ovA, const RowMatrix& qkB, const RowMatrix& ovB) {
  return composeD(ovA.cast<double>(), qkB.cast<double>(), ovB.cast<double>());
}

LowRank lowRank(RowMatrixD p, RowMatrixD q) {
  LowRank x;
  // Symmetric: the rank updates compute one triangle (half the products), then mirror it.
  x.pGram = RowMatrixD::Zero(p.cols(), p.cols());
  x.pGram.selfadjointView<Eigen::Lower>().rankUpdate(p.transpose());  // (k, k) PᵀP
  x.pGram = x.pGram.selfadjointView<Eigen::Lower>();
  x.qGram = RowMatrixD::Zero(q.rows(), q.rows());
  x.qGram.selfadjointView<Eigen::Lower>().rankUpdate(q);  // (k, k) Q Qᵀ
  x.qGram = x.qGram.selfadjointView<Eigen::Lower>();
  x.norm2 = std::max(0.0, x.pGram.cwiseProduct(x.qGram).sum());  // tr(PᵀP Q Qᵀ), both symmetric
  x.p = std::move(p);
  x.q = std::move(q);
  return x;
}

double factoredNorm2(const RowMatrixD& leftGram, const RowMatrixD& m, const RowMatrixD& rightGram) {
  // tr(Mᵀ G_L M G_R) = sum of (G_L M) ∘ (M G_R), G_L and G_R symmetric: two k³ products.
  RowMatrixD lm, mr;
  lm.noalias() = leftGram * m;
  mr.noalias() = m * rightGram;
  return std::max(0.0, lm.cwiseProduct(mr).sum());
}

double compositionRatio(double product2, double x2, double y2) {
  const double den = std::sqrt(x2 * y2);
  return den > 0 ? std::sqrt(product2) / den : 0.0;
}

std::vector<std::complex<double>> virtualSpectrum(const RowMatrixD& dbUECa, const RowMatrixD& daCb) {
  RowMatrixD small;
  small.noalias() = dbUECa * daCb;
  return eigenvalues(small);
}

Composition composeLowRank(const LowRank& ovA, const LowRank& qkB, const LowRank& ovB) {
  Composition c;
  RowMatrixD m;
  m.noalias() = ovA.q * qkB.p;  // OV^a QK^b = P_a (Q_a P_b) Q_b
  c.q = compositionRatio(factoredNorm2(ovA.pGram, m, qkB.qGram), ovA.norm2, qkB.norm2);
  m.noalias() = qkB.q * ovA.q.transpose();  // QK^b OV^aT = P_b (Q_b Q_aT) P_aT
  c.k = compositionRatio(factoredNorm2(qkB.pGram, m, ovA.pGram), ovA.norm2, qkB.norm2);
  m.noalias() = ovA.q * ovB.p;  // OV^a OV^b = P_a (Q_a P_b) Q_b
  c.v = compositionRatio(factoredNorm2(ovA.pGram, m, ovB.qGram), ovA.norm2, ovB.norm2);
  return c;
}

// [SECTION] baseline

double compositionBaseline(int dModel, int dk, int samples, std::uint64_t seed, int threads) {
  return *compositionBaseline(dModel, dk, samples, seed, threads, {});
}

std::optional<double> compositionBaseline(int dModel, int dk, int samples, std::uint64_t seed, int threads,
                                          const std::function<bool(int done, int total)>& progress) {
  if (dModel < 1 || dk < 1 || samples < 1) return 0.0;
  // Each sample draws 6 d_k·d_model normals of two SplitMix64 steps each; SplitMix64's state moves by
  // a constant per step, so sample s starts at seed + s·steps·γ — the stream one loop would draw.
  const std::uint64_t steps = 12ull * static_cast<std::uint64_t>(dk) * static_cast<std::uint64_t>(dModel);
  std::vector<double> perSample(static_cast<std::size_t>(samples));
  const NormalDraws draws;
  const auto gaussian = [&](int rows, int cols, SplitMix64& rng) { return draws.matrix(rows, cols, rng); };
  const auto sample = [&](std::int64_t s) {
    SplitMix64 rng(seed + static_cast<std::uint64_t>(s) * steps * 0x9E3779B97F4A7C15ull);
    // Head a's OV, head b's QK and OV, each a product P Q of independent Gaussian factors, Q drawn
    // before P (the order in which the earlier d_model x d_model version, built with GCC, drew them:
    // the value stays what it was).
    RowMatrixD q1 = gaussian(dModel, dk, rng).transpose(), p1 = gaussian(dk, dModel, rng).transpose();
    RowMatrixD q2 = gaussian(dk, dModel, rng), p2 = gaussian(dk, dModel, rng).transpose();
    RowMatrixD q3 = gaussian(dModel, dk, rng).transpose(), p3 = gaussian(dk, dModel, rng).transpose();
    const Composition c = composeLowRank(lowRank(std::move(p1), std::move(q1)), lowRank(std::move(p2), std::move(q2)),
                                         lowRank(std::move(p3), std::move(q3)));
    perSample[static_cast<std::size_t>(s)] = c.q + c.k + c.v;
  };
  // In kBaselineChunks chunks, the callback between them on this thread (a sample never depends on
  // the chunk it falls in).
  for (int chunk = 0; chunk < kBaselineChunks; ++chunk) {
    const std::int64_t s0 = static_cast<std::int64_t>(samples) * chunk / kBaselineChunks;
    const std::int64_t s1 = static_cast<std::int64_t>(samples) * (chunk + 1) / kBaselineChunks;
    parallelFor(threads, s1 - s0, [&](std::int64_t i) { sample(s0 + i); });
    if (progress && !progress(chunk + 1, kBaselineChunks)) return std::nullopt;
  }
  double sum = 0;
  for (double v : perSample) sum += v;
  return sum / (3.0 * samples);
}

// [SECTION] all pairs

Result<Circuits> computeCircuits(const LayerSource& source, std::optional<double> baseline) {
  const SourceShape s = source.shape();
  Circuits out;
  out.layers = s.layers;
  out.heads = s.heads;
  out.dModel = s.dModel;
  out.dk = s.dk();
  out.vocab = s.vocab;
  out.tokenSpace = s.vocab <= kMaxTokenSpaceVocab;
  const std::int64_t d = s.dModel, dk = s.dk(), V = s.vocab;
  const int group = s.group();
  RowMatrix e(V, d), u(V, d);  // the embedding's rows, the unembedding's as stored (V, d)
  if (auto st = source.embeddingRows(0, V, e.data()); !st) return st.error();
  if (source.tied()) {
    u = e;
  } else if (auto st = source.unembeddingRows(0, V, u.data()); !st) {
    return st.error();
  }
  auto gain = source.finalGain();
  if (!gain) return gain.error();
  u.array().rowwise() *= gain->array();  // U = diag(g_f) · uᵀ
  const RowMatrixD emb = e.cast<double>();                 // E (V, d)
  const RowMatrixD unemb = u.transpose().cast<double>();  // U (d, V): logits = x U
  out.positions = static_cast<int>(std::min<std::int64_t>(source.learnedPositions(), kMaxTokenSpaceVocab));
  RowMatrixD pos;  // P (positions, d)
  if (out.positions > 0) {
    RowMatrix p(out.positions, d);
    if (auto st = source.positionRows(0, out.positions, p.data()); !st) return st.error();
    pos = p.cast<double>();
  }
  std::vector<RowMatrixD> qks, ovs;
  std::vector<RowMatrixD> cs, os;  // per head: C = W_v^i (d, d_k), D = W_o^i (d_k, d), for the virtual heads
  for (int l = 0; l < out.layers; ++l) {
    auto layer = source.layer(l);
    if (!layer) return layer.error();
    for (int h = 0; h < out.heads; ++h) {
      const std::int64_t kv = h / group;
      const RowMatrixD a = layer->wq.middleCols(h * dk, dk).cast<double>();   // (d, d_k) W_q^i
      const RowMatrixD b = layer->wk.middleCols(kv * dk, dk).cast<double>();  // (d, d_k) W_k^i
      const RowMatrixD c = layer->wv.middleCols(kv * dk, dk).cast<double>();  // (d, d_k) W_v^i
      const RowMatrixD o = layer->wo.middleRows(h * dk, dk).cast<double>();   // (d_k, d) W_o^i
      HeadCircuit hc;
      hc.layer = l;
      hc.head = h;
      RowMatrixD qk, ov;
      qk.noalias() = a * b.transpose();  // (d, d)
      ov.noalias() = c * o;              // (d, d)
      hc.qk = qk.cast<float>();
      hc.ov = ov.cast<float>();
      if (out.tokenSpace) {
        RowMatrixD t;
        t.noalias() = emb * qk * emb.transpose();  // (V, V)
        hc.qkTokens = t.cast<float>();
        t.noalias() = emb * ov * unemb;  // (V, V)
        hc.ovTokens = t.cast<float>();
        hc.diagonalTop = diagonalTopShare(hc.ovTokens);
      }
      if (out.positions > 0) {
        RowMatrixD t;
        t.noalias() = pos * qk * pos.transpose();  // (P, P)
        hc.qkPositions = t.cast<float>();
      }
      // (d_k, d_k) W_o U E W_v: the nonzero spectrum of E OV U. Written over transposed views of
      // (d, d_k) and (d_k, d) copies: Eigen's small products vectorise by storage order, and this one
      // keeps a checkpoint's copying scores bit for bit what they were.
      const RowMatrixD oCols = o.transpose(), vRows = c.transpose();
      RowMatrixD small;
      small.noalias() = oCols.transpose() * unemb * emb * vRows.transpose();
      hc.eigenvalues = eigenvalues(small);
      hc.copying = copyingScore(hc.eigenvalues);
      out.perHead.push_back(std::move(hc));
      qks.push_back(std::move(qk));
      ovs.push_back(std::move(ov));
      cs.push_back(c);
      os.push_back(o);
    }
  }
  // Virtual heads: (D_b U E C_a)(D_a C_b), with U E (d, d) once and U E C_a per head.
  RowMatrixD ue;
  ue.noalias() = unemb * emb;  // (d, d)
  std::vector<RowMatrixD> ueC(cs.size());
  for (std::size_t i = 0; i < cs.size(); ++i) ueC[i].noalias() = ue * cs[i];  // (d, d_k)
  std::int64_t pairCount = 0;
  for (int la = 0; la < out.layers; ++la) pairCount += static_cast<std::int64_t>(out.heads) * out.heads * (out.layers - 1 - la);
  const bool keepVirtual = out.tokenSpace && pairCount * V * V <= kMaxVirtualTokenCells;
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
          RowMatrixD dbUECa, daCb;
          dbUECa.noalias() = os[b] * ueC[a];  // (d_k, d_k)
          daCb.noalias() = os[a] * cs[b];     // (d_k, d_k)
          c.virtualCopying = copyingScore(virtualSpectrum(dbUECa, daCb));
          if (out.tokenSpace) {  // E OV^a OV^b U (V, V) = (E C_a)(D_a C_b)(D_b U), made and dropped
            RowMatrixD left, t;
            left.noalias() = emb * cs[a] * daCb;  // (V, d_k)
            t.noalias() = left * (os[b] * unemb);  // (V, V)
            RowMatrix tf = t.cast<float>();
            out.virtualDiagonalTop.push_back(diagonalTopShare(tf));
            if (keepVirtual) out.virtualOvTokens.push_back(std::move(tf));
          }
          out.pairs.push_back(c);
        }
  out.baseline = baseline ? *baseline : compositionBaseline(out.dModel, out.dk);
  return out;
}

// [SECTION] selectors

int previousPositionRows(const RowMatrix& m) {
  const Eigen::Index p = std::min(m.rows(), m.cols());
  int rows = 0;
  for (Eigen::Index t = 1; t < p; ++t) {
    Eigen::Index best = 0;
    for (Eigen::Index j = 1; j <= t; ++j)
      if (m(t, j) > m(t, best)) best = j;
    rows += best == t - 1 ? 1 : 0;
  }
  return rows;
}

const Composition* Circuits::pair(const HeadPair& p) const {
  for (const Composition& c : pairs) {
    if (c.fromLayer == p.fromLayer && c.fromHead == p.fromHead && c.toLayer == p.toLayer && c.toHead == p.toHead) return &c;
  }
  return nullptr;
}

std::string checkPair(const HeadPair& p, int layers, int heads) {
  const auto layerOut = [&](int l) {
    return "layer " + std::to_string(l) + " is outside the model's " + std::to_string(layers) + " layers (0 .. " +
           std::to_string(layers - 1) + ")";
  };
  const auto headOut = [&](int h) {
    return "head " + std::to_string(h) + " is outside the model's " + std::to_string(heads) + " heads per layer (0 .. " +
           std::to_string(heads - 1) + ")";
  };
  if (p.fromLayer < 0 || p.fromLayer >= layers) return layerOut(p.fromLayer);
  if (p.toLayer < 0 || p.toLayer >= layers) return layerOut(p.toLayer);
  if (p.fromHead < 0 || p.fromHead >= heads) return headOut(p.fromHead);
  if (p.toHead < 0 || p.toHead >= heads) return headOut(p.toHead);
  if (p.fromLayer >= p.toLayer) {
    return "the pair's first head (layer " + std::to_string(p.fromLayer) + ") must be in an earlier layer than its second (layer " +
           std::to_string(p.toLayer) + "): a head reads only what earlier layers wrote";
  }
  return "";
}

std::vector<Composition> pairsThrough(const OneHeadCircuits& c) {
  std::vector<Composition> out = c.reads;
  out.insert(out.end(), c.readBy.begin(), c.readBy.end());
  return out;
}

std::vector<const Composition*> topValuePairs(const std::vector<Composition>& pairs, int n) {
  std::vector<const Composition*> out;
  for (const Composition& c : pairs) out.push_back(&c);
  std::stable_sort(out.begin(), out.end(), [](const Composition* x, const Composition* y) { return x->v > y->v; });
  if (static_cast<int>(out.size()) > n) out.resize(static_cast<std::size_t>(std::max(0, n)));
  return out;
}

double compositionScore(const Composition& c, char kind) { return kind == 'Q' ? c.q : kind == 'K' ? c.k : c.v; }

Read strongestRead(const Composition& c) {
  Read r{&c, 'K', c.k};
  if (c.q > r.score) r = {&c, 'Q', c.q};
  if (c.v > r.score) r = {&c, 'V', c.v};
  return r;
}

std::vector<Read> readsByStrength(const Circuits& c) {
  std::vector<Read> reads;
  for (const Composition& p : c.pairs) reads.push_back(strongestRead(p));
  std::stable_sort(reads.begin(), reads.end(), [](const Read& x, const Read& y) { return x.score > y.score; });
  return reads;
}

const Composition* strongestPair(const std::vector<Composition>& pairs, char kind) {
  const Composition* best = nullptr;
  for (const Composition& p : pairs) {
    if (!best || compositionScore(p, kind) > compositionScore(*best, kind)) best = &p;
  }
  return best;
}

}  // namespace mhascope::analysis