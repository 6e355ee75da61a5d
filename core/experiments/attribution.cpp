#include "experiments/attribution.hpp"

#include <cmath>

#include "experiments/answer_metric.hpp"
#include "experiments/stream_terms.hpp"
#include "model/forward.hpp"

namespace mhascope::experiments {

Result<LogitAttribution> attributeLogits(const model::ModelFolder& model, const std::vector<int>& tokens, int right,
                                         int wrong, int threads, std::uint64_t budget) {
  const model::ModelSpec& spec = model.spec();
  if (auto s = checkAdditiveStream(spec, "direct logit attribution"); !s) return s.error();
  if (spec.finalSoftcap > 0) {
    return makeError(std::string(spec.family->displayName) + " softcaps its logits (final_logit_softcapping " +
                     std::to_string(spec.finalSoftcap) + "), which is not linear in the stream: no direct attribution");
  }
  auto metric = AnswerMetric::make(model, {right, wrong, Metric::LogitDiff});
  if (!metric) return metric.error();
  if (tokens.empty()) return makeError("enter at least one token");
  const std::int64_t T = static_cast<std::int64_t>(tokens.size());
  const int L = spec.layers, h = spec.heads, d = spec.dModel;
  const std::int64_t last = T - 1;

  // What every writer wrote to the final stream at the final position.
  model::ForwardOptions opt;
  opt.keepAttention = false;
  opt.keepHidden = true;
  opt.threads = threads;
  opt.memoryBudgetBytes = budget;
  auto st = streamTerms(model, tokens, L, {last}, opt);
  if (!st) return st.error();
  const float* z = st->run.logits.ptr() + last * spec.vocab;

  // The frozen final norm: scale, gain, bias; the answer direction u.
  RowVector w, b;
  if (auto s = model.finalNorm(w, b); !s) return s.error();
  const Eigen::RowVectorXd x = st->stream.row(0);
  const bool layerNorm = spec.family->norm == model::NormKind::LayerNorm;
  const double mean = layerNorm ? x.mean() : 0.0;
  const double sq = (x.array() - mean).square().sum();
  const double scale = 1.0 / std::sqrt(sq / d + spec.normEps);
  RowVector ur(d), uw(d);
  const model::StoredTensor& E = model.unembeddingTable();
  if (auto s = model.store().readRows(E, right, 1, ur.data()); !s) return s.error();
  if (auto s = model.store().readRows(E, wrong, 1, uw.data()); !s) return s.error();
  // w ⊙ u: the direction a frozen-normed vector is read along
  const Eigen::RowVectorXd gu = w.cast<double>().cwiseProduct(ur.cast<double>() - uw.cast<double>());
  auto project = [&](const Eigen::RowVectorXd& v) {  // n(v) · u, in double
    const double m = layerNorm ? v.mean() : 0.0;
    return (v.array() - m).matrix().dot(gu) * scale;
  };

  LogitAttribution a;
  a.layers = L;
  a.heads = h;
  a.right = right;
  a.wrong = wrong;
  a.finalScale = scale;
  a.modelLogitDiff = static_cast<double>(z[right]) - z[wrong];
  if (b.size() == d) a.finalNormBias = b.cast<double>().dot(ur.cast<double>() - uw.cast<double>());
  a.head.assign(static_cast<std::size_t>(L * h), 0.0);
  a.outputBias.assign(static_cast<std::size_t>(L), 0.0);
  a.mlp.assign(static_cast<std::size_t>(L), 0.0);
  a.accumulated.assign(static_cast<std::size_t>(L), 0.0);
  const TermMatrix& terms = st->terms[0];
  double total = a.finalNormBias;
  for (std::size_t c = 0; c < st->writers.size(); ++c) {
    const StreamWriter& wr = st->writers[c];
    const double v = project(terms.row(static_cast<Eigen::Index>(c)));
    total += v;
    switch (wr.kind) {
      case WriterKind::TokenEmbedding: a.tokenEmbedding = v; break;
      case WriterKind::PositionEmbedding: a.positionEmbedding = v; break;
      case WriterKind::Head: a.head[static_cast<std::size_t>(wr.layer * h + wr.head)] = v; break;
      case WriterKind::OutputBias: a.outputBias[static_cast<std::size_t>(wr.layer)] = v; break;
      case WriterKind::Mlp:  // a layer's last writer: the sum through it is the lens at that layer
        a.mlp[static_cast<std::size_t>(wr.layer)] = v;
        a.accumulated[static_cast<std::size_t>(wr.layer)] = total;
        break;
    }
  }
  a.sum = total;
  return a;
}

}  // namespace mhascope::experiments
