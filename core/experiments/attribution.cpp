#include "experiments/attribution.hpp"

#include <cmath>

#include "experiments/answer_metric.hpp"
#include "model/forward.hpp"

namespace mhascope::experiments {

using model::HookPoint;

Result<LogitAttribution> attributeLogits(const model::ModelFolder& model, const std::vector<int>& tokens, int right,
                                         int wrong, int threads, std::uint64_t budget) {
  const model::ModelSpec& spec = model.spec();
  if (!spec.family->normsBefore() || spec.family->normsAfter()) {
    return makeError(std::string("direct logit attribution needs blocks that add their sublayers' outputs to the stream "
                                 "as they are; ") + spec.family->displayName +
                     " norms each sublayer's output before adding it, which one frozen scale does not make linear");
  }
  if (spec.finalSoftcap > 0) {
    return makeError(std::string(spec.family->displayName) + " softcaps its logits (final_logit_softcapping " +
                     std::to_string(spec.finalSoftcap) + "), which is not linear in the stream: no direct attribution");
  }
  auto metric = AnswerMetric::make(model, {right, wrong, Metric::LogitDiff});
  if (!metric) return metric.error();
  if (tokens.empty()) return makeError("enter at least one token");
  const std::int64_t T = static_cast<std::int64_t>(tokens.size());
  const int L = spec.layers, h = spec.heads, d = spec.dModel;
  const Eigen::Index last = static_cast<Eigen::Index>(T - 1), dk = spec.dk();

  // The final position's rows of what every component wrote.
  RowMatrix embedded(1, d), concat(L, static_cast<Eigen::Index>(h) * dk), mlp(L, d);
  model::ForwardOptions opt;
  opt.keepAttention = false;
  opt.keepHidden = true;
  opt.threads = threads;
  opt.memoryBudgetBytes = budget;
  opt.hook = [&](const model::HookSite& site, MatrixMap v) {
    if (site.point == HookPoint::ResidPre && site.layer == 0) embedded = v.row(last);
    if (site.point == HookPoint::HeadOut) concat.row(site.layer) = v.row(last);
    if (site.point == HookPoint::MlpOut) mlp.row(site.layer) = v.row(last);
  };
  auto run = model::runForward(model, tokens, opt);
  if (!run) return run.error();
  const float* z = run->logits.ptr() + last * spec.vocab;

  // The frozen final norm: scale, gain, bias; the answer direction u.
  RowVector w, b;
  if (auto s = model.finalNorm(w, b); !s) return s.error();
  const Tensor& hidden = run->hidden.back();  // (T, d_model)
  RowVector x(d);
  for (int c = 0; c < d; ++c) x(c) = hidden.data[static_cast<std::size_t>(last * d + c)];
  const bool layerNorm = spec.family->norm == model::NormKind::LayerNorm;
  double mean = 0, sq = 0;
  for (int c = 0; c < d; ++c) mean += x(c);
  mean /= d;
  for (int c = 0; c < d; ++c) sq += layerNorm ? (x(c) - mean) * (x(c) - mean) : static_cast<double>(x(c)) * x(c);
  const double scale = 1.0 / std::sqrt(sq / d + spec.normEps);
  RowVector ur(d), uw(d);
  const model::StoredTensor& E = model.unembeddingTable();
  if (auto s = model.store().readRows(E, right, 1, ur.data()); !s) return s.error();
  if (auto s = model.store().readRows(E, wrong, 1, uw.data()); !s) return s.error();
  std::vector<double> gu(static_cast<std::size_t>(d));  // w ⊙ u: the direction a frozen-normed vector is read along
  for (int c = 0; c < d; ++c) gu[static_cast<std::size_t>(c)] = static_cast<double>(w(c)) * (static_cast<double>(ur(c)) - uw(c));
  auto project = [&](const double* v) {  // n(v) · u, in double
    double m = 0;
    if (layerNorm) {
      for (int c = 0; c < d; ++c) m += v[c];
      m /= d;
    }
    double dot = 0;
    for (int c = 0; c < d; ++c) dot += (v[c] - m) * gu[static_cast<std::size_t>(c)];
    return dot * scale;
  };
  std::vector<double> v(static_cast<std::size_t>(d));
  auto projectRow = [&](const auto& row) {
    for (int c = 0; c < d; ++c) v[static_cast<std::size_t>(c)] = row(c);
    return project(v.data());
  };

  LogitAttribution a;
  a.layers = L;
  a.heads = h;
  a.right = right;
  a.wrong = wrong;
  a.finalScale = scale;
  a.modelLogitDiff = static_cast<double>(z[right]) - z[wrong];
  RowVector pos = RowVector::Zero(d);
  if (spec.family->positions == model::PositionKind::Learned) {
    if (auto s = model.store().readRows(model.positionTable(), last, 1, pos.data()); !s) return s.error();
  }
  a.positionEmbedding = spec.family->positions == model::PositionKind::Learned ? projectRow(pos) : 0.0;
  a.tokenEmbedding = projectRow(RowVector(embedded.row(0) - pos));
  if (b.size() == d) {
    for (int c = 0; c < d; ++c) a.finalNormBias += static_cast<double>(b(c)) * (static_cast<double>(ur(c)) - uw(c));
  }
  a.head.assign(static_cast<std::size_t>(L * h), 0.0);
  a.outputBias.assign(static_cast<std::size_t>(L), 0.0);
  a.mlp.assign(static_cast<std::size_t>(L), 0.0);
  a.accumulated.assign(static_cast<std::size_t>(L), 0.0);
  double total = a.tokenEmbedding + a.positionEmbedding + a.finalNormBias;
  for (int l = 0; l < L; ++l) {
    auto lw = model.layer(l);
    if (!lw) return lw.error();
    const RowMatrix& wo = lw->attention->wo;  // (h·d_k, d_model)
    for (int i = 0; i < h; ++i) {
      const RowVector term = concat.row(l).segment(i * dk, dk) * wo.middleRows(i * dk, dk);  // (1, d_model)
      a.head[static_cast<std::size_t>(l * h + i)] = projectRow(term);
      total += a.head[static_cast<std::size_t>(l * h + i)];
    }
    if (lw->attention->hasBias) a.outputBias[static_cast<std::size_t>(l)] = projectRow(lw->attention->bo);
    a.mlp[static_cast<std::size_t>(l)] = projectRow(mlp.row(l));
    total += a.outputBias[static_cast<std::size_t>(l)] + a.mlp[static_cast<std::size_t>(l)];
    a.accumulated[static_cast<std::size_t>(l)] = total;
  }
  a.sum = total;
  return a;
}

}  // namespace mhascope::experiments
