// The number an experiment watches: the model's answer at the final position T − 1, either the logit
// difference between a right and a wrong answer token, logit[right] − logit[wrong], or the probability of the
// right one, softmax(logits)[right] over the whole vocabulary (in double, the row's maximum subtracted only for
// numerical stability). Both read the final stream row through the model's own last step: the final norm,
// the unembedding and, for a model with one, the final softcap.
#pragma once

#include <string>
#include <vector>

#include "model/model_folder.hpp"
#include "util/result.hpp"

namespace mhascope::experiments {

enum class Metric { LogitDiff, Probability };
const char* metricName(Metric m);  // "logit-diff", "prob"

struct Answer {
  int right = 0;   // the token id of the right answer
  int wrong = -1;  // the wrong one (LogitDiff only)
  Metric metric = Metric::LogitDiff;
};

// Reads the metric of final stream rows; holds the final norm and, for LogitDiff, the two unembedding rows
// (so one metric costs 2·d_model products, not the (d_model, V) unembedding).
class AnswerMetric {
 public:
  // Checks the ids against the vocabulary (and wrong ≠ right for LogitDiff); every message names the value.
  static Result<AnswerMetric> make(const model::ModelFolder& model, const Answer& answer);
  // The metric of the final stream row x (1, d_model) (before the final norm).
  Result<double> of(const RowMatrix& x) const;
  const Answer& answer() const { return answer_; }

 private:
  const model::ModelFolder* model_ = nullptr;
  Answer answer_;
  RowVector normW_, normB_;  // (1, d_model) the final norm's weight (and bias: LayerNorm)
  RowVector right_, wrong_;  // (1, d_model) the unembedding rows (LogitDiff)
};

// The final norm of one row (1, d_model), as the model computes it.
void finalNormRow(const model::ModelSpec& spec, const RowMatrix& x, const RowVector& w, const RowVector& b,
                  RowMatrix& out);

}  // namespace mhascope::experiments
