// Cell — one score cell taken apart, and its row's softmax.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "lessons/common.hpp"
#include "lessons/cell.hpp"

namespace mhascope {

using namespace lesson_detail;  // NOLINT(google-build-using-namespace): the lessons' shared helpers

Result<CellBreakdown> cellBreakdown(const Trace& t, int b, int head, int query, int key) {
  if (t.stages.size() != static_cast<std::size_t>(kStageCount)) return makeError("no trace computed yet");
  auto range = [](const char* what, int v, int n) -> Status {
    if (v < 0 || v >= n) {
      return makeError(std::string(what) + " " + std::to_string(v) + " is outside 0.." + std::to_string(n - 1));
    }
    return Ok{};
  };
  for (Status s : {range("batch item", b, t.batch), range("head", head, t.heads), range("query", query, t.tq),
                   range("key", key, t.tk)}) {
    if (!s) return s.error();
  }
  CellBreakdown c;
  c.batchIndex = b;
  c.head = head;
  c.query = query;
  c.key = key;
  const std::int64_t bh = static_cast<std::int64_t>(b) * t.heads + head;
  const float* qv = t.tensor(StageId::QHeads).ptr() + (bh * t.tq + query) * t.dk;
  const float* kv = t.tensor(StageId::KHeads).ptr() + (bh * t.tk + key) * t.dk;
  double absSum = 0;
  for (int i = 0; i < t.dk; ++i) {
    c.q.push_back(qv[i]);
    c.k.push_back(kv[i]);
    const double p = static_cast<double>(qv[i]) * static_cast<double>(kv[i]);
    c.products.push_back(p);
    c.dot += p;
    absSum += std::abs(p);
  }
  const std::int64_t row = (bh * t.tq + query) * t.tk;
  c.recordedScore = t.tensor(StageId::Scores).data[idx(row + key)];
  // Float rounding of a d_k-term sum stays far below this; a hand-set score does not.
  c.handSet = std::abs(c.dot - static_cast<double>(c.recordedScore)) > 1e-4 * (1.0 + absSum);
  c.scaleFactor = t.scaleFactor;
  c.scaled = static_cast<double>(c.recordedScore) * static_cast<double>(c.scaleFactor);
  c.recordedScaled = t.cell(StageId::ScaledScores, row + key);
  c.blocked = t.isBlocked(b, query, key);
  std::vector<float> logits(idx(t.tk));  // the row's masked scores (one row of a lazy stage)
  t.readCells(StageId::MaskedScores, row, t.tk, logits.data());
  const float* weights = t.tensor(StageId::Weights).ptr() + row;
  c.rowMax = -std::numeric_limits<double>::infinity();
  for (int k = 0; k < t.tk; ++k) {
    c.rowLogits.push_back(logits[idx(k)]);
    c.rowRecorded.push_back(weights[k]);
    c.rowMax = std::max(c.rowMax, static_cast<double>(logits[idx(k)]));
  }
  const bool allBlocked = !std::isfinite(c.rowMax);
  for (int k = 0; k < t.tk; ++k) {
    const double e =
        allBlocked || std::isinf(logits[idx(k)]) ? 0.0 : std::exp(static_cast<double>(logits[idx(k)]) - c.rowMax);
    c.rowExp.push_back(e);
    c.rowExpSum += e;
  }
  for (int k = 0; k < t.tk; ++k) {
    const double s = c.rowExpSum > 0 ? c.rowExp[idx(k)] / c.rowExpSum : 0.0;
    c.rowSoftmax.push_back(s);
    c.rowMaxAbsDiff = std::max(c.rowMaxAbsDiff, std::abs(s - static_cast<double>(weights[k])));
  }
  if (allBlocked) c.rowMax = 0;
  return c;
}

const char* cellLessonIntro() {
  return "A score is a plain dot product: multiply query q and key k feature by feature and add up. If q and k "
         "have roughly independent, zero-mean, unit-variance entries, q . k has variance d_k, and dividing by "
         "sqrt(d_k) keeps its typical spread near 1 whatever d_k. Whether they do depends on the inputs and the "
         "initialisation (nn.MultiheadAttention's Xavier-uniform in_proj on unit-variance inputs gives entries of "
         "variance 1/2, so Var(q . k) is about d_k/4 and the scaled score's about 1/4, still the same for every "
         "d_k), and training is not bound by it. The softmax then compares the score with the rest of its row: the weight of a cell "
         "depends on every other score in the row.";
}

}  // namespace mhascope
