// The circuits of circuits.hpp, from any LayerSource. Two computations:
//   computeCircuits — every head and pair in double: a score is a ratio of Frobenius norms, and
//     the eigenvalue sums cancel;
//   computeOneHeadCircuits — around one head: the wide products (U·E over the vocabulary, U·E·W_v,
//     W_o against the chosen head's factors) in float through the project's SGEMM in fixed column
//     chunks shared out over the threads (the same sums whatever the thread count); every
//     composition score from d_k x d_k products through the low-rank identity
//       ||P1 Q1 P2 Q2||_F² = tr(Mᵀ (P1ᵀP1) M (Q2 Q2ᵀ)),  M = Q1 P2  (factoredNorm2),
//     the traces and eigenvalues in double.
//
// [SECTION] index: random draws · scores and factors · baseline · all pairs · one head · selectors
#include "analysis/circuits.hpp"

#include <algorithm>
#include <cmath>
#include <new>
#include <unordered_set>

#include "attention/random.hpp"
#include "kernels/gemm.hpp"
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

// The virtual head's d_k nonzero eigenvalues: those of (D_b U E C_a)(D_a C_b), the cyclic turn of
// E C_a D_a C_b D_b U.
std::vector<std::complex<double>> virtualSpectrum(const RowMatrixD& dbUECa /*(d_k, d_k)*/, const RowMatrixD& daCb /*(d_k, d_k)*/) {
  RowMatrixD small;
  small.noalias() = dbUECa * daCb;
  return eigenvalues(small);
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

namespace {
double ratioOf(double product2, double x2, double y2) {
  const double den = std::sqrt(x2 * y2);
  return den > 0 ? std::sqrt(product2) / den : 0.0;
}
}  // namespace

Composition composeLowRank(const LowRank& ovA, const LowRank& qkB, const LowRank& ovB) {
  Composition c;
  RowMatrixD m;
  m.noalias() = ovA.q * qkB.p;  // OV^a QK^b = P_a (Q_a P_b) Q_b
  c.q = ratioOf(factoredNorm2(ovA.pGram, m, qkB.qGram), ovA.norm2, qkB.norm2);
  m.noalias() = qkB.q * ovA.q.transpose();  // QK^b OV^aT = P_b (Q_b Q_aT) P_aT
  c.k = ratioOf(factoredNorm2(qkB.pGram, m, ovA.pGram), ovA.norm2, qkB.norm2);
  m.noalias() = ovA.q * ovB.p;  // OV^a OV^b = P_a (Q_a P_b) Q_b
  c.v = ratioOf(factoredNorm2(ovA.pGram, m, ovB.qGram), ovA.norm2, ovB.norm2);
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

// [SECTION] one head

namespace {

constexpr std::int64_t kChunk = 256;  // output columns per SGEMM task (fixed: thread-count independent)

// C (M, N) = op(A) (M, K) · B (K, N) + beta C, row-major, split into fixed column chunks over `threads`.
void product(bool transA, std::int64_t M, std::int64_t N, std::int64_t K, const float* A, std::int64_t lda,
             const float* B, std::int64_t ldb, float beta, float* C, std::int64_t ldc, int threads) {
  const std::int64_t chunks = (N + kChunk - 1) / kChunk;
  parallelFor(threads, chunks, [&](std::int64_t i) {
    const std::int64_t c0 = i * kChunk, n = std::min(kChunk, N - c0);
    sgemm(transA, false, M, n, K, A, lda, B + c0, ldb, beta, C + c0, ldc);
  });
}

// XᵀX (k, k) of a (rows, k) block, in double.
RowMatrixD gramOfColumns(const Eigen::Ref<const RowMatrix, 0, Eigen::OuterStride<>>& x) {
  RowMatrix g;
  g.noalias() = x.transpose() * x;
  return g.cast<double>();
}
// X Xᵀ (k, k) of a (k, cols) block, in double.
RowMatrixD gramOfRows(const Eigen::Ref<const RowMatrix, 0, Eigen::OuterStride<>>& x) {
  RowMatrix g;
  g.noalias() = x * x.transpose();
  return g.cast<double>();
}
// tr(G H) of two symmetric matrices.
double traceOfProduct(const RowMatrixD& g, const RowMatrixD& h) { return std::max(0.0, g.cwiseProduct(h).sum()); }

// The chosen head's factors: QK = A Bᵀ, OV = C D, and the Gram matrices composition needs.
struct ChosenHead {
  RowMatrix a, b, c, d;          // (d, d_k) ×3, (d_k, d)
  RowMatrix abc;                 // (d, 3 d_k) [A | B | C]
  RowMatrixD gA, gB, gC, hD;     // AᵀA, BᵀB, CᵀC, D Dᵀ (d_k, d_k)
  double qk2 = 0, ov2 = 0;       // ||QK||_F², ||OV||_F²
  RowMatrix dUE, ueC;            // (d_k, d) D U E, (d, d_k) U E C: the virtual heads through it
};

// The OV factors of one head: C = W_v^i (d, d_k), D = W_o^i (d_k, d).
struct OvFactors {
  RowMatrix c, d;
};

double virtualCopyingOf(const RowMatrix& dbUECa /*(d_k, d_k)*/, const RowMatrix& daCb /*(d_k, d_k)*/) {
  return copyingScore(virtualSpectrum(dbUECa.cast<double>(), daCb.cast<double>()));
}

std::vector<std::complex<double>> eigenvaluesOf(const RowMatrix& small /*(d_k, d_k)*/) {
  return eigenvalues(small.cast<double>());
}

}  // namespace

int oneHeadSteps(const SourceShape& s, const OneHeadOptions& opt) {
  const int vocabBlocks = static_cast<int>((static_cast<std::int64_t>(s.vocab) + kVocabBlock - 1) / kVocabBlock);
  return vocabBlocks + s.layers + (opt.baseline ? 0 : kBaselineChunks);
}

Result<OneHeadCircuits> computeOneHeadCircuits(const LayerSource& source, const std::vector<int>& tokens,
                                               const OneHeadOptions& opt) {
  const SourceShape s = source.shape();
  const int threads = std::max(1, opt.threads);
  const std::int64_t d = s.dModel, dk = s.dk(), N = s.kvHeads, kvw = N * dk, V = s.vocab;
  const int group = s.group();  // query head i reads K/V head i / group
  const int total = oneHeadSteps(s, opt) + opt.laterSteps;
  int done = 0;
  const auto step = [&]() { return !opt.progress || opt.progress(++done, total); };
  const Error cancelled = makeError(kCircuitsCancelled);

  OneHeadCircuits out;
  out.layers = s.layers;
  out.heads = s.heads;
  out.kvHeads = s.kvHeads;
  out.dModel = s.dModel;
  out.dk = s.dk();
  out.vocab = s.vocab;
  out.layer = opt.layer;
  out.head = opt.head;

  // The final norm's gain g_f, folded into U = diag(g_f) · unembeddingᵀ (d, V).
  auto gain = source.finalGain();
  if (!gain) return gain.error();
  const RowVector gf = std::move(*gain);

  // U·E (d, d) = diag(g_f) Σ_blocks unembedding_blockᵀ E_block, a block of vocabulary rows at a time.
  const bool tied = source.tied();
  RowMatrix ue = RowMatrix::Zero(d, d);
  {
    RowMatrix eRows, uRows;  // (block, d)
    for (std::int64_t r0 = 0; r0 < V; r0 += kVocabBlock) {
      const std::int64_t n = std::min(kVocabBlock, V - r0);
      eRows.resize(n, d);
      if (auto st = source.embeddingRows(r0, n, eRows.data()); !st) return st.error();
      const float* u = eRows.data();
      if (!tied) {
        uRows.resize(n, d);
        if (auto st = source.unembeddingRows(r0, n, uRows.data()); !st) return st.error();
        u = uRows.data();
      }
      product(true, d, d, n, u, d, eRows.data(), d, 1.0f, ue.data(), d, threads);
      if (!step()) return cancelled;
    }
    ue.array().colwise() *= gf.transpose().array();
  }

  // The chosen head: its layer first, so every other layer is read once and composed as it comes.
  auto chosenLayer = source.layer(opt.layer);
  if (!chosenLayer) return chosenLayer.error();
  ChosenHead ch;
  {
    const CircuitLayer& w = *chosenLayer;
    const std::int64_t kv = opt.head / group;
    ch.a = w.wq.middleCols(opt.head * dk, dk);
    ch.b = w.wk.middleCols(kv * dk, dk);
    ch.c = w.wv.middleCols(kv * dk, dk);
    ch.d = w.wo.middleRows(opt.head * dk, dk);
    ch.abc.resize(d, 3 * dk);
    ch.abc << ch.a, ch.b, ch.c;
    ch.gA = gramOfColumns(ch.a);
    ch.gB = gramOfColumns(ch.b);
    ch.gC = gramOfColumns(ch.c);
    ch.hD = gramOfRows(ch.d);
    ch.qk2 = traceOfProduct(ch.gA, ch.gB);
    ch.ov2 = traceOfProduct(ch.gC, ch.hD);
    out.qk.noalias() = ch.a * ch.b.transpose();  // (d, d) W_q^i W_k^iᵀ in y = x W
    out.ov.noalias() = ch.c * ch.d;              // (d, d) W_v^i W_o^i
    ch.dUE.noalias() = ch.d * ue;                // (d_k, d) D U E: the chosen head as b of a virtual head
    ch.ueC.noalias() = ue * ch.c;                // (d, d_k) U E C: the chosen head as a
  }

  // Token space over the text's distinct tokens (first occurrence first).
  RowMatrix es, us;  // E_s rows, unembedding rows with the gain (n, d): kept for the picked pair
  {
    std::unordered_set<int> seen;
    for (int id : tokens) {
      if (static_cast<int>(out.tokenIds.size()) >= opt.maxTokens) break;
      if (seen.insert(id).second) out.tokenIds.push_back(id);
    }
    const std::int64_t n = static_cast<std::int64_t>(out.tokenIds.size());
    es.resize(n, d);
    us.resize(n, d);
    for (std::int64_t i = 0; i < n; ++i) {
      const int id = out.tokenIds[static_cast<std::size_t>(i)];
      if (auto st = source.embeddingRows(id, 1, es.row(i).data()); !st) return st.error();
      if (auto st = source.unembeddingRows(id, 1, us.row(i).data()); !st) return st.error();
    }
    us.array().rowwise() *= gf.array();  // U_sᵀ: the final norm's gain folded in
    const RowMatrix esA = es * ch.a, esB = es * ch.b, esC = es * ch.c;  // (n, d_k)
    const RowMatrix dUs = ch.d * us.transpose();                       // (d_k, n)
    out.qkTokens.noalias() = esA * esB.transpose();  // (n, n) E_s QK E_sᵀ
    out.ovTokens.noalias() = esC * dUs;              // (n, n) E_s OV U_s
    out.diagonalTop = diagonalTopShare(out.ovTokens);
  }

  // Position space over the text's positions 0 … p − 1, with the same factors.
  {
    const std::int64_t p = std::min<std::int64_t>({source.learnedPositions(), static_cast<std::int64_t>(tokens.size()),
                                                    static_cast<std::int64_t>(opt.maxTokens)});
    if (p > 0) {
      RowMatrix ps(p, d);  // P_s (p, d)
      if (auto st = source.positionRows(0, p, ps.data()); !st) return st.error();
      const RowMatrix psA = ps * ch.a, psB = ps * ch.b;  // (p, d_k)
      out.qkPositions.noalias() = psA * psB.transpose();  // (p, p) P_s QK P_sᵀ
    }
  }

  // [SECTION] per-layer work: copying of every head, composition with the chosen head.
  OvFactors pickedA, pickedB;  // the picked pair's heads, kept as their layers come
  out.copying.assign(static_cast<std::size_t>(s.layers) * static_cast<std::size_t>(s.heads), 0.0);
  std::vector<std::vector<Composition>> readsOf(static_cast<std::size_t>(s.layers)),
      readByOf(static_cast<std::size_t>(s.layers));
  const auto doLayer = [&](int l, const CircuitLayer& w) {
    // Copying: W_o^i (U E) W_v^kv (d_k, d_k) has E OV U's nonzero spectrum; U·E·W_v once per layer.
    RowMatrix uev(d, kvw);
    product(false, d, kvw, d, ue.data(), d, w.wv.data(), kvw, 0.0f, uev.data(), kvw, threads);
    std::vector<std::vector<std::complex<double>>> eig(static_cast<std::size_t>(s.heads));
    parallelFor(threads, s.heads, [&](std::int64_t i) {
      RowMatrix small;
      small.noalias() = w.wo.middleRows(i * dk, dk) * uev.middleCols((i / group) * dk, dk);
      eig[static_cast<std::size_t>(i)] = eigenvaluesOf(small);
    });
    for (int i = 0; i < s.heads; ++i) {
      out.copying[static_cast<std::size_t>(l * s.heads + i)] = copyingScore(eig[static_cast<std::size_t>(i)]);
    }
    if (l == opt.layer) out.eigenvalues = eig[static_cast<std::size_t>(opt.head)];

    if (opt.pair && l == opt.pair->fromLayer) {
      pickedA.c = w.wv.middleCols((opt.pair->fromHead / group) * dk, dk);
      pickedA.d = w.wo.middleRows(opt.pair->fromHead * dk, dk);
    }
    if (opt.pair && l == opt.pair->toLayer) {
      pickedB.c = w.wv.middleCols((opt.pair->toHead / group) * dk, dk);
      pickedB.d = w.wo.middleRows(opt.pair->toHead * dk, dk);
    }

    std::vector<RowMatrixD> gC(static_cast<std::size_t>(N)), hD(static_cast<std::size_t>(s.heads));
    for (std::int64_t j = 0; j < N; ++j) gC[static_cast<std::size_t>(j)] = gramOfColumns(w.wv.middleCols(j * dk, dk));
    for (std::int64_t i = 0; i < s.heads; ++i) hD[static_cast<std::size_t>(i)] = gramOfRows(w.wo.middleRows(i * dk, dk));
    auto& list = l < opt.layer ? readsOf[static_cast<std::size_t>(l)] : readByOf[static_cast<std::size_t>(l)];
    if (l < opt.layer) {
      // b = the chosen head reads head a of layer l: W_o (d, d) · [A | B | C] (d, 3 d_k) gives every
      // D_a A, D_a B, D_a C at once (rows a d_k …).
      RowMatrix stack(d, 3 * dk);
      product(false, d, 3 * dk, d, w.wo.data(), d, ch.abc.data(), 3 * dk, 0.0f, stack.data(), 3 * dk, threads);
      RowMatrix dUEv(dk, kvw);  // (D_b U E) W_v: D_b U E C_a of every head a of layer l
      product(false, dk, kvw, d, ch.dUE.data(), d, w.wv.data(), kvw, 0.0f, dUEv.data(), kvw, threads);
      for (int a = 0; a < s.heads; ++a) {
        const RowMatrixD m = stack.middleRows(a * dk, dk).cast<double>();  // (d_k, 3 d_k)
        const RowMatrixD& gCa = gC[static_cast<std::size_t>(a / group)];
        const double ovA2 = traceOfProduct(gCa, hD[static_cast<std::size_t>(a)]);
        Composition c;
        c.fromLayer = l;
        c.fromHead = a;
        c.toLayer = opt.layer;
        c.toHead = opt.head;
        // OV^a QK^b = C_a (D_a A) Bᵀ;  QK^b OV^aᵀ = A (D_a B)ᵀ C_aᵀ;  OV^a OV^b = C_a (D_a C) D.
        c.q = ratioOf(factoredNorm2(gCa, m.leftCols(dk), ch.gB), ovA2, ch.qk2);
        c.k = ratioOf(factoredNorm2(ch.gA, m.middleCols(dk, dk).transpose(), gCa), ovA2, ch.qk2);
        c.v = ratioOf(factoredNorm2(gCa, m.rightCols(dk), ch.hD), ovA2, ch.ov2);
        c.virtualCopying = virtualCopyingOf(dUEv.middleCols((a / group) * dk, dk),
                                            stack.middleRows(a * dk, dk).rightCols(dk));
        list.push_back(c);
      }
    } else if (l > opt.layer) {
      // a = the chosen head is read by head b of layer l: D (d_k, d) · [W_q | W_k | W_v].
      const std::int64_t width = d + 2 * kvw;
      RowMatrix stack(dk, width);  // [D W_q | D W_k | D W_v]
      product(false, dk, d, d, ch.d.data(), d, w.wq.data(), d, 0.0f, stack.data(), width, threads);
      product(false, dk, kvw, d, ch.d.data(), d, w.wk.data(), kvw, 0.0f, stack.data() + d, width, threads);
      product(false, dk, kvw, d, ch.d.data(), d, w.wv.data(), kvw, 0.0f, stack.data() + d + kvw, width, threads);
      RowMatrix woUEC(static_cast<std::int64_t>(s.heads) * dk, dk);  // W_o U E C: D_b U E C_a of every head b
      product(false, s.heads * dk, dk, d, w.wo.data(), d, ch.ueC.data(), dk, 0.0f, woUEC.data(), dk, threads);
      std::vector<RowMatrixD> gB(static_cast<std::size_t>(N));
      for (std::int64_t j = 0; j < N; ++j) gB[static_cast<std::size_t>(j)] = gramOfColumns(w.wk.middleCols(j * dk, dk));
      for (int b = 0; b < s.heads; ++b) {
        const std::int64_t kv = b / group;
        const RowMatrixD gAb = gramOfColumns(w.wq.middleCols(b * dk, dk));
        const RowMatrixD& gBb = gB[static_cast<std::size_t>(kv)];
        const double qkB2 = traceOfProduct(gAb, gBb), ovB2 = traceOfProduct(gC[static_cast<std::size_t>(kv)], hD[static_cast<std::size_t>(b)]);
        const RowMatrixD mQ = stack.middleCols(b * dk, dk).cast<double>();
        const RowMatrixD mK = stack.middleCols(d + kv * dk, dk).cast<double>();
        const RowMatrixD mV = stack.middleCols(d + kvw + kv * dk, dk).cast<double>();
        Composition c;
        c.fromLayer = opt.layer;
        c.fromHead = opt.head;
        c.toLayer = l;
        c.toHead = b;
        c.q = ratioOf(factoredNorm2(ch.gC, mQ, gBb), ch.ov2, qkB2);
        c.k = ratioOf(factoredNorm2(gAb, mK.transpose(), ch.gC), ch.ov2, qkB2);
        c.v = ratioOf(factoredNorm2(ch.gC, mV, hD[static_cast<std::size_t>(b)]), ch.ov2, ovB2);
        c.virtualCopying = virtualCopyingOf(woUEC.middleRows(b * dk, dk), stack.middleCols(d + kvw + kv * dk, dk));
        list.push_back(c);
      }
    }
  };

  doLayer(opt.layer, *chosenLayer);
  *chosenLayer = CircuitLayer{};  // the chosen head keeps its own factors
  if (!step()) return cancelled;
  for (int l = 0; l < s.layers; ++l) {
    if (l == opt.layer) continue;
    auto w = source.layer(l);
    if (!w) return w.error();
    doLayer(l, *w);
    if (!step()) return cancelled;
  }
  for (int l = 0; l < s.layers; ++l) {
    for (auto& c : readsOf[static_cast<std::size_t>(l)]) out.reads.push_back(c);
    for (auto& c : readByOf[static_cast<std::size_t>(l)]) out.readBy.push_back(c);
  }

  if (opt.pair) {  // (D_b U E C_a)(D_a C_b) and the token space (E_s C_a)(D_a C_b)(D_b U_s)
    VirtualHead v;
    v.fromLayer = opt.pair->fromLayer;
    v.fromHead = opt.pair->fromHead;
    v.toLayer = opt.pair->toLayer;
    v.toHead = opt.pair->toHead;
    const RowMatrix daCb = pickedA.d * pickedB.c;                  // (d_k, d_k)
    const RowMatrix dbUECa = (pickedB.d * ue) * pickedA.c;          // (d_k, d_k)
    v.eigenvalues = virtualSpectrum(dbUECa.cast<double>(), daCb.cast<double>());
    v.copying = copyingScore(v.eigenvalues);
    const RowMatrix left = (es * pickedA.c) * daCb;                 // (n, d_k)
    v.ovTokens.noalias() = left * (pickedB.d * us.transpose());     // (n, n)
    v.diagonalTop = v.ovTokens.size() > 0 ? diagonalTopShare(v.ovTokens) : -1.0;
    out.picked = std::move(v);
  }

  if (opt.baseline) {
    out.baseline = *opt.baseline;
  } else {  // seconds at d_model 4096: cancellable between its chunks of samples
    auto baseline = compositionBaseline(s.dModel, s.dk(), kBaselineSamples, kBaselineSeed, threads,
                                        [&](int, int) { return step(); });
    if (!baseline) return cancelled;
    out.baseline = *baseline;
  }
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
