// Mix — mix, then split: every input feature feeds output dimension j; the split picks its head.
#include <algorithm>
#include <cmath>
#include <limits>

#include "lessons/common.hpp"
#include "lessons/mix.hpp"

namespace mhascope {

using namespace lesson_detail;  // NOLINT(google-build-using-namespace): the lessons' shared helpers

Result<MixThenSplit> mixThenSplit(const Trace& trace, const MhaWeights& weights, int batchIndex, int token,
                                  int outputDim) {
  if (trace.stages.size() != static_cast<std::size_t>(kStageCount)) return makeError("no trace computed yet");
  if (weights.dModel != trace.dModel) {
    return makeError("the weights are for d_model = " + std::to_string(weights.dModel) + " but the trace has " +
                     std::to_string(trace.dModel));
  }
  if (batchIndex < 0 || batchIndex >= trace.batch)
    return makeError("batch item " + std::to_string(batchIndex) + " is outside 0.." + std::to_string(trace.batch - 1));
  if (token < 0 || token >= trace.tq)
    return makeError("token " + std::to_string(token) + " is outside 0.." + std::to_string(trace.tq - 1));
  if (outputDim < 0 || outputDim >= trace.dModel)
    return makeError("output dimension j = " + std::to_string(outputDim) + " is outside 0.." +
                     std::to_string(trace.dModel - 1));
  const int d = trace.dModel;
  MixThenSplit m;
  m.batchIndex = batchIndex;
  m.token = token;
  m.outputDim = outputDim;
  m.ownerHead = outputDim / trace.dk;
  m.columnInHead = outputDim % trace.dk;
  const float* x = trace.tensor(StageId::Query).ptr() + (static_cast<std::int64_t>(batchIndex) * trace.tq + token) * d;
  for (int i = 0; i < d; ++i) {
    MixTerm t{i, x[i], weights.wq(i, outputDim), static_cast<double>(x[i]) * weights.wq(i, outputDim)};
    m.sumOfTerms += t.product;
    m.terms.push_back(t);
  }
  m.bias = weights.bq[outputDim];
  m.total = m.sumOfTerms + m.bias;
  m.recorded = trace.tensor(StageId::QProj).data[idx((static_cast<std::int64_t>(batchIndex) * trace.tq + token) * d + outputDim)];
  m.recordedInHead = trace.tensor(StageId::QHeads).data[idx(
      ((static_cast<std::int64_t>(batchIndex) * trace.heads + m.ownerHead) * trace.tq + token) * trace.dk + m.columnInHead)];
  return m;
}

}  // namespace mhascope
