// Pitfalls — a mistaken pipeline next to the right one, with checks.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "lessons/common.hpp"
#include "lessons/mistakes.hpp"
#include "lessons/pitfalls.hpp"

namespace mhascope {

using namespace lesson_detail;  // NOLINT(google-build-using-namespace): the lessons' shared helpers

const char* pitfallTitle(Pitfall p) {
  switch (p) {
    case Pitfall::ScaleBySqrtDModel: return "Scale by sqrt(d_model)";
    case Pitfall::NoScaling: return "No scaling";
    case Pitfall::SumHeads: return "Sum heads instead of concatenating";
    case Pitfall::SkipOutputProjection: return "Skip W_o";
    case Pitfall::MaskAfterSoftmax: return "Mask after the softmax";
    case Pitfall::SoftmaxOverQueries: return "Softmax over the wrong axis (T_q)";
    case Pitfall::NoMaxSubtraction: return "Softmax without max subtraction";
  }
  return "?";
}

const char* pitfallExplanation(Pitfall p) {
  switch (p) {
    case Pitfall::ScaleBySqrtDModel:
      return "Each head's dot product sums only d_k terms, so its standard deviation grows like sqrt(d_k). "
             "Dividing by sqrt(d_model) = sqrt(h) * sqrt(d_k) instead makes every logit sqrt(h) times smaller: "
             "the weights get flatter (higher entropy) the more heads there are, towards a plain average.";
    case Pitfall::NoScaling:
      return "Without the division the logits are sqrt(d_k) times larger: sharper weights (lower entropy). With "
             "a large d_k the softmax saturates towards one-hot and its gradients get small, which slows "
             "learning and, deep in saturation, can all but stall it; with a small d_k the effect is mild (d_k = 4: "
             "2 times larger, d_k = 64: 8 times).";
    case Pitfall::SumHeads:
      return "Adding the h head outputs gives a (T_q, d_k) sum in which you can no longer tell which head said "
             "what, and W_o can no longer treat heads differently. Concatenate, then W_o: that equals summing "
             "each head's output after its OWN block of rows of W_o.";
    case Pitfall::SkipOutputProjection:
      return "Without W_o head i can only write into its own d_k columns of the output, and the layer loses "
             "W_o and b_o: d_model^2 + d_model learned parameters (d_model^2 without biases). W_o does "
             "not make heads interact: it adds one term per head (O_i times its own rows of W_o); heads "
             "combine only in later layers.";
    case Pitfall::MaskAfterSoftmax:
      return "The blocked keys still took their share of the softmax's denominator. Zeroing them afterwards "
             "leaves rows that sum to less than 1, and the allowed keys' weights depend on keys the query "
             "must not see. Block before the softmax with -inf.";
    case Pitfall::SoftmaxOverQueries:
      return "The softmax must normalise over the keys of one query (each row). Normalising over the queries "
             "makes each column sum to 1 instead, so a query's weights no longer form an average.";
    case Pitfall::NoMaxSubtraction:
      return "exp overflows a float above about 88.7. Each overflowing logit's exp is +inf, so the row sum is "
             "+inf: those entries become inf / inf = NaN and the others 0, and the NaN then spreads through "
             "A V into the output. The opposite failure is underflow: when every logit is below about -104, "
             "every exp is 0 and the row is 0 / 0 = NaN. Subtracting the row's max first changes nothing "
             "mathematically (it cancels in the division), keeps every exp in [0, 1] and makes the largest "
             "exactly 1.";
  }
  return "";
}

WeightChecks checkWeights(const Tensor& weights, const std::vector<std::uint8_t>& fullyMasked) {
  WeightChecks c;
  if (weights.rank() != 4) return c;
  const auto B = weights.dim(0), h = weights.dim(1), Tq = weights.dim(2), Tk = weights.dim(3);
  double entropySum = 0;
  std::int64_t entropyRows = 0;
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t hh = 0; hh < h; ++hh)
      for (std::int64_t q = 0; q < Tq; ++q) {
        const float* row = weights.ptr() + ((b * h + hh) * Tq + q) * Tk;
        double sum = 0, entropy = 0;
        bool finite = true;
        for (std::int64_t k = 0; k < Tk; ++k) {
          const float v = row[k];
          if (std::isnan(v)) ++c.nanCount;
          if (std::isinf(v)) ++c.infCount;
          if (!std::isfinite(v)) {
            finite = false;
            continue;
          }
          sum += v;
          if (v > 0) entropy -= static_cast<double>(v) * std::log(static_cast<double>(v));
        }
        const bool masked = idx(b * Tq + q) < fullyMasked.size() && fullyMasked[idx(b * Tq + q)];
        if (masked) continue;  // weights 0 by design
        const double err = finite ? std::abs(sum - 1.0) : std::numeric_limits<double>::infinity();
        c.maxRowSumError = std::max(c.maxRowSumError, err);
        if (!(err <= 1e-3)) ++c.rowsNotSummingToOne;
        if (finite) {
          entropySum += entropy;
          ++entropyRows;
        }
      }
  c.meanRowEntropy = entropyRows ? entropySum / static_cast<double>(entropyRows) : 0.0;
  return c;
}

