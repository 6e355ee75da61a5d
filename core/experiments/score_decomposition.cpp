#include "experiments/score_decomposition.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "attention/engine_record.hpp"
#include "model/forward.hpp"

namespace mhascope::experiments {

using model::HookPoint;

namespace {

using Vec = Eigen::RowVectorXd;

// The frozen input norm of a row x (1, d_model): its scale, and how it acts on one term.
struct FrozenNorm {
  bool layerNorm = false;
  double scale = 0;  // 1/σ or 1/rms of x
  Vec gain, bias;    // (d_model); bias empty without
  Vec of(const Vec& v) const {  // n(v) without the bias: centring (LayerNorm) and the frozen scale, times the gain
    const double m = layerNorm ? v.mean() : 0.0;
    return ((v.array() - m) * scale).matrix().cwiseProduct(gain);
  }
};

FrozenNorm freeze(const model::ModelSpec& spec, const model::LayerWeights& lw, const Vec& x) {
  FrozenNorm n;
  n.layerNorm = spec.family->norm == model::NormKind::LayerNorm;
  const double m = n.layerNorm ? x.mean() : 0.0;
  n.scale = 1.0 / std::sqrt((x.array() - m).square().mean() + spec.normEps);
  n.gain = lw.norm1.cast<double>();
  if (lw.norm1Bias.size() == x.size()) n.bias = lw.norm1Bias.cast<double>();
  return n;
}

// One side's terms at one position, each (d_k) as the scores read it: the writers' (rows of `writers`), then the
// norm's bias and the projection's bias when the layer has them. W (d_model, width) and b (width) the whole
// projection (W_q or W_k), `col` the head's first column; qkGain the q/k norm's gains (empty: none).
TermMatrix sideTerms(const TermMatrix& writers, const Vec& x, const FrozenNorm& n, const RowMatrix& W,
                     const RowVector& b, bool hasBias, Eigen::Index col, Eigen::Index dk,
                     const std::vector<float>& qkGain, float qkEps, const AttentionOptions& opt, std::int64_t position) {
  const Eigen::Index C = writers.rows();
  const Eigen::Index rows = C + (n.bias.size() ? 1 : 0) + (hasBias ? 1 : 0);
  const TermMatrix Wh = W.middleCols(col, dk).cast<double>();  // (d_model, d_k)
  TermMatrix u(rows, dk);
  for (Eigen::Index c = 0; c < C; ++c) u.row(c) = n.of(writers.row(c)) * Wh;
  Eigen::Index r = C;
  if (n.bias.size()) u.row(r++) = n.bias * Wh;
  if (hasBias) u.row(r++) = b.segment(col, dk).cast<double>();
  if (!qkGain.empty()) {
    // The q/k norm's scale frozen at this row's: rms over the head's d_k features, or over the whole projection.
    const bool whole = static_cast<Eigen::Index>(qkGain.size()) != dk;
    Vec nx = n.of(x);
    if (n.bias.size()) nx += n.bias;
    // the whole projection in float, as the forward makes it (a (d_model, h·d_k) copy in double would be large)
    Vec f = whole ? Vec((nx.cast<float>() * W).cast<double>()) : Vec(nx * Wh);
    if (hasBias) f += whole ? Vec(b.cast<double>()) : Vec(b.segment(col, dk).cast<double>());
    const double s = 1.0 / std::sqrt(f.array().square().mean() + qkEps);
    Vec g(dk);
    for (Eigen::Index j = 0; j < dk; ++j) g(j) = qkGain[static_cast<std::size_t>((whole ? col : 0) + j)];
    for (Eigen::Index a = 0; a < rows; ++a) u.row(a) = (u.row(a) * s).cwiseProduct(g);
  }
  if (opt.positions == AttnPositions::Rope) {
    // RoPE at this fixed position: the same rotation of every term, so of their sum.
    const RopeTable t = ropeTable(1, dk, position, opt.ropeBase, opt.ropeInvFreq, opt.ropeGain);
    const Eigen::Index half = dk / 2;
    for (Eigen::Index a = 0; a < rows; ++a) {
      for (Eigen::Index i = 0; i < half; ++i) {
        const Eigen::Index p0 = opt.ropeStyle == RopeStyle::Half ? i : 2 * i;
        const Eigen::Index p1 = opt.ropeStyle == RopeStyle::Half ? i + half : 2 * i + 1;
        const double c = t.cos[static_cast<std::size_t>(i)], s = t.sin[static_cast<std::size_t>(i)];
        const double v0 = u(a, p0), v1 = u(a, p1);
        u(a, p0) = v0 * c - v1 * s;
        u(a, p1) = v1 * c + v0 * s;
      }
    }
  }
  return u;
}

std::string position(std::int64_t p, const std::vector<std::string>& labels) {
  const std::string word = p < static_cast<std::int64_t>(labels.size()) ? labels[static_cast<std::size_t>(p)] : "";
  std::string s = "«";
  if (word.empty()) s += '#';
  s += word.empty() ? std::to_string(p) : word;
  s += "» (";
  s += std::to_string(p);
  s += ")";
  return s;
}

// "what head 0.3 wrote at the key (K-composition)", "the token embedding at the query", "b_k"
std::string phrase(const SideTerm& t, bool querySide) {
  const std::string side = querySide ? "the query" : "the key";
  if (t.kind == SideKind::ProjectionBias) return std::string(querySide ? "b_q" : "b_k") + " (the projection's bias)";
  if (t.kind == SideKind::NormBias) return "the input norm's bias at " + side;
  switch (t.writer.kind) {
    case WriterKind::TokenEmbedding: return "the token embedding at " + side;
    case WriterKind::PositionEmbedding: return "the position embedding at " + side;
    case WriterKind::Head:
      return "what " + writerName(t.writer) + " wrote at " + side + (querySide ? " (Q-composition)" : " (K-composition)");
    case WriterKind::OutputBias: return "layer " + std::to_string(t.writer.layer) + "'s output bias at " + side;
    case WriterKind::Mlp: return "what " + writerName(t.writer) + " wrote at " + side;
  }
  return "?";
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.4g", v);
  return buf;
}

}  // namespace

std::string sideTermName(const SideTerm& t, bool querySide) {
  if (t.kind == SideKind::ProjectionBias) return querySide ? "b_q" : "b_k";
  if (t.kind == SideKind::NormBias) return "norm bias";
  return writerName(t.writer);
}

Result<ScoreDecomposition> decomposeScore(const model::ModelFolder& model, const std::vector<int>& tokens,
                                          const ScoreRequest& rq, int threads, std::uint64_t budget) {
  const model::ModelSpec& spec = model.spec();
  if (auto s = checkAdditiveStream(spec, "the QK score decomposition"); !s) return s.error();
  if (tokens.empty()) return makeError("enter at least one token");
  const std::int64_t T = static_cast<std::int64_t>(tokens.size());
  const int L = spec.layers, h = spec.heads;
  if (rq.layer < 0 || rq.layer >= L) {
    return makeError("layer " + std::to_string(rq.layer) + " is outside 0 .. " + std::to_string(L - 1) + " (the model has " +
                     std::to_string(L) + " layers)");
  }
  if (rq.head < 0 || rq.head >= h) {
    return makeError("head " + std::to_string(rq.head) + " is outside 0 .. " + std::to_string(h - 1) + " (the model has " +
                     std::to_string(h) + " heads per layer)");
  }
  auto inRange = [&](const char* what, std::int64_t p) -> Status {
    if (p < 0 || p >= T) {
      return makeError(std::string(what) + " position " + std::to_string(p) + " is outside 0 .. " + std::to_string(T - 1) +
                       " (the text is " + std::to_string(T) + " tokens)");
    }
    return Ok{};
  };
  auto lw = model.layer(rq.layer);
  if (!lw) return lw.error();
  if (!lw->attention) return makeError("layer " + std::to_string(rq.layer) + " has no per-head W_q and W_k to split");
  const AttentionOptions opt = model::layerOptions(spec, *lw, rq.layer);
  if (opt.positions == AttnPositions::Alibi) {
    return makeError("layer " + std::to_string(rq.layer) + " adds ALiBi's bias to its scores, which is no product of a "
                     "query and a key term: no QK decomposition");
  }
  auto visible = [&](const char* what, std::int64_t k) -> Status {
    if (auto s = inRange(what, k); !s) return s;
    if (opt.causal && k > rq.query) {
      return makeError(std::string(what) + " position " + std::to_string(k) + " is after the query position " +
                       std::to_string(rq.query) + ": the causal mask hides it (its weight is 0)");
    }
    if (windowHides(opt, rq.query, k)) {
      return makeError(std::string(what) + " position " + std::to_string(k) + " is outside layer " +
                       std::to_string(rq.layer) + "'s sliding window of " + std::to_string(opt.window) +
                       " from the query position " + std::to_string(rq.query) + " (its weight is 0)");
    }
    return Ok{};
  };
  if (auto s = inRange("query", rq.query); !s) return s.error();
  if (auto s = visible("key", rq.key); !s) return s.error();
  const bool versus = rq.versus >= 0;
  if (versus) {
    if (auto s = visible("versus key", rq.versus); !s) return s.error();
    if (rq.versus == rq.key) return makeError("the versus key " + std::to_string(rq.versus) + " is the key itself");
  }

  const int N = opt.kvHeads > 0 ? opt.kvHeads : h;
  const Eigen::Index dk = spec.dk();
  ScoreDecomposition d;
  d.request = rq;
  d.kvHead = rq.head / (h / N);
  d.scale = scaleFactorFor(opt.scale, spec.dModel, dk, opt.scaleFactor);
  d.softcap = opt.softcap;

  // The forward's own queries, keys and weights of the cell (what its scores read).
  Vec ownQ(dk), ownK(dk), ownV(dk);
  model::ForwardOptions fo;
  fo.keepAttention = false;
  fo.keepHidden = false;
  fo.threads = threads;
  fo.memoryBudgetBytes = budget;
  fo.hook = [&](const model::HookSite& site, MatrixMap v) {
    if (site.layer != rq.layer) return;
    if (site.point == HookPoint::Query) ownQ = v.row(rq.head * T + rq.query).cast<double>();
    if (site.point == HookPoint::Key) {
      ownK = v.row(d.kvHead * T + rq.key).cast<double>();
      if (versus) ownV = v.row(d.kvHead * T + rq.versus).cast<double>();
    }
    if (site.point == HookPoint::Pattern) {
      d.weight = v(rq.head * T + rq.query, rq.key);
      if (versus) d.weightVersus = v(rq.head * T + rq.query, rq.versus);
    }
  };
  std::vector<std::int64_t> positions = {rq.query, rq.key};
  if (versus) positions.push_back(rq.versus);
  auto st = streamTerms(model, tokens, rq.layer, positions, fo);
  if (!st) return st.error();
  d.streamGap = st->largestGap();
  d.modelScore = d.scale * ownQ.dot(ownK);
  d.modelScoreVersus = versus ? d.scale * ownQ.dot(ownV) : 0.0;
  d.modelValue = d.modelScore - d.modelScoreVersus;

  const MhaWeights& a = *lw->attention;
  auto side = [&](std::size_t row, bool query, double& normScale) {
    const Vec x = st->stream.row(static_cast<Eigen::Index>(row));
    const FrozenNorm n = freeze(spec, *lw, x);
    normScale = n.scale;
    return query ? sideTerms(st->terms[row], x, n, a.wq, a.bq, a.hasBias, rq.head * dk, dk, opt.qNorm, opt.qkNormEps, opt,
                             rq.query)
                 : sideTerms(st->terms[row], x, n, a.wk, a.bk, a.hasBias, d.kvHead * dk, dk, opt.kNorm, opt.qkNormEps, opt,
                             st->positions[row]);
  };
  const TermMatrix qs = side(0, true, d.normScaleQuery);
  TermMatrix ks = side(1, false, d.normScaleKey);
  if (versus) ks -= side(2, false, d.normScaleVersus);

  auto terms = [&](std::vector<SideTerm>& out) {
    for (const StreamWriter& w : st->writers) out.push_back({SideKind::Writer, w});
    if (lw->norm1Bias.size() == spec.dModel) out.push_back({SideKind::NormBias, {}});
    if (a.hasBias) out.push_back({SideKind::ProjectionBias, {}});
  };
  terms(d.queryTerms);
  terms(d.keyTerms);
  const TermMatrix cells = d.scale * (qs * ks.transpose());  // (C_q, C_k)
  d.table.assign(cells.data(), cells.data() + cells.size());
  d.queryTotals.resize(d.queryTerms.size());
  d.keyTotals.resize(d.keyTerms.size());
  for (std::size_t i = 0; i < d.queryTerms.size(); ++i) d.queryTotals[i] = cells.row(static_cast<Eigen::Index>(i)).sum();
  for (std::size_t j = 0; j < d.keyTerms.size(); ++j) d.keyTotals[j] = cells.col(static_cast<Eigen::Index>(j)).sum();
  d.sum = cells.sum();
  return d;
}

std::vector<std::pair<std::size_t, std::size_t>> largestCells(const ScoreDecomposition& d, std::size_t count) {
  std::vector<std::size_t> order(d.table.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  count = std::min(count, order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(count), order.end(),
                    [&](std::size_t x, std::size_t y) { return std::abs(d.table[x]) > std::abs(d.table[y]); });
  std::vector<std::pair<std::size_t, std::size_t>> out;
  const std::size_t Ck = d.keyTerms.size();
  for (std::size_t i = 0; i < count; ++i) out.emplace_back(order[i] / Ck, order[i] % Ck);
  return out;
}

std::string describeScore(const ScoreDecomposition& d, const std::vector<std::string>& labels) {
  const ScoreRequest& r = d.request;
  std::string s = "head " + std::to_string(r.layer) + "." + std::to_string(r.head) + " attends from " +
                  position(r.query, labels) + " to " + position(r.key, labels);
  if (r.versus >= 0) s += " rather than to " + position(r.versus, labels);
  s += " (" + std::string(r.versus >= 0 ? "score difference " : "score ") + number(d.sum) + ")";
  const auto top = largestCells(d, 1);
  if (top.empty()) return s;
  const auto [qa, kb] = top[0];
  s += " mostly because of " + phrase(d.keyTerms[kb], false) + " and " + phrase(d.queryTerms[qa], true) + " (" +
       number(d.at(qa, kb)) + " of " + number(d.sum) + ")";
  // The heads each side's largest head term: which earlier head composes with this one, and how.
  auto largestHead = [](const std::vector<SideTerm>& terms, const std::vector<double>& totals) -> std::ptrdiff_t {
    std::ptrdiff_t best = -1;
    for (std::size_t i = 0; i < terms.size(); ++i) {
      if (terms[i].kind != SideKind::Writer || terms[i].writer.kind != WriterKind::Head) continue;
      if (best < 0 || std::abs(totals[i]) > std::abs(totals[static_cast<std::size_t>(best)])) best = static_cast<std::ptrdiff_t>(i);
    }
    return best;
  };
  const std::ptrdiff_t kh = largestHead(d.keyTerms, d.keyTotals), qh = largestHead(d.queryTerms, d.queryTotals);
  if (kh >= 0) {
    s += "; the key side's largest head term: " + writerName(d.keyTerms[static_cast<std::size_t>(kh)].writer) +
         " (K-composition, " + number(d.keyTotals[static_cast<std::size_t>(kh)]) + " against the whole query)";
  }
  if (qh >= 0) {
    s += "; the query side's: " + writerName(d.queryTerms[static_cast<std::size_t>(qh)].writer) + " (Q-composition, " +
         number(d.queryTotals[static_cast<std::size_t>(qh)]) + " against the whole key)";
  }
  return s;
}

}  // namespace mhascope::experiments
