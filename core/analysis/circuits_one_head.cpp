// computeOneHeadCircuits of circuits.hpp: the circuits around one head, from any LayerSource. The
// wide products (U·E over the vocabulary, U·E·W_v, W_o against the chosen head's factors) in float
// through the project's SGEMM in fixed column chunks shared out over the threads (the same sums
// whatever the thread count); every composition score from d_k x d_k products through the
// low-rank identity (factoredNorm2), the traces and eigenvalues in double.
#include "analysis/circuits.hpp"

#include <algorithm>
#include <cmath>
#include <new>
#include <unordered_set>

#include "kernels/gemm.hpp"
#include "util/decompositions.hpp"
#include "util/thread_pool.hpp"

namespace mhascope::analysis {

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
  // h·d_k need not be d_model (heads wider than d_model / h, a latent layer's padded heads): W_q is (d, hq), W_o (hq, d).
  const std::int64_t d = s.dModel, dk = s.dk(), N = s.kvHeads, kvw = N * dk, hq = static_cast<std::int64_t>(s.heads) * dk,
                     V = s.vocab;
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
      // b = the chosen head reads head a of layer l: W_o (h d_k, d) · [A | B | C] (d, 3 d_k) gives every
      // D_a A, D_a B, D_a C at once (rows a d_k …).
      RowMatrix stack(hq, 3 * dk);
      product(false, hq, 3 * dk, d, w.wo.data(), d, ch.abc.data(), 3 * dk, 0.0f, stack.data(), 3 * dk, threads);
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
        c.q = compositionRatio(factoredNorm2(gCa, m.leftCols(dk), ch.gB), ovA2, ch.qk2);
        c.k = compositionRatio(factoredNorm2(ch.gA, m.middleCols(dk, dk).transpose(), gCa), ovA2, ch.qk2);
        c.v = compositionRatio(factoredNorm2(gCa, m.rightCols(dk), ch.hD), ovA2, ch.ov2);
        c.virtualCopying = virtualCopyingOf(dUEv.middleCols((a / group) * dk, dk),
                                            stack.middleRows(a * dk, dk).rightCols(dk));
        list.push_back(c);
      }
    } else if (l > opt.layer) {
      // a = the chosen head is read by head b of layer l: D (d_k, d) · [W_q | W_k | W_v].
      const std::int64_t width = hq + 2 * kvw;
      RowMatrix stack(dk, width);  // [D W_q | D W_k | D W_v]
      product(false, dk, hq, d, ch.d.data(), d, w.wq.data(), hq, 0.0f, stack.data(), width, threads);
      product(false, dk, kvw, d, ch.d.data(), d, w.wk.data(), kvw, 0.0f, stack.data() + hq, width, threads);
      product(false, dk, kvw, d, ch.d.data(), d, w.wv.data(), kvw, 0.0f, stack.data() + hq + kvw, width, threads);
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
        const RowMatrixD mK = stack.middleCols(hq + kv * dk, dk).cast<double>();
        const RowMatrixD mV = stack.middleCols(hq + kvw + kv * dk, dk).cast<double>();
        Composition c;
        c.fromLayer = opt.layer;
        c.fromHead = opt.head;
        c.toLayer = l;
        c.toHead = b;
        c.q = compositionRatio(factoredNorm2(ch.gC, mQ, gBb), ch.ov2, qkB2);
        c.k = compositionRatio(factoredNorm2(gAb, mK.transpose(), ch.gC), ch.ov2, qkB2);
        c.v = compositionRatio(factoredNorm2(ch.gC, mV, hD[static_cast<std::size_t>(b)]), ch.ov2, ovB2);
        c.virtualCopying = virtualCopyingOf(woUEC.middleRows(b * dk, dk), stack.middleCols(hq + kvw + kv * dk, dk));
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

}  // namespace mhascope::analysis