namespace {

// The mistake library's name for each pitfall.
Mistake mistakeOf(Pitfall p) {
  switch (p) {
    case Pitfall::ScaleBySqrtDModel: return Mistake::ScaleBySqrtDModel;
    case Pitfall::NoScaling: return Mistake::NoScaling;
    case Pitfall::SumHeads: return Mistake::SumHeads;
    case Pitfall::SkipOutputProjection: return Mistake::NoOutputProjection;
    case Pitfall::MaskAfterSoftmax: return Mistake::MaskAfterSoftmax;
    case Pitfall::SoftmaxOverQueries: return Mistake::SoftmaxOverQueries;
    case Pitfall::NoMaxSubtraction: return Mistake::NoMaxSubtraction;
  }
  return Mistake::NoScaling;
}

// Σ_i O_i W_o[i·d_k:(i+1)·d_k, :] + b_o: the sum over heads that IS right, against the recorded output.
double blockSumError(const Trace& t, const MhaWeights& w) {
  const auto B = t.batch, h = t.heads, Tq = t.tq, dk = t.dk, d = t.dModel;
  const Tensor& headOut = t.tensor(StageId::HeadOutputs);
  RowMatrix blockSum = RowMatrix::Zero(static_cast<Eigen::Index>(B) * Tq, d);  // (B*T_q, d_model)
  for (int b = 0; b < B; ++b) {
    for (int hh = 0; hh < h; ++hh) {
      ConstMatrixMap oh(headOut.ptr() + (static_cast<std::int64_t>(b) * h + hh) * Tq * dk, Tq, dk);
      blockSum.middleRows(static_cast<Eigen::Index>(b) * Tq, Tq).noalias() += oh * w.wo.middleRows(hh * dk, dk);
    }
  }
  blockSum.rowwise() += w.bo;
  const Tensor& rec = t.tensor(StageId::Output);
  return maxAbsDiff(blockSum.data(), rec.ptr(), rec.data.size());
}

}  // namespace

Result<PitfallResult> runPitfall(const Model& model, Pitfall pitfall) {
  PitfallResult r;
  r.pitfall = pitfall;
  AttentionOptions opt = model.options;
  if (pitfall == Pitfall::MaskAfterSoftmax && !opt.causal && !opt.keyPaddingMask && !opt.attnMask) {
    opt.causal = true;  // the pitfall needs blocked cells to show anything
    r.maskAdded = true;
  }
  if (auto s = forward(model.inputs, model.weights, opt, r.correct); !s) return s.error();
  if (pitfall == Pitfall::NoMaxSubtraction) {
    // Make the logits large (max |scaled score| = 120, beyond float exp's overflow at ~88.7) by
    // feeding the recorded scores, multiplied, back in as hand-set scores.
    double maxLogit = 0;
    const Trace& c = r.correct;
    std::vector<float> scaled(idx(c.tk));  // one row of the (lazy) scaled scores
    for (std::int64_t row = 0; row < Tensor::numelOf(c.shapeOf(StageId::ScaledScores)); row += c.tk) {
      c.readCells(StageId::ScaledScores, row, c.tk, scaled.data());
      for (float v : scaled) maxLogit = std::max(maxLogit, std::abs(static_cast<double>(v)));
    }
    r.logitGain = maxLogit > 0 ? static_cast<float>(std::max(1.0, 120.0 / maxLogit)) : 1.0f;
    Tensor boosted = r.correct.tensor(StageId::Scores);
    for (float& v : boosted.data) v *= r.logitGain;
    opt.scoresOverride = std::move(boosted);
    if (auto s = forward(model.inputs, model.weights, opt, r.correct); !s) return s.error();
  }
  const Trace& t = r.correct;
  const Tensor& correctWeights = t.tensor(StageId::Weights);
  r.weights = correctWeights;

  // The mistake library computes the pitfall; where it changes nothing on this model (one head:
  // √d_model = √d_k, nothing to sum) the pitfall's pipeline is the right one.
  r.output = t.tensor(StageId::Output);
  if (std::optional<MistakeOutcome> o = computeMistake(t, mistakeOf(pitfall))) {
    if (!o->weights.data.empty()) r.weights = std::move(o->weights);
    r.output = std::move(o->output);
  }
  if (pitfall == Pitfall::SumHeads) r.blockSumMaxAbsDiff = blockSumError(t, model.weights);

  r.weightDiff = Tensor(correctWeights.shape, correctWeights.axes);
  for (std::size_t i = 0; i < correctWeights.data.size(); ++i) r.weightDiff.data[i] = r.weights.data[i] - correctWeights.data[i];
  r.correctChecks = checkWeights(correctWeights, t.fullyMasked);
  r.pitfallChecks = checkWeights(r.weights, t.fullyMasked);
  r.maxAbsWeightDiff = maxFiniteAbsDiff(r.weights, correctWeights);
  r.maxAbsOutputDiff = maxFiniteAbsDiff(r.output, t.tensor(StageId::Output));
  for (float v : r.output.data) {
    if (std::isnan(v)) ++r.outputNanCount;
    if (std::isinf(v)) ++r.outputInfCount;
  }
  return r;
}

}  // namespace mhascope
