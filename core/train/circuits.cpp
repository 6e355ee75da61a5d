// QK / OV circuits, composition scores with their random baseline and copying scores
// (definitions in circuits.hpp). Products and norms in double: a score is a ratio of
// Frobenius norms, and the eigenvalue sums cancel.
#include "train/circuits.hpp"

#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "attention/random.hpp"
#include "util/thread_pool.hpp"

namespace mhascope::train {

namespace {

// Head i's d_k rows of one projection in in_proj_weight (3 d_model, d_model): block 0 = W_q,
// 1 = W_k, 2 = W_v.
RowMatrixD projectionRows(const GptParams& p, int layer, int head, int block) {
  const int d = p.cfg.dModel, dk = d / p.cfg.heads, n = p.cfg.kv();
  // With N K/V heads, W_k and W_v have N·d_k rows and query head i reads K/V head i / (h/N).
  const int first = block == 0 ? head * dk : d + (block - 1) * n * dk + (head / (p.cfg.heads / n)) * dk;
  return p.blocks[static_cast<std::size_t>(layer)].inW.middleRows(first, dk).cast<double>();
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

}  // namespace

// The imaginary parts of a real matrix's spectrum cancel in pairs, so the real parts' sum is the sum.
double copyingScore(const std::vector<std::complex<double>>& eig) {
  double re = 0, mod = 0;
  for (const auto& l : eig) {
    re += l.real();
    mod += std::abs(l);
  }
  return mod > 0 ? re / mod : 0.0;
}

RowMatrix headQK(const GptParams& p, int layer, int head) { return qkD(p, layer, head).cast<float>(); }
RowMatrix headOV(const GptParams& p, int layer, int head) { return ovD(p, layer, head).cast<float>(); }

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

Status checkCircuitsInput(const GptParams& p) {
  const int d = p.cfg.dModel;
  if (p.cfg.heads < 1 || d < 1 || d % p.cfg.heads != 0 || p.blocks.size() != static_cast<std::size_t>(p.cfg.layers)) {
    return makeError("the circuits need d_model (" + std::to_string(d) + ") divisible by h (" +
                     std::to_string(p.cfg.heads) + ") and one block per layer");
  }
  for (std::size_t l = 0; l < p.blocks.size(); ++l) {
    const auto& b = p.blocks[l];
    if (b.inW.rows() != 3 * d || b.inW.cols() != d || b.outW.rows() != d || b.outW.cols() != d) {
      return makeError("the circuits read W_q, W_k and W_v of every head (3 d_model = " + std::to_string(3 * d) +
                       " rows of in_proj_weight); layer " + std::to_string(l) + " has " + std::to_string(b.inW.rows()) +
                       " (K/V heads shared by groups of query heads are not supported by the circuits yet)");
    }
  }
  return Ok{};
}

Circuits computeCircuits(const GptParams& p, std::optional<double> baseline) {
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
  out.baseline = baseline ? *baseline : compositionBaseline(out.dModel, out.dk);
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

const Composition* strongestPair(const Circuits& c, char kind) {
  const Composition* best = nullptr;
  for (const Composition& p : c.pairs) {
    if (!best || compositionScore(p, kind) > compositionScore(*best, kind)) best = &p;
  }
  return best;
}

namespace {

std::string fixed3(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  return buf;
}

}  // namespace

const char* compositionMeaning(char kind) {
  switch (kind) {
    case 'Q': return "Q-composition: the later head's queries read what the earlier head wrote (where it looks from).";
    case 'K': return "K-composition: the later head's keys read what the earlier head wrote — how an induction head "
                     "finds the token after an earlier copy of its own, through a previous-token head's output.";
    default: return "V-composition: the later head's values read what the earlier head wrote (what it moves on is "
                    "a mix of the earlier head's output).";
  }
}

std::string headName(int layer, int head) { return "layer " + std::to_string(layer) + " head " + std::to_string(head); }

std::string compositionText(const Circuits& c, char kind) {
  const Composition* best = strongestPair(c, kind);
  if (!best) {
    return "No pairs: this model has " + std::to_string(c.layers) +
           " layer, and composition needs a head of a later layer reading one of an earlier layer.";
  }
  const double score = compositionScore(*best, kind);
  std::string s = std::string("Strongest ") + kind + "-composition: " + headName(best->fromLayer, best->fromHead) +
                  " → " + headName(best->toLayer, best->toHead) + ", " + fixed3(score) + " against the random baseline " +
                  fixed3(c.baseline);
  if (c.baseline > 0) {
    char ratio[32];
    std::snprintf(ratio, sizeof ratio, " (%.1f times)", score / c.baseline);
    s += ratio;
  }
  s += ". ";
  s += compositionMeaning(kind);
  s += score <= c.baseline ? " No pair is above the baseline: no head reads another this way more than chance."
                           : " Scores near the baseline mean no more than chance.";
  return s;
}

std::string copyingText(const Circuits& c) {
  if (c.perHead.empty()) return "";
  const auto [lo, hi] = std::minmax_element(c.perHead.begin(), c.perHead.end(),
                                            [](const HeadCircuit& a, const HeadCircuit& b) { return a.copying < b.copying; });
  return "Copying score (the eigenvalues of E OV U: their sum over the sum of their moduli): highest " +
         headName(hi->layer, hi->head) + " " + fixed3(hi->copying) + ", lowest " + headName(lo->layer, lo->head) + " " +
         fixed3(lo->copying) + ". 1 means every eigenvalue is positive real: attending to a token raises that same "
         "token's logit, as an induction head's copy does; near 0 the head moves tokens without copying them; "
         "below 0 it lowers them.";
}

std::string headCircuitText(const Circuits& c, int layer, int head) {
  if (layer < 0 || layer >= c.layers || head < 0 || head >= c.heads) return "";
  const HeadCircuit& h = c.at(layer, head);
  std::string s = headName(layer, head) + ": copying score " + fixed3(h.copying) + ", ||QK||_F " +
                  fixed3(static_cast<double>(h.qk.norm())) + ", ||OV||_F " + fixed3(static_cast<double>(h.ov.norm())) +
                  ". QK: query x_t scores key x_j with x_t QK x_jT; OV: the head writes x_j OV for each key it attends to.";
  if (c.tokenSpace) {
    s += " E QK ET: which token looks at which (a previous-token head finds its key by position, which this leaves "
         "out: little structure there is expected). E OV U: attending to a token (row) raises the logits of the "
         "tokens in its bright cells; a copying head has a bright diagonal.";
  } else {
    s += " The token-space matrices are left out above a vocabulary of " + std::to_string(kMaxTokenSpaceVocab) + ".";
  }
  return s;
}

}  // namespace mhascope::train
