// A model folder's circuits around one chosen head (definitions in model_circuits.hpp and
// train/circuits.hpp). Every layer's attention weights are read once, folded with norm1's gain;
// nothing d_model x d_model is formed but the chosen head's QK and OV and U·E, and every
// composition score comes from d_k x d_k products through the low-rank identity
//   ||P1 Q1 P2 Q2||_F² = tr(Mᵀ (P1ᵀP1) M (Q2 Q2ᵀ)),  M = Q1 P2  (train::factoredNorm2).
// The wide products (U·E over the vocabulary, U·E·W_v, W_o against the chosen head's factors) run
// in float through the project's SGEMM in fixed column chunks shared out over the threads (the same
// sums whatever the thread count); the d_k x d_k traces and eigenvalues are in double.
//
// [SECTION] index: helpers · estimate · per-layer work · computeModelCircuits · texts
#include "model/model_circuits.hpp"

#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cstdio>
#include <new>
#include <unordered_set>

#include "kernels/gemm.hpp"
#include "model/forward.hpp"
#include "train/rollout.hpp"

namespace mhascope::model {

namespace {

// [SECTION] helpers

constexpr std::int64_t kVocabBlock = 4096;  // rows of E and U converted at a time
constexpr std::int64_t kChunk = 256;        // output columns per SGEMM task (fixed: thread-count independent)

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

double ratio(double product2, double x2, double y2) {
  const double den = std::sqrt(x2 * y2);
  return den > 0 ? std::sqrt(product2) / den : 0.0;
}

// One layer's attention weights with norm1's gain folded in: normed = x̂ · g, so x̂ (g W) for the
// projections that read it — row r of W_q, W_k, W_v scaled by g_r (the textbook layout y = x W).
struct FoldedLayer {
  RowMatrix wq, wk, wv, wo;  // (d, d), (d, N d_k), (d, N d_k), (d, d)
};

Result<FoldedLayer> readFolded(const ModelFolder& model, int layer) {
  auto lw = model.attentionLayer(layer);
  if (!lw) return lw.error();
  FoldedLayer f;
  MhaWeights& a = *lw->attention;
  const Eigen::ArrayXf g = lw->norm1.transpose().array();  // (d, 1)
  a.wq.array().colwise() *= g;
  a.wk.array().colwise() *= g;
  a.wv.array().colwise() *= g;
  f.wq = std::move(a.wq);
  f.wk = std::move(a.wk);
  f.wv = std::move(a.wv);
  f.wo = std::move(a.wo);
  return f;
}

// The chosen head's factors: QK = A Bᵀ, OV = C D, and the Gram matrices composition needs.
struct ChosenHead {
  RowMatrix a, b, c, d;          // (d, d_k) ×3, (d_k, d)
  RowMatrix abc;                 // (d, 3 d_k) [A | B | C]
  RowMatrixD gA, gB, gC, hD;     // AᵀA, BᵀB, CᵀC, D Dᵀ (d_k, d_k)
  double qk2 = 0, ov2 = 0;       // ||QK||_F², ||OV||_F²
};

std::vector<std::complex<double>> eigenvaluesOf(const RowMatrix& small /*(d_k, d_k)*/) {
  Eigen::EigenSolver<Eigen::MatrixXd> solver(small.cast<double>(), /*computeEigenvectors=*/false);
  if (solver.info() != Eigen::Success) return {};
  const auto& ev = solver.eigenvalues();
  return {ev.data(), ev.data() + ev.size()};
}

std::string layersName(const ModelSpec& s) { return s.arch == Arch::Gpt2 ? "n_layer" : "num_hidden_layers"; }
std::string headsName(const ModelSpec& s) { return s.arch == Arch::Gpt2 ? "n_head" : "num_attention_heads"; }

}  // namespace

// [SECTION] estimate

double estimateModelCircuitsBytes(const ModelSpec& s, std::int64_t T, const ModelCircuitsOptions& opt) {
  const double f = 4.0, d = s.dModel, dk = s.dk(), kv = static_cast<double>(s.kvHeads) * s.dk(), t = static_cast<double>(T);
  const double n = std::min<double>(std::max(0, opt.maxTokens), t);
  const double heads = static_cast<double>(s.layers) * s.heads;
  // What the result keeps: QK and OV, the token-space pair, the scores, the rollout pair.
  double kept = 2.0 * d * d * f + 2.0 * n * n * f + heads * (sizeof(double) + sizeof(train::Composition)) +
                dk * 16.0 + 2.0 * t * t * f;
  // The weights pass: U·E, a block of E and U rows, one folded layer (+ the transposed copy a
  // Llama read makes), the chosen head's factors, U·E·W_v, the products with the chosen head and
  // the Gram matrices; the token space's rows.
  double pass = d * d * f + 2.0 * kVocabBlock * d * f + (2.0 * d * d + 2.0 * d * kv) * f + d * d * f +
                7.0 * d * dk * f + d * kv * f + std::max(3.0 * d * dk, dk * (d + 2.0 * kv)) * f +
                (heads / std::max(1, s.layers) * 3.0 + 8.0) * dk * dk * 8.0 + 4.0 * n * d * f +
                6.0 * dk * d * 8.0;  // the baseline's six factors of one sample (per thread: 2 counted)
  double rollout = 0;
  if (T <= opt.rolloutMaxTokens) {
    ForwardOptions fo;
    fo.keepAttention = false;
    fo.keepHidden = false;
    rollout = estimateForwardBytes(s, T, fo) + 3.0 * t * t * 8.0;  // + rolled, its next, the layer mean
    // A Llama-family layer's nn.Linear weights are transposed as they are read: one more copy of the
    // largest (measured on Llama-3-8B's shape: without it the estimate was 10 % under the peak).
    if (s.arch != Arch::Gpt2) rollout += std::max(d * s.dFf, d * d) * f;
  }
  return kept + std::max(pass, rollout);
}

// [SECTION] computeModelCircuits

Result<ModelCircuits> computeModelCircuits(const ModelFolder& model, const std::vector<int>& tokens,
                                           const ModelCircuitsOptions& opt) {
  const ModelSpec& s = model.spec();
  const std::int64_t T = static_cast<std::int64_t>(tokens.size());
  if (T == 0) return makeError("the circuits need at least one token: enter at least one token");
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] >= s.vocab) {
      return makeError("token id " + std::to_string(tokens[i]) + " at position " + std::to_string(i) +
                       " is outside the vocabulary of " + std::to_string(s.vocab) + " (" + model.dir() + ")");
    }
  }
  if (s.arch == Arch::Gpt2 && T > s.maxPositions) {
    return makeError(std::to_string(T) + " tokens are more than the " + std::to_string(s.maxPositions) +
                     " positions GPT-2's learned table has (n_positions in " + model.dir() + "/config.json)");
  }
  if (opt.layer < 0 || opt.layer >= s.layers) {
    return makeError("layer " + std::to_string(opt.layer) + " is outside the model's " + std::to_string(s.layers) +
                     " layers (0 .. " + std::to_string(s.layers - 1) + ", " + layersName(s) + " in " + model.dir() +
                     "/config.json)");
  }
  if (opt.head < 0 || opt.head >= s.heads) {
    return makeError("head " + std::to_string(opt.head) + " is outside the model's " + std::to_string(s.heads) +
                     " heads per layer (0 .. " + std::to_string(s.heads - 1) + ", " + headsName(s) + " in " +
                     model.dir() + "/config.json)");
  }
  if (opt.maxTokens < 1) {
    return makeError("the token-space axes need at least 1 token (maxTokens is " + std::to_string(opt.maxTokens) + ")");
  }
  const double estimate = estimateModelCircuitsBytes(s, T, opt);
  if (estimate > static_cast<double>(opt.memoryBudgetBytes)) {
    return makeError("the circuits of " + train::headName(opt.layer, opt.head) + " on " + std::to_string(T) +
                     " tokens need an estimated " + formatBytes(estimate) + ", above the memory budget of " +
                     formatBytes(static_cast<double>(opt.memoryBudgetBytes)) +
                     " (raise it with --memory-budget MiB, or shorten the text)");
  }

  try {
    const int threads = std::max(1, opt.threads);
    const std::int64_t d = s.dModel, dk = s.dk(), N = s.kvHeads, kvw = N * dk, V = s.vocab;
    const int group = s.heads / s.kvHeads;  // query head i reads K/V head i / group
    const bool rolls = T <= opt.rolloutMaxTokens;
    const int vocabBlocks = static_cast<int>((V + kVocabBlock - 1) / kVocabBlock);
    const int baselineSteps = opt.baseline ? 0 : train::kBaselineChunks;
    const int total = vocabBlocks + s.layers + baselineSteps + (rolls ? s.layers : 0);
    int done = 0;
    const auto step = [&]() { return !opt.progress || opt.progress(++done, total); };
    const Error cancelled = makeError(kForwardCancelled);

    ModelCircuits out;
    out.layers = s.layers;
    out.heads = s.heads;
    out.kvHeads = s.kvHeads;
    out.dModel = s.dModel;
    out.dk = s.dk();
    out.vocab = s.vocab;
    out.layer = opt.layer;
    out.head = opt.head;

    // The final norm's gain g_f, folded into U = diag(g_f) · unembeddingᵀ (d, V).
    RowVector gf, gfBias;
    if (auto st = model.finalNorm(gf, gfBias); !st) return st.error();

    // U·E (d, d) = diag(g_f) Σ_blocks unembedding_blockᵀ E_block, a block of vocabulary rows at a time.
    const StoredTensor& embT = model.embeddingTable();
    const StoredTensor& unembT = model.unembeddingTable();
    const bool tied = &embT == &unembT;
    RowMatrix ue = RowMatrix::Zero(d, d);
    {
      RowMatrix eRows, uRows;  // (block, d)
      for (std::int64_t r0 = 0; r0 < V; r0 += kVocabBlock) {
        const std::int64_t n = std::min(kVocabBlock, V - r0);
        eRows.resize(n, d);
        if (auto st = model.store().readRows(embT, r0, n, eRows.data()); !st) return st.error();
        const float* u = eRows.data();
        if (!tied) {
          uRows.resize(n, d);
          if (auto st = model.store().readRows(unembT, r0, n, uRows.data()); !st) return st.error();
          u = uRows.data();
        }
        product(true, d, d, n, u, d, eRows.data(), d, 1.0f, ue.data(), d, threads);
        if (!step()) return cancelled;
      }
      ue.array().colwise() *= gf.transpose().array();
    }

    // The chosen head: its layer first, so every other layer is read once and composed as it comes.
    auto chosenLayer = readFolded(model, opt.layer);
    if (!chosenLayer) return chosenLayer.error();
    ChosenHead ch;
    {
      const FoldedLayer& w = *chosenLayer;
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
    }

    // Token space over the text's distinct tokens (first occurrence first).
    {
      std::unordered_set<int> seen;
      for (int id : tokens) {
        if (static_cast<int>(out.tokenIds.size()) >= opt.maxTokens) break;
        if (seen.insert(id).second) out.tokenIds.push_back(id);
      }
      const std::int64_t n = static_cast<std::int64_t>(out.tokenIds.size());
      RowMatrix es(n, d), us(n, d);  // E_s rows, unembedding rows (n, d)
      for (std::int64_t i = 0; i < n; ++i) {
        const int id = out.tokenIds[static_cast<std::size_t>(i)];
        if (auto st = model.store().readRows(embT, id, 1, es.row(i).data()); !st) return st.error();
        if (auto st = model.store().readRows(unembT, id, 1, us.row(i).data()); !st) return st.error();
      }
      us.array().rowwise() *= gf.array();  // U_sᵀ: the final norm's gain folded in
      const RowMatrix esA = es * ch.a, esB = es * ch.b, esC = es * ch.c;  // (n, d_k)
      const RowMatrix dUs = ch.d * us.transpose();                       // (d_k, n)
      out.qkTokens.noalias() = esA * esB.transpose();  // (n, n) E_s QK E_sᵀ
      out.ovTokens.noalias() = esC * dUs;              // (n, n) E_s OV U_s
    }

    // [SECTION] per-layer work: copying of every head, composition with the chosen head.
    out.copying.assign(static_cast<std::size_t>(s.layers) * static_cast<std::size_t>(s.heads), 0.0);
    std::vector<std::vector<train::Composition>> readsOf(static_cast<std::size_t>(s.layers)),
        readByOf(static_cast<std::size_t>(s.layers));
    const auto doLayer = [&](int l, const FoldedLayer& w) {
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
        out.copying[static_cast<std::size_t>(l * s.heads + i)] = train::copyingScore(eig[static_cast<std::size_t>(i)]);
      }
      if (l == opt.layer) out.eigenvalues = eig[static_cast<std::size_t>(opt.head)];

      std::vector<RowMatrixD> gC(static_cast<std::size_t>(N)), hD(static_cast<std::size_t>(s.heads));
      for (std::int64_t j = 0; j < N; ++j) gC[static_cast<std::size_t>(j)] = gramOfColumns(w.wv.middleCols(j * dk, dk));
      for (std::int64_t i = 0; i < s.heads; ++i) hD[static_cast<std::size_t>(i)] = gramOfRows(w.wo.middleRows(i * dk, dk));
      auto& list = l < opt.layer ? readsOf[static_cast<std::size_t>(l)] : readByOf[static_cast<std::size_t>(l)];
      if (l < opt.layer) {
        // b = the chosen head reads head a of layer l: W_o (d, d) · [A | B | C] (d, 3 d_k) gives every
        // D_a A, D_a B, D_a C at once (rows a d_k …).
        RowMatrix stack(d, 3 * dk);
        product(false, d, 3 * dk, d, w.wo.data(), d, ch.abc.data(), 3 * dk, 0.0f, stack.data(), 3 * dk, threads);
        for (int a = 0; a < s.heads; ++a) {
          const RowMatrixD m = stack.middleRows(a * dk, dk).cast<double>();  // (d_k, 3 d_k)
          const RowMatrixD& gCa = gC[static_cast<std::size_t>(a / group)];
          const double ovA2 = traceOfProduct(gCa, hD[static_cast<std::size_t>(a)]);
          train::Composition c;
          c.fromLayer = l;
          c.fromHead = a;
          c.toLayer = opt.layer;
          c.toHead = opt.head;
          // OV^a QK^b = C_a (D_a A) Bᵀ;  QK^b OV^aᵀ = A (D_a B)ᵀ C_aᵀ;  OV^a OV^b = C_a (D_a C) D.
          c.q = ratio(train::factoredNorm2(gCa, m.leftCols(dk), ch.gB), ovA2, ch.qk2);
          c.k = ratio(train::factoredNorm2(ch.gA, m.middleCols(dk, dk).transpose(), gCa), ovA2, ch.qk2);
          c.v = ratio(train::factoredNorm2(gCa, m.rightCols(dk), ch.hD), ovA2, ch.ov2);
          list.push_back(c);
        }
      } else if (l > opt.layer) {
        // a = the chosen head is read by head b of layer l: D (d_k, d) · [W_q | W_k | W_v].
        const std::int64_t width = d + 2 * kvw;
        RowMatrix stack(dk, width);  // [D W_q | D W_k | D W_v]
        product(false, dk, d, d, ch.d.data(), d, w.wq.data(), d, 0.0f, stack.data(), width, threads);
        product(false, dk, kvw, d, ch.d.data(), d, w.wk.data(), kvw, 0.0f, stack.data() + d, width, threads);
        product(false, dk, kvw, d, ch.d.data(), d, w.wv.data(), kvw, 0.0f, stack.data() + d + kvw, width, threads);
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
          train::Composition c;
          c.fromLayer = opt.layer;
          c.fromHead = opt.head;
          c.toLayer = l;
          c.toHead = b;
          c.q = ratio(train::factoredNorm2(ch.gC, mQ, gBb), ch.ov2, qkB2);
          c.k = ratio(train::factoredNorm2(gAb, mK.transpose(), ch.gC), ch.ov2, qkB2);
          c.v = ratio(train::factoredNorm2(ch.gC, mV, hD[static_cast<std::size_t>(b)]), ch.ov2, ovB2);
          list.push_back(c);
        }
      }
    };

    doLayer(opt.layer, *chosenLayer);
    *chosenLayer = FoldedLayer{};  // the chosen head keeps its own factors
    if (!step()) return cancelled;
    for (int l = 0; l < s.layers; ++l) {
      if (l == opt.layer) continue;
      auto w = readFolded(model, l);
      if (!w) return w.error();
      doLayer(l, *w);
      if (!step()) return cancelled;
    }
    for (int l = 0; l < s.layers; ++l) {
      for (auto& c : readsOf[static_cast<std::size_t>(l)]) out.reads.push_back(c);
      for (auto& c : readByOf[static_cast<std::size_t>(l)]) out.readBy.push_back(c);
    }

    if (opt.baseline) {
      out.baseline = *opt.baseline;
    } else {  // seconds at d_model 4096: cancellable between its chunks of samples
      auto baseline = train::compositionBaseline(s.dModel, s.dk(), train::kBaselineSamples, train::kBaselineSeed,
                                                 threads, [&](int, int) { return step(); });
      if (!baseline) return cancelled;
      out.baseline = *baseline;
    }

    // Rollout: one forward, each layer's mean over heads folded into the running product as it comes.
    if (!rolls) {
      out.rolloutWhy = "The rollout is left out above " + std::to_string(opt.rolloutMaxTokens) + " tokens (the text has " +
                       std::to_string(T) + "): it runs the whole model and holds T x T matrices.";
    } else {
      ForwardOptions fo;
      fo.traceLayer = -1;
      fo.keepAttention = false;
      fo.keepHidden = false;
      fo.memoryBudgetBytes = opt.memoryBudgetBytes;
      fo.threads = threads;
      RowMatrixD rolled = RowMatrixD::Identity(T, T);
      fo.onAttention = [&](int layer, const Tensor& weights /*(1, h, T, T)*/) {
        RowMatrixD mean = RowMatrixD::Zero(T, T);  // (T, T) mean over heads
        for (int h = 0; h < s.heads; ++h) {
          mean += Eigen::Map<const RowMatrix>(weights.ptr() + static_cast<std::int64_t>(h) * T * T, T, T).cast<double>();
        }
        mean /= s.heads;
        train::rolloutStep(mean, rolled);
        if (layer == s.layers - 1) out.lastLayerMean = mean.cast<float>();
      };
      const int before = done;
      if (opt.progress) fo.progress = [&](int layersDone) { return opt.progress(before + layersDone, total); };
      auto forward = runForward(model, tokens, fo);
      if (!forward) return forward.error();
      out.rollout = rolled.cast<float>();
    }
    return out;
  } catch (const std::bad_alloc&) {
    return makeError("not enough memory for the circuits of " + train::headName(opt.layer, opt.head) + " (estimated " +
                     formatBytes(estimate) + ")");
  }
}

