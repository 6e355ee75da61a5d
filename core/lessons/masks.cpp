// Masks — mask on / off (causal or key padding) side by side.
#include <algorithm>
#include <cmath>
#include <limits>

#include "lessons/common.hpp"
#include "lessons/lessons.hpp"

namespace mhascope {

using namespace lesson_detail;  // NOLINT(google-build-using-namespace): the lessons' shared helpers

Result<MaskComparison> maskComparison(const Model& model, MaskLesson kind, int paddedKeys) {
  AttentionOptions off = model.options;
  off.causal = false;
  off.keyPaddingMask.reset();
  off.attnMask.reset();
  AttentionOptions on = off;
  MaskComparison r;
  r.kind = kind;
  const auto B = model.inputs.query.dim(0), Tk = model.inputs.key.dim(1);
  if (kind == MaskLesson::Causal) {
    on.causal = true;
  } else {
    if (Tk < 1) return makeError("enter at least one key token");
    const std::int64_t n = paddedKeys > 0 ? paddedKeys : std::max<std::int64_t>(1, Tk / 3);
    if (n > Tk) {
      return makeError("cannot pad the last " + std::to_string(n) + " keys: there are only T_k = " +
                       std::to_string(Tk));
    }
    r.paddedKeys = static_cast<int>(n);
    Tensor pad({B, Tk}, {"B", "T_k"});
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t k = Tk - n; k < Tk; ++k) pad.data[idx(b * Tk + k)] = 1.0f;
    on.keyPaddingMask = std::move(pad);
  }
  if (auto s = forward(model.inputs, model.weights, off, r.unmasked); !s) return s.error();
  if (auto s = forward(model.inputs, model.weights, on, r.masked); !s) return s.error();
  const Tensor& w0 = r.unmasked.tensor(StageId::Weights);
  const Tensor& w1 = r.masked.tensor(StageId::Weights);
  r.weightDiff = Tensor(w1.shape, w1.axes);
  for (std::size_t i = 0; i < w1.data.size(); ++i) {
    r.weightDiff.data[i] = w1.data[i] - w0.data[i];
    r.maxAbsWeightDiff = std::max(r.maxAbsWeightDiff, std::abs(static_cast<double>(r.weightDiff.data[i])));
  }
  const Tensor& o0 = r.unmasked.tensor(StageId::Output);
  const Tensor& o1 = r.masked.tensor(StageId::Output);
  double sum = 0;
  for (std::size_t i = 0; i < o1.data.size(); ++i) {
    const double dlt = std::abs(static_cast<double>(o1.data[i]) - static_cast<double>(o0.data[i]));
    sum += dlt;
    r.maxAbsOutputDiff = std::max(r.maxAbsOutputDiff, dlt);
  }
  r.meanAbsOutputDiff = o1.data.empty() ? 0.0 : sum / static_cast<double>(o1.data.size());
  const std::size_t perItem = static_cast<std::size_t>(r.masked.tq) * static_cast<std::size_t>(r.masked.tk);
  for (std::size_t i = 0; i < perItem; ++i) r.blockedCells += r.masked.blocked[i];
  for (auto f : r.masked.fullyMasked) r.fullyMaskedRows += f;
  return r;
}

}  // namespace mhascope
