#include "experiments/answer_metric.hpp"

#include <algorithm>
#include <cmath>

#include "model/forward.hpp"

namespace mhascope::experiments {

const char* metricName(Metric m) { return m == Metric::LogitDiff ? "logit-diff" : "prob"; }

void finalNormRow(const model::ModelSpec& spec, const RowMatrix& x, const RowVector& w, const RowVector& b,
                  RowMatrix& out) {
  if (spec.family->norm == model::NormKind::LayerNorm) {
    model::layerNorm(x, w, b, spec.normEps, out);
  } else {
    model::rmsNorm(x, w, spec.normEps, out);
  }
}

Result<AnswerMetric> AnswerMetric::make(const model::ModelFolder& model, const Answer& answer) {
  const int V = model.spec().vocab;
  auto check = [&](int id, const char* which) -> Status {
    if (id < 0 || id >= V) {
      return makeError(std::string("the ") + which + " answer's token id " + std::to_string(id) +
                       " is outside the vocabulary of " + std::to_string(V) + " (" + model.dir() + ")");
    }
    return Ok{};
  };
  if (auto s = check(answer.right, "right"); !s) return s.error();
  AnswerMetric m;
  m.model_ = &model;
  m.answer_ = answer;
  if (auto s = model.finalNorm(m.normW_, m.normB_); !s) return s.error();
  if (answer.metric == Metric::LogitDiff) {
    if (auto s = check(answer.wrong, "wrong"); !s) return s.error();
    if (answer.wrong == answer.right) {
      return makeError("the right and the wrong answer are the same token (" + std::to_string(answer.right) +
                       "): their logit difference is 0 in every run");
    }
    const model::StoredTensor& E = model.unembeddingTable();
    m.right_.resize(model.spec().dModel);
    m.wrong_.resize(model.spec().dModel);
    if (auto s = model.store().readRows(E, answer.right, 1, m.right_.data()); !s) return s.error();
    if (auto s = model.store().readRows(E, answer.wrong, 1, m.wrong_.data()); !s) return s.error();
  }
  return m;
}

Result<double> AnswerMetric::of(const RowMatrix& x) const {
  const model::ModelSpec& spec = model_->spec();
  if (answer_.metric == Metric::LogitDiff) {
    RowMatrix normed;  // (1, d_model)
    finalNormRow(spec, x, normW_, normB_, normed);
    double a = 0, b = 0;
    for (Eigen::Index c = 0; c < normed.cols(); ++c) {
      a += static_cast<double>(normed(0, c)) * right_(c);
      b += static_cast<double>(normed(0, c)) * wrong_(c);
    }
    if (spec.finalSoftcap > 0) {  // each logit capped, as the model caps them
      a = spec.finalSoftcap * std::tanh(a / spec.finalSoftcap);
      b = spec.finalSoftcap * std::tanh(b / spec.finalSoftcap);
    }
    return a - b;
  }
  RowMatrix logits;  // (1, V)
  if (auto s = model::finalLogits(*model_, x, logits); !s) return s.error();
  const float* z = logits.data();
  const double top = *std::max_element(z, z + logits.size());
  double sum = 0;
  for (Eigen::Index v = 0; v < logits.size(); ++v) sum += std::exp(static_cast<double>(z[v]) - top);
  return std::exp(static_cast<double>(z[answer_.right]) - top) / sum;
}

}  // namespace mhascope::experiments