// [SECTION] texts

namespace {

std::string fixed3(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  return buf;
}

std::string againstBaseline(double score, double baseline) {
  std::string s = fixed3(score) + " against the random baseline " + fixed3(baseline);
  if (baseline > 0) {
    char buf[32];
    std::snprintf(buf, sizeof buf, " (%.1f times)", score / baseline);
    s += buf;
  }
  return s;
}

const train::Composition* strongest(const std::vector<train::Composition>& list, char kind) {
  const train::Composition* best = nullptr;
  for (const auto& c : list) {
    if (!best || train::compositionScore(c, kind) > train::compositionScore(*best, kind)) best = &c;
  }
  return best;
}

}  // namespace

std::string modelCompositionText(const ModelCircuits& c, char kind) {
  const std::string me = train::headName(c.layer, c.head);
  std::string s = std::string(1, kind) + "-composition of " + me + ": ";
  if (const auto* r = strongest(c.reads, kind)) {
    s += "it reads " + train::headName(r->fromLayer, r->fromHead) + " most, " +
         againstBaseline(train::compositionScore(*r, kind), c.baseline) + "; ";
  } else {
    s += "it is in the first layer, with no earlier head to read; ";
  }
  if (const auto* r = strongest(c.readBy, kind)) {
    s += train::headName(r->toLayer, r->toHead) + " reads it most, " +
         againstBaseline(train::compositionScore(*r, kind), c.baseline) + ". ";
  } else {
    s += "it is in the last layer, so no later head reads it. ";
  }
  s += train::compositionMeaning(kind);
  s += " Scores near the baseline mean no more than chance.";
  return s;
}

std::string modelCopyingText(const ModelCircuits& c) {
  if (c.copying.empty()) return "";
  const auto [lo, hi] = std::minmax_element(c.copying.begin(), c.copying.end());
  const int iHi = static_cast<int>(hi - c.copying.begin()), iLo = static_cast<int>(lo - c.copying.begin());
  return "Copying score over the whole vocabulary of " + std::to_string(c.vocab) +
         " (the eigenvalues of E OV U: their sum over the sum of their moduli): highest " +
         train::headName(iHi / c.heads, iHi % c.heads) + " " + fixed3(*hi) + ", lowest " +
         train::headName(iLo / c.heads, iLo % c.heads) + " " + fixed3(*lo) + "; " + train::headName(c.layer, c.head) +
         " " + fixed3(c.copyingAt(c.layer, c.head)) +
         ". 1 means every eigenvalue is positive real: attending to a token raises that same token's logit, as an "
         "induction head's copy does; near 0 the head moves tokens without copying them; below 0 it lowers them.";
}

}  // namespace mhascope::model
