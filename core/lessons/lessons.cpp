// The numbers behind the teaching views (see lessons.hpp). The per-head loop, the pitfalls and the
// cell breakdown are written here on purpose apart from the engine: a second, slower formulation
// of the same equations is what the lessons compare against.
//
// [SECTION] helpers
// [SECTION] 1 loop vs vectorized
// [SECTION] 2 parameter table
// [SECTION] 3 mix then split
// [SECTION] 4 score-cell editor
// [SECTION] 5 mask comparison
// [SECTION] 6 pitfall lab
// [SECTION] 7 cost sweep
// [SECTION] 9 cell breakdown
// [SECTION] 10 quiz
#include "lessons/lessons.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace mhascope {

// ---------------------------------------------------------------------------------------------
// [SECTION] helpers
// ---------------------------------------------------------------------------------------------
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

std::size_t idx(std::int64_t i) { return static_cast<std::size_t>(i); }

// Max |a - b| over n values; equal infinities (a masked -inf on both sides) count as 0, a NaN or
// an infinity on one side only as +inf.
double maxAbsDiff(const float* a, const float* b, std::size_t n) {
  double m = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (a[i] == b[i]) continue;
    const double d = std::abs(static_cast<double>(a[i]) - static_cast<double>(b[i]));
    m = std::max(m, std::isfinite(d) ? d : std::numeric_limits<double>::infinity());
  }
  return m;
}

// Max |a - b| over the cells where both are finite (the pitfall lab reports NaN/Inf separately).
// Largest |a - b|; a cell that is finite in the reference but NaN/inf in the other counts as an
// infinite difference, so a pipeline that lost rows never looks "almost right".
double maxFiniteAbsDiff(const Tensor& a, const Tensor& b) {
  double m = 0;
  for (std::size_t i = 0; i < a.data.size() && i < b.data.size(); ++i) {
    const bool fa = std::isfinite(a.data[i]), fb = std::isfinite(b.data[i]);
    if (fa && fb) {
      m = std::max(m, std::abs(static_cast<double>(a.data[i]) - static_cast<double>(b.data[i])));
    } else if (fa != fb) {
      return std::numeric_limits<double>::infinity();
    }
  }
  return m;
}

float scaleFactorOf(ScaleKind kind, std::int64_t dModel, int heads) {
  switch (kind) {
    case ScaleKind::SqrtDk: return 1.0f / std::sqrt(static_cast<float>(dModel / heads));
    case ScaleKind::SqrtDModel: return 1.0f / std::sqrt(static_cast<float>(dModel));
    case ScaleKind::None: return 1.0f;
  }
  return 1.0f;
}

// blocked[(b * T_q + q) * T_k + k] from the causal rule and both masks (PyTorch polarity).
std::vector<std::uint8_t> blockedCells(const AttentionOptions& opt, std::int64_t B, std::int64_t Tq, std::int64_t Tk) {
  std::vector<std::uint8_t> blocked(idx(B * Tq * Tk), 0);
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t q = 0; q < Tq; ++q)
      for (std::int64_t k = 0; k < Tk; ++k) {
        bool blk = opt.causal && k > q;
        if (opt.keyPaddingMask && opt.keyPaddingMask->data[idx(b * Tk + k)] != 0.0f) blk = true;
        if (opt.attnMask && opt.attnMask->data[idx(q * Tk + k)] != 0.0f) blk = true;
        blocked[idx((b * Tq + q) * Tk + k)] = blk ? 1 : 0;
      }
  return blocked;
}

// Softmax of one row with the max subtracted (exp never overflows); a fully blocked row (all
// -inf) gets weights 0 rather than 0/0.
void stableSoftmax(const float* logits, float* out, std::int64_t n, std::int64_t stride = 1) {
  float m = kNegInf;
  for (std::int64_t i = 0; i < n; ++i) m = std::max(m, logits[i * stride]);
  if (m == kNegInf) {
    for (std::int64_t i = 0; i < n; ++i) out[i * stride] = 0.0f;
    return;
  }
  float sum = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const float e = logits[i * stride] == kNegInf ? 0.0f : std::exp(logits[i * stride] - m);
    out[i * stride] = e;
    sum += e;
  }
  for (std::int64_t i = 0; i < n; ++i) out[i * stride] /= sum;
}

// The per-head attention of the lessons, stage by stage, (B, h, ...) tensors.
struct HeadPipeline {
  Tensor qh, kh, vh;                        // (B, h, T, d_k)
  Tensor scores, scaled, masked, weights;   // (B, h, T_q, T_k)
  Tensor headOut;                           // (B, h, T_q, d_k)
  Tensor concat, output;                    // (B, T_q, d_model)
  const Tensor& stage(StageId id) const {
    switch (id) {
      case StageId::QHeads: return qh;
      case StageId::KHeads: return kh;
      case StageId::VHeads: return vh;
      case StageId::Scores: return scores;
      case StageId::ScaledScores: return scaled;
      case StageId::MaskedScores: return masked;
      case StageId::Weights: return weights;
      case StageId::HeadOutputs: return headOut;
      case StageId::Concat: return concat;
      default: return output;
    }
  }
};

constexpr StageId kPerHeadStages[] = {StageId::QHeads,      StageId::KHeads,       StageId::VHeads,
                                      StageId::Scores,      StageId::ScaledScores, StageId::MaskedScores,
                                      StageId::Weights,     StageId::HeadOutputs,  StageId::Concat,
                                      StageId::Output};

// Scores → scale → mask → softmax → weighted values, one (b, head) at a time, from p.qh/kh/vh.
void attendEachHead(HeadPipeline& p, const AttentionOptions& opt, const std::vector<std::uint8_t>& blocked,
                    float factor) {
  const auto B = p.qh.dim(0), h = p.qh.dim(1), Tq = p.qh.dim(2), dk = p.qh.dim(3), Tk = p.kh.dim(2);
  for (Tensor* t : {&p.scores, &p.scaled, &p.masked, &p.weights}) *t = Tensor({B, h, Tq, Tk}, {"B", "h", "T_q", "T_k"});
  p.headOut = Tensor({B, h, Tq, dk}, {"B", "h", "T_q", "d_k"});
  for (std::int64_t b = 0; b < B; ++b) {
    for (std::int64_t hh = 0; hh < h; ++hh) {
      const std::int64_t bh = b * h + hh;
      ConstMatrixMap q(p.qh.ptr() + bh * Tq * dk, Tq, dk);  // (T_q, d_k)
      ConstMatrixMap k(p.kh.ptr() + bh * Tk * dk, Tk, dk);  // (T_k, d_k)
      ConstMatrixMap v(p.vh.ptr() + bh * Tk * dk, Tk, dk);  // (T_k, d_k)
      MatrixMap s(p.scores.ptr() + bh * Tq * Tk, Tq, Tk);   // (T_q, T_k)
      s.noalias() = q * k.transpose();
      if (opt.scoresOverride) {
        const Tensor& o = *opt.scoresOverride;
        const std::int64_t item = o.rank() == 3 ? 0 : b;
        const float* src = o.ptr() + (item * h + hh) * Tq * Tk;
        for (std::int64_t i = 0; i < Tq * Tk; ++i)
          if (!std::isnan(src[i])) s.data()[i] = src[i];
      }
      for (std::int64_t qi = 0; qi < Tq; ++qi) {
        const std::int64_t row = bh * Tq * Tk + qi * Tk;
        for (std::int64_t ki = 0; ki < Tk; ++ki) {
          const float x = p.scores.data[idx(row + ki)] * factor;
          p.scaled.data[idx(row + ki)] = x;
          p.masked.data[idx(row + ki)] = blocked[idx((b * Tq + qi) * Tk + ki)] ? kNegInf : x;
        }
        stableSoftmax(p.masked.ptr() + row, p.weights.ptr() + row, Tk);
      }
      MatrixMap(p.headOut.ptr() + bh * Tq * dk, Tq, dk).noalias() =
          ConstMatrixMap(p.weights.ptr() + bh * Tq * Tk, Tq, Tk) * v;
    }
  }
}

// out = concat W_o + b_o: (B, T_q, d_model).
Tensor outputProjection(const Tensor& concat, const MhaWeights& w) {
  Tensor out(concat.shape, {"B", "T_q", "d_model"});
  const auto rows = concat.dim(0) * concat.dim(1), d = concat.dim(2);
  MatrixMap o(out.ptr(), rows, d);
  o.noalias() = ConstMatrixMap(concat.ptr(), rows, d) * w.wo;
  o.rowwise() += w.bo;
  return out;
}

// (B, h, T_q, d_k) → (B, T_q, d_model), head i in columns i*d_k .. (i+1)*d_k - 1 (the right merge).
Tensor concatHeads(const Tensor& headOut) {
  const auto B = headOut.dim(0), h = headOut.dim(1), T = headOut.dim(2), dk = headOut.dim(3);
  Tensor c({B, T, h * dk}, {"B", "T_q", "d_model"});
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t hh = 0; hh < h; ++hh)
      for (std::int64_t t = 0; t < T; ++t)
        for (std::int64_t j = 0; j < dk; ++j)
          c.data[idx((b * T + t) * h * dk + hh * dk + j)] = headOut.data[idx(((b * h + hh) * T + t) * dk + j)];
  return c;
}

// Everything after the weights, for a pitfall's weights: A V per head, concatenate, W_o.
Tensor outputFromWeights(const Trace& t, const Tensor& weights /*(B,h,T_q,T_k)*/, const MhaWeights& w) {
  const auto B = t.batch, h = t.heads, Tq = t.tq, Tk = t.tk, dk = t.dk;
  Tensor headOut({B, h, Tq, dk}, {"B", "h", "T_q", "d_k"});
  const Tensor& vh = t.tensor(StageId::VHeads);
  for (std::int64_t bh = 0; bh < static_cast<std::int64_t>(B) * h; ++bh) {
    MatrixMap(headOut.ptr() + bh * Tq * dk, Tq, dk).noalias() =
        ConstMatrixMap(weights.ptr() + bh * Tq * Tk, Tq, Tk) * ConstMatrixMap(vh.ptr() + bh * Tk * dk, Tk, dk);
  }
  return outputProjection(concatHeads(headOut), w);
}

std::string num(double v, int precision = 4) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", precision, v);
  return buf;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// [SECTION] 1 loop vs vectorized
// ---------------------------------------------------------------------------------------------

Result<LoopVsVectorized> perHeadLoopVsVectorized(const Model& model) {
  Trace trace;
  if (auto s = forward(model.inputs, model.weights, model.options, trace); !s) return s.error();
  const auto& in = model.inputs;
  const auto& w = model.weights;
  const auto B = in.query.dim(0), Tq = in.query.dim(1), Tk = in.key.dim(1), d = in.query.dim(2);
  const int h = model.options.heads;
  const auto dk = d / h;
  const auto blocked = blockedCells(model.options, B, Tq, Tk);
  const float factor = scaleFactorOf(model.options.scale, d, h);

  // Per-head formulation: head hh has its own small projection W_Q[hh] = W_q[:, hh*d_k:(hh+1)*d_k]
  // (d_model, d_k), applied to each batch item on its own.
  HeadPipeline loop;
  auto projectPerHead = [&](const Tensor& x /*(B,T,d_model)*/, const RowMatrix& W, const RowVector& bias,
                            Tensor& out /*(B,h,T,d_k)*/) {
    const auto T = x.dim(1);
    out = Tensor({B, h, T, dk}, {"B", "h", T == Tq ? "T_q" : "T_k", "d_k"});
    for (std::int64_t b = 0; b < B; ++b) {
      ConstMatrixMap xb(x.ptr() + b * T * d, T, d);  // (T, d_model)
      for (int hh = 0; hh < h; ++hh) {
        MatrixMap o(out.ptr() + (b * h + hh) * T * dk, T, dk);  // (T, d_k)
        o.noalias() = xb * W.middleCols(hh * dk, dk);
        o.rowwise() += bias.segment(hh * dk, dk);
      }
    }
  };
  projectPerHead(in.query, w.wq, w.bq, loop.qh);
  projectPerHead(in.key, w.wk, w.bk, loop.kh);
  projectPerHead(in.value, w.wv, w.bv, loop.vh);
  attendEachHead(loop, model.options, blocked, factor);
  loop.concat = concatHeads(loop.headOut);
  loop.output = outputProjection(loop.concat, w);

  // Transpose skipped: the (B, T, d_model) projection's memory read as (B, h, T, d_k). Head hh
  // then holds T*d_k consecutive numbers — whole rows of a few tokens, not column block hh.
  HeadPipeline skipped;
  auto wrongSplit = [&](const Tensor& proj /*(B,T,d_model)*/, Tensor& out) {
    const auto T = proj.dim(1);
    out = Tensor({B, h, T, dk}, {"B", "h", T == Tq ? "T_q" : "T_k", "d_k"});
    out.data = proj.data;  // the same numbers in the same order: only the shape changed
  };
  wrongSplit(trace.tensor(StageId::QProj), skipped.qh);
  wrongSplit(trace.tensor(StageId::KProj), skipped.kh);
  wrongSplit(trace.tensor(StageId::VProj), skipped.vh);
  attendEachHead(skipped, model.options, blocked, factor);
  skipped.concat = Tensor({B, Tq, d}, {"B", "T_q", "d_model"});
  skipped.concat.data = skipped.headOut.data;  // the matching wrong merge: reshape without transpose
  skipped.output = outputProjection(skipped.concat, w);

  LoopVsVectorized r;
  r.heads = h;
  r.tq = static_cast<int>(Tq);
  r.tk = static_cast<int>(Tk);
  r.dModel = static_cast<int>(d);
  r.dk = static_cast<int>(dk);
  for (StageId id : kPerHeadStages) {
    const Tensor& ref = trace.tensor(id);
    const double a = maxAbsDiff(loop.stage(id).ptr(), ref.ptr(), ref.data.size());
    const double b = maxAbsDiff(skipped.stage(id).ptr(), ref.ptr(), ref.data.size());
    r.loopVsVectorized.push_back({id, a});
    r.skippedVsCorrect.push_back({id, b});
    r.loopMaxAbsDiff = std::max(r.loopMaxAbsDiff, a);
  }
  r.skippedOutputMaxAbsDiff = r.skippedVsCorrect.back().maxAbsDiff;
  r.skippedSources.resize(idx(h * Tq * dk));
  for (int hh = 0; hh < h; ++hh)
    for (std::int64_t t = 0; t < Tq; ++t)
      for (std::int64_t c = 0; c < dk; ++c) {
        const std::int64_t flat = (hh * Tq + t) * dk + c;  // offset in batch item 0's (T, d_model) block
        FeatureSource src{static_cast<int>(flat / d), static_cast<int>(flat % d)};
        r.skippedSources[idx(flat)] = src;
        if (src.token != t) ++r.skippedWrongToken;
      }
  return r;
}

// ---------------------------------------------------------------------------------------------
// [SECTION] 2 parameter table
// ---------------------------------------------------------------------------------------------

Result<ParameterTable> parameterTable(std::int64_t dModel, std::int64_t heads) {
  if (auto s = validateSizes(1, 1, 1, dModel, heads, std::numeric_limits<std::uint64_t>::max()); !s) return s.error();
  ParameterTable p;
  p.dModel = dModel;
  p.heads = heads;
  p.dk = dModel / heads;
  p.oneHeadProjection = dModel * p.dk;
  p.qkvFullPerHead = 3 * heads * dModel * dModel;
  p.qkvReducedPerHead = 3 * heads * dModel * p.dk;
  p.qkvReal = 3 * dModel * dModel;
  p.wo = dModel * dModel;
  p.biases = 4 * dModel;
  const ParamCount c = countParams(dModel);
  p.totalWithoutBias = c.withoutBias;
  p.totalWithBias = c.withBias;
  return p;
}

// ---------------------------------------------------------------------------------------------
// [SECTION] 3 mix then split
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// [SECTION] 4 score-cell editor
// ---------------------------------------------------------------------------------------------

void setScoreCell(ModelConfig& cfg, int head, int query, int key, float score) {
  for (ScoreCell& c : cfg.scoreOverride.cells) {
    if (c.queryToken.empty() && c.keyToken.empty() && c.head == head && c.query == query && c.key == key) {
      c.score = score;
      return;
    }
  }
  ScoreCell c;
  c.head = head;
  c.query = query;
  c.key = key;
  c.score = score;
  cfg.scoreOverride.cells.push_back(c);  // listed last: it wins over a cell named by token text
}

void clearScoreCell(ModelConfig& cfg, int head, int query, int key) {
  auto& cells = cfg.scoreOverride.cells;
  cells.erase(std::remove_if(cells.begin(), cells.end(),
                             [&](const ScoreCell& c) {
                               return c.queryToken.empty() && c.keyToken.empty() && c.head == head &&
                                      c.query == query && c.key == key;
                             }),
              cells.end());
}

// ---------------------------------------------------------------------------------------------
// [SECTION] 5 mask comparison
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// [SECTION] 6 pitfall lab
// ---------------------------------------------------------------------------------------------

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
             "learning; with a small d_k (the presets use 2 to 4) the logits are only 1.4 to 2 times larger.";
    case Pitfall::SumHeads:
      return "Adding the h head outputs gives a (T_q, d_k) sum in which you can no longer tell which head said "
             "what, and W_o can no longer treat heads differently. Concatenate, then W_o: that equals summing "
             "each head's output after its OWN block of rows of W_o.";
    case Pitfall::SkipOutputProjection:
      return "Without W_o each output feature is still owned by one head: nothing mixes the heads' findings, "
             "and the layer loses W_o and b_o: d_model^2 + d_model learned parameters (d_model^2 without "
             "biases).";
    case Pitfall::MaskAfterSoftmax:
      return "The blocked keys still took their share of the softmax's denominator. Zeroing them afterwards "
             "leaves rows that sum to less than 1, and the allowed keys' weights depend on keys the query "
             "must not see. Block before the softmax with -inf.";
    case Pitfall::SoftmaxOverQueries:
      return "The softmax must normalise over the keys of one query (each row). Normalising over the queries "
             "makes each column sum to 1 instead, so a query's weights no longer form an average.";
    case Pitfall::NoMaxSubtraction:
      return "exp overflows a float above about 88.7. With large logits exp(x) is +inf, and inf / inf is NaN: "
             "the whole row is lost. Subtracting the row's max first changes nothing mathematically (it "
             "cancels in the division) and keeps every exp in [0, 1].";
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
    for (float v : r.correct.tensor(StageId::ScaledScores).data) maxLogit = std::max(maxLogit, std::abs(static_cast<double>(v)));
    r.logitGain = maxLogit > 0 ? static_cast<float>(std::max(1.0, 120.0 / maxLogit)) : 1.0f;
    Tensor boosted = r.correct.tensor(StageId::Scores);
    for (float& v : boosted.data) v *= r.logitGain;
    opt.scoresOverride = std::move(boosted);
    if (auto s = forward(model.inputs, model.weights, opt, r.correct); !s) return s.error();
  }
  const Trace& t = r.correct;
  const Tensor& correctWeights = t.tensor(StageId::Weights);
  const auto B = t.batch, h = t.heads, Tq = t.tq, Tk = t.tk, dk = t.dk, d = t.dModel;
  r.weights = correctWeights;

  switch (pitfall) {
    case Pitfall::ScaleBySqrtDModel:
    case Pitfall::NoScaling: {
      AttentionOptions wrong = opt;
      wrong.scale = pitfall == Pitfall::NoScaling ? ScaleKind::None : ScaleKind::SqrtDModel;
      Trace wt;
      if (auto s = forward(model.inputs, model.weights, wrong, wt); !s) return s.error();
      r.weights = wt.tensor(StageId::Weights);
      r.output = wt.tensor(StageId::Output);
      break;
    }
    case Pitfall::SumHeads: {
      // The mistake: O_sum = sum_h O_h (B, T_q, d_k). To reach d_model it can only go through the
      // sum of W_o's h row blocks (what putting the same sum into every head slot amounts to).
      const Tensor& headOut = t.tensor(StageId::HeadOutputs);
      RowMatrix sumOut = RowMatrix::Zero(static_cast<Eigen::Index>(B) * Tq, dk);  // (B*T_q, d_k)
      RowMatrix woSum = RowMatrix::Zero(dk, d);                                   // (d_k, d_model)
      RowMatrix blockSum = RowMatrix::Zero(static_cast<Eigen::Index>(B) * Tq, d); // (B*T_q, d_model)
      for (int hh = 0; hh < h; ++hh) woSum += model.weights.wo.middleRows(hh * dk, dk);
      for (int b = 0; b < B; ++b) {
        for (int hh = 0; hh < h; ++hh) {
          ConstMatrixMap oh(headOut.ptr() + (static_cast<std::int64_t>(b) * h + hh) * Tq * dk, Tq, dk);
          sumOut.middleRows(static_cast<Eigen::Index>(b) * Tq, Tq) += oh;
          // The right way to "sum heads": each head through its own rows of W_o.
          blockSum.middleRows(static_cast<Eigen::Index>(b) * Tq, Tq).noalias() +=
              oh * model.weights.wo.middleRows(hh * dk, dk);
        }
      }
      blockSum.rowwise() += model.weights.bo;
      r.output = Tensor({B, Tq, d}, {"B", "T_q", "d_model"});
      MatrixMap o(r.output.ptr(), static_cast<Eigen::Index>(B) * Tq, d);
      o.noalias() = sumOut * woSum;
      o.rowwise() += model.weights.bo;
      const Tensor& rec = t.tensor(StageId::Output);
      r.blockSumMaxAbsDiff = maxAbsDiff(blockSum.data(), rec.ptr(), rec.data.size());
      break;
    }
    case Pitfall::SkipOutputProjection:
      r.output = t.tensor(StageId::Concat);
      break;
    case Pitfall::MaskAfterSoftmax: {
      // Softmax over every key (the mask ignored), then zero the blocked ones: no renormalising.
      const Tensor& scaled = t.tensor(StageId::ScaledScores);
      for (std::int64_t bh = 0; bh < static_cast<std::int64_t>(B) * h; ++bh) {
        const std::int64_t b = bh / h;
        for (std::int64_t q = 0; q < Tq; ++q) {
          const std::int64_t row = (bh * Tq + q) * Tk;
          stableSoftmax(scaled.ptr() + row, r.weights.ptr() + row, Tk);
          for (std::int64_t k = 0; k < Tk; ++k)
            if (t.isBlocked(static_cast<int>(b), static_cast<int>(q), static_cast<int>(k))) r.weights.data[idx(row + k)] = 0.0f;
        }
      }
      r.output = outputFromWeights(t, r.weights, model.weights);
      break;
    }
    case Pitfall::SoftmaxOverQueries: {
      const Tensor& masked = t.tensor(StageId::MaskedScores);
      for (std::int64_t bh = 0; bh < static_cast<std::int64_t>(B) * h; ++bh)
        for (std::int64_t k = 0; k < Tk; ++k) {
          // Column k: every query's logit for this key, stride T_k.
          stableSoftmax(masked.ptr() + bh * Tq * Tk + k, r.weights.ptr() + bh * Tq * Tk + k, Tq, Tk);
        }
      r.output = outputFromWeights(t, r.weights, model.weights);
      break;
    }
    case Pitfall::NoMaxSubtraction: {
      // What a naive float implementation does: exp(x) / sum exp(x), no max subtracted.
      const Tensor& masked = t.tensor(StageId::MaskedScores);
      for (std::size_t row = 0; row < masked.data.size(); row += idx(Tk)) {
        float sum = 0.0f;
        for (std::size_t k = 0; k < idx(Tk); ++k) {
          const float e = std::exp(masked.data[row + k]);  // exp(-inf) = 0 for blocked keys
          r.weights.data[row + k] = e;
          sum += e;
        }
        for (std::size_t k = 0; k < idx(Tk); ++k) r.weights.data[row + k] /= sum;
      }
      r.output = outputFromWeights(t, r.weights, model.weights);
      break;
    }
  }

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

// ---------------------------------------------------------------------------------------------
// [SECTION] 7 cost sweep
// ---------------------------------------------------------------------------------------------

const char* sweepVariableName(SweepVariable v) {
  switch (v) {
    case SweepVariable::Tokens: return "T";
    case SweepVariable::DModel: return "d_model";
    case SweepVariable::Heads: return "h";
  }
  return "?";
}

CostSizes costSizesOf(const Trace& trace) {
  return {std::max(1, trace.batch), std::max(1, trace.tq), std::max(1, trace.tk), std::max(1, trace.dModel),
          std::max(1, trace.heads)};
}

CostPoint costAt(const CostSizes& s) {
  CostPoint p;
  p.sizes = s;
  p.params = countParams(s.dModel).withBias;
  const FlopCount f = countFlops(s.batch, s.tq, s.tk, s.dModel, s.heads);
  p.projectionFlops = f.projections;
  p.attentionFlops = f.attention;
  p.scoreBytes = 4.0 * static_cast<double>(s.batch) * static_cast<double>(s.heads) * static_cast<double>(s.tq) *
                 static_cast<double>(s.tk);
  // The same figure as `mhascope info`'s "whole recorded trace": stages, mask flags, token labels.
  p.traceBytes = estimateMemory(s.batch, s.tq, s.tk, s.dModel, s.heads).trace;
  p.scoreCount = s.batch * s.heads * s.tq * s.tk;
  return p;
}

CostCrossover costCrossover(const CostSizes& s) {
  // With T_q = T_k = T, projections = a * T and attention = c * T^2 (countFlops at T = 1 gives a
  // and c): they are equal at T = a / c.
  const FlopCount one = countFlops(s.batch, 1, 1, s.dModel, s.heads);
  const FlopCount now = countFlops(s.batch, s.tq, s.tk, s.dModel, s.heads);
  CostCrossover c;
  c.crossoverTokens = one.projections / one.attention;
  c.projectionsOverAttention = now.projections / now.attention;
  return c;
}

namespace {
// "the projections cost 102.4x the attention matmuls", or the other way round.
std::string costRatioPhrase(const CostCrossover& c) {
  return c.projectionsOverAttention >= 1
             ? "the projections cost " + num(c.projectionsOverAttention) + "x the attention matmuls"
             : "the attention matmuls cost " + num(1.0 / c.projectionsOverAttention) + "x the projections";
}
}  // namespace

std::string costCrossoverText(const CostSizes& s) {
  const CostCrossover c = costCrossover(s);
  const std::string ratio = costRatioPhrase(c);
  return "Projections cost O(B*T*d_model^2), the attention matmuls O(B*T^2*d_model): with T_q = T_k = T the "
         "attention matmuls cost more only once T > 2*d_model = " + num(c.crossoverTokens, 12) + ". Here (T_q = " +
         std::to_string(s.tq) + ", T_k = " + std::to_string(s.tk) + ", d_model = " + std::to_string(s.dModel) +
         ") " + ratio + ".";
}

std::string scalingRuleText(ScaleKind kind, int dModel, int heads) {
  switch (kind) {
    case ScaleKind::SqrtDk:
      return "divided by sqrt(d_k) = " + num(std::sqrt(static_cast<double>(dModel / std::max(1, heads))));
    case ScaleKind::SqrtDModel: return "divided by sqrt(d_model) = " + num(std::sqrt(static_cast<double>(dModel)));
    case ScaleKind::None: return "not scaled (factor 1)";
  }
  return "?";
}

std::string scoreGapText(const Trace& t, double gap) {
  const double f = static_cast<double>(t.scaleFactor);
  const std::string g = num(gap);
  const std::string divided = t.scale == ScaleKind::None ? g : g + " / " + num(1.0 / f);
  return "Raw scores are " + scalingRuleText(t.scale, t.dModel, t.heads) +
         " before the softmax (the active rule), so a gap of " + g + " between two raw scores becomes a factor of "
         "e^(" + divided + ") = " + num(std::exp(gap * f)) + " between their weights.";
}

Result<std::vector<CostPoint>> costSweep(const CostSizes& base, SweepVariable variable, std::int64_t from,
                                         std::int64_t to, int maxPoints) {
  constexpr std::int64_t kLimit = 1 << 20;
  if (from < 1 || to < from || to > kLimit) {
    return makeError(std::string("sweep range for ") + sweepVariableName(variable) + " must satisfy 1 <= from <= to <= " +
                     std::to_string(kLimit) + ", got " + std::to_string(from) + ".." + std::to_string(to));
  }
  if (maxPoints < 2) return makeError("a sweep needs at least 2 points, got " + std::to_string(maxPoints));
  std::vector<std::int64_t> candidates;  // sorted values the variable may take
  auto evenly = [&](std::int64_t lo, std::int64_t hi, std::int64_t step) {
    const std::int64_t n = hi >= lo ? (hi - lo) / step + 1 : 0;
    if (n <= maxPoints) {
      for (std::int64_t i = 0; i < n; ++i) candidates.push_back(lo + i * step);
      return;
    }
    for (int i = 0; i < maxPoints; ++i) {
      const std::int64_t j = (n - 1) * i / (maxPoints - 1);
      if (candidates.empty() || candidates.back() != lo + j * step) candidates.push_back(lo + j * step);
    }
  };
  switch (variable) {
    case SweepVariable::Tokens: evenly(from, to, 1); break;
    case SweepVariable::DModel: {  // multiples of h, so d_k stays whole
      const std::int64_t h = base.heads;
      evenly((from + h - 1) / h * h, to / h * h, h);
      break;
    }
    case SweepVariable::Heads: {  // divisors of d_model only
      std::vector<std::int64_t> divisors;
      for (std::int64_t v = from; v <= std::min(to, base.dModel); ++v)
        if (base.dModel % v == 0) divisors.push_back(v);
      const auto n = static_cast<std::int64_t>(divisors.size());
      for (int i = 0; i < std::min<std::int64_t>(n, maxPoints); ++i) {
        const std::int64_t j = n <= maxPoints ? i : (n - 1) * i / (maxPoints - 1);
        candidates.push_back(divisors[idx(j)]);
      }
      break;
    }
  }
  if (candidates.empty()) {
    return makeError(std::string("no valid ") + sweepVariableName(variable) + " in " + std::to_string(from) + ".." +
                     std::to_string(to) + " for d_model = " + std::to_string(base.dModel) + ", h = " +
                     std::to_string(base.heads) + " (d_model must stay divisible by h)");
  }
  std::vector<CostPoint> points;
  for (std::int64_t v : candidates) {
    CostSizes s = base;
    if (variable == SweepVariable::Tokens) s.tq = s.tk = v;
    if (variable == SweepVariable::DModel) s.dModel = v;
    if (variable == SweepVariable::Heads) s.heads = v;
    CostPoint p = costAt(s);
    p.value = v;
    points.push_back(p);
  }
  return points;
}

// ---------------------------------------------------------------------------------------------
// [SECTION] 9 cell breakdown
// ---------------------------------------------------------------------------------------------

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
  c.recordedScaled = t.tensor(StageId::ScaledScores).data[idx(row + key)];
  c.blocked = t.isBlocked(b, query, key);
  const float* logits = t.tensor(StageId::MaskedScores).ptr() + row;
  const float* weights = t.tensor(StageId::Weights).ptr() + row;
  c.rowMax = -std::numeric_limits<double>::infinity();
  for (int k = 0; k < t.tk; ++k) {
    c.rowLogits.push_back(logits[k]);
    c.rowRecorded.push_back(weights[k]);
    c.rowMax = std::max(c.rowMax, static_cast<double>(logits[k]));
  }
  const bool allBlocked = !std::isfinite(c.rowMax);
  for (int k = 0; k < t.tk; ++k) {
    const double e = allBlocked || std::isinf(logits[k]) ? 0.0 : std::exp(static_cast<double>(logits[k]) - c.rowMax);
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

// ---------------------------------------------------------------------------------------------
// [SECTION] 10 quiz
// ---------------------------------------------------------------------------------------------
namespace {

// A choice's text and what it means: two choices that mean the same (the same set of columns, the
// same shape up to size-1 axes, the same number) are the same answer, whatever their wording.
struct Choice {
  std::string text;
  std::string meaning;  // empty: the text itself
  Choice(std::string t) : text(std::move(t)) {}  // NOLINT: a plain string is a choice
  Choice(const char* t) : text(t) {}             // NOLINT
  Choice(std::string t, std::string m) : text(std::move(t)), meaning(std::move(m)) {}
  const std::string& key() const { return meaning.empty() ? text : meaning; }
};

// Correct answer first, then up to three distractors that mean something else than the answer
// and than each other (in the order given, so list the best first and spares after), then the
// list rotated so the correct answer's position varies from question to question.
QuizQuestion makeQuestion(std::string question, const Choice& correct, const std::vector<Choice>& distractors,
                          std::string explanation, int number) {
  QuizQuestion q;
  q.question = std::move(question);
  q.explanation = std::move(explanation);
  std::vector<Choice> all{correct};
  for (const Choice& d : distractors) {
    if (all.size() == 4) break;
    const bool same = std::any_of(all.begin(), all.end(),
                                  [&](const Choice& c) { return c.key() == d.key() || c.text == d.text; });
    if (!same) all.push_back(d);
  }
  const int n = static_cast<int>(all.size());
  const int pos = (number * 3 + 1) % n;
  q.choices.resize(all.size());
  for (int i = 0; i < n; ++i) q.choices[idx((pos + i) % n)] = all[idx(i)].text;
  q.correct = pos;
  return q;
}

Choice numberChoice(std::int64_t v, const std::string& prefix = "") {
  return {prefix + std::to_string(v), "n" + std::to_string(v)};
}

// Numeric distractors: the candidates, then answer*2, answer+1, ... as spares (makeQuestion drops
// the answer itself and repeats); only positive values.
std::vector<Choice> numericDistractors(std::int64_t answer, std::vector<std::int64_t> candidates,
                                       const std::string& prefix = "") {
  for (std::int64_t extra : {answer * 2, answer + 1, answer * 4, answer + 2, answer + 3}) candidates.push_back(extra);
  std::vector<Choice> out;
  for (std::int64_t c : candidates)
    if (c > 0) out.push_back(numberChoice(c, prefix));
  return out;
}

// "(B, T_q, d_model) = (2, 7, 12)"; it means its values with the size-1 axes dropped, since
// (2, 1, 7, 12) and (2, 7, 12) hold the same numbers in the same order.
Choice shapeChoice(std::initializer_list<std::pair<const char*, std::int64_t>> dims) {
  std::string names = "(", values = "(", meaning = "s";
  bool first = true;
  for (const auto& [n, v] : dims) {
    names += std::string(first ? "" : ", ") + n;
    values += std::string(first ? "" : ", ") + std::to_string(v);
    if (v != 1) meaning += " " + std::to_string(v);
    first = false;
  }
  return {names + ") = " + values + ")", meaning};
}

// A set of columns of Q, e.g. "c 4 5 6 7".
std::string columnSet(std::int64_t from, std::int64_t step, std::int64_t count) {
  std::string m = "c";
  for (std::int64_t i = 0; i < count; ++i) m += " " + std::to_string(from + i * step);
  return m;
}

std::string ordinal(std::int64_t n) {
  const std::int64_t t = n % 100;
  const char* suffix = (t >= 11 && t <= 13) ? "th" : n % 10 == 1 ? "st" : n % 10 == 2 ? "nd" : n % 10 == 3 ? "rd" : "th";
  return std::to_string(n) + suffix;
}

}  // namespace

std::vector<QuizQuestion> makeQuiz(const Trace& t, const MhaWeights& w) {
  std::vector<QuizQuestion> questions;
  if (t.stages.size() != static_cast<std::size_t>(kStageCount)) return questions;
  const std::int64_t B = t.batch, Tq = t.tq, Tk = t.tk, d = t.dModel, h = t.heads, dk = t.dk;
  const std::string D = std::to_string(d), H = std::to_string(h), DK = std::to_string(dk);
  int n = 0;
  // With every size 1 some questions have no wrong answer left (every shape is (1, 1, 1)): not asked.
  struct Questions {
    std::vector<QuizQuestion>& list;
    void push_back(QuizQuestion q) {
      if (q.choices.size() >= 2) list.push_back(std::move(q));
    }
  } qs{questions};

  qs.push_back(makeQuestion("With d_model = " + D + " and h = " + H +
                                " heads, how many dimensions d_k does each head work in?",
                            numberChoice(dk), numericDistractors(dk, {d, h, d * h}),
                            "d_k = d_model / h = " + D + " / " + H + " = " + DK +
                                ". The heads share the d_model columns of Q, K and V between them; they do not each "
                                "get d_model of their own.",
                            n++));

  qs.push_back(makeQuestion(
      "What shape goes into the output projection W_o?", shapeChoice({{"B", B}, {"T_q", Tq}, {"d_model", d}}),
      {shapeChoice({{"B", B}, {"h", h}, {"T_q", Tq}, {"d_k", dk}}), shapeChoice({{"B", B}, {"T_q", Tq}, {"d_k", dk}}),
       shapeChoice({{"B", B}, {"h", h}, {"T_q", Tq}, {"T_k", Tk}}), shapeChoice({{"B", B}, {"T_q", Tq}, {"T_k", Tk}}),
       shapeChoice({{"B", B}, {"d_model", d}, {"T_q", Tq}}), shapeChoice({{"B", B}, {"T_q", Tq}, {"3*d_model", 3 * d}})},
      "The h head outputs (B, h, T_q, d_k) are transposed back to (B, T_q, h, d_k) and reshaped to "
      "(B, T_q, h*d_k) = (B, T_q, d_model): the heads sit side by side, and W_o (d_model, d_model) mixes them. "
      "The layer's output keeps that (B, T_q, d_model) shape, the shape of its input, which is why attention "
      "layers can be stacked.",
      n++));

  qs.push_back(makeQuestion(
      "What shape does the softmax output A have inside the layer (the attention weights of every head)?",
      shapeChoice({{"B", B}, {"h", h}, {"T_q", Tq}, {"T_k", Tk}}),
      {shapeChoice({{"B", B}, {"T_q", Tq}, {"T_k", Tk}}), shapeChoice({{"B", B}, {"h", h}, {"T_q", Tq}, {"d_k", dk}}),
       shapeChoice({{"B", B}, {"T_q", Tq}, {"d_model", d}}), shapeChoice({{"B", B}, {"h", h}, {"d_k", dk}, {"d_k", dk}}),
       shapeChoice({{"B", B}, {"T_q", Tq}, {"h", h}})},
      "One (T_q, T_k) table per batch item and per head: every head decides on its own how much each query "
      "looks at each key. Note that torch.nn.MultiheadAttention by default RETURNS these averaged over the "
      "heads, shape (B, T_q, T_k) = (" + std::to_string(B) + ", " + std::to_string(Tq) + ", " + std::to_string(Tk) +
      "); pass average_attn_weights=False to get the per-head tensor.",
      n++));

  const std::int64_t params = w.hasBias ? 4 * d * d + 4 * d : 4 * d * d;
  qs.push_back(makeQuestion(
      std::string("How many learned numbers does this attention layer hold (biases ") + (w.hasBias ? "on" : "off") + ")?",
      numberChoice(params), numericDistractors(params, {4 * d * d * h, 3 * d * d, w.hasBias ? 4 * d * d : 4 * d * d + 4 * d}),
      "W_q, W_k, W_v and W_o are (d_model, d_model) each: 4 * " + D + "^2 = " + std::to_string(4 * d * d) +
          (w.hasBias ? ", plus 4 bias vectors of d_model = " + std::to_string(4 * d) : std::string()) +
          ". The number of heads does not appear in it.",
      n++));

  {
    // Another valid head count for the same d_model: double, else halve, else any other divisor.
    std::int64_t h2 = 0;
    if (d % (2 * h) == 0) h2 = 2 * h;
    else if (h % 2 == 0) h2 = h / 2;
    else
      for (std::int64_t v = d; v >= 1 && !h2; --v)
        if (d % v == 0 && v != h) h2 = v;
    if (h2) {
      qs.push_back(makeQuestion(
          "Keep d_model = " + D + " and change h from " + H + " to " + std::to_string(h2) + " heads (d_k from " + DK +
              " to " + std::to_string(d / h2) + "). What happens to the parameter count?",
          "It stays the same",
          {h2 > h ? "It grows in proportion to h" : "It shrinks in proportion to h",
           h2 > h ? "It shrinks in proportion to d_k" : "It grows in proportion to d_k",
           "It changes by 4 * d_model^2 per head added or removed"},
          "W_q is still one (d_model, d_model) matrix; the heads only cut its columns into blocks of d_k. The "
          "matmul FLOPs stay the same too. What grows with h is the number of scores: B * h * T_q * T_k, each of "
          "which is scaled, masked, exponentiated and normalised, and kept in memory.",
          n++));
    }
  }

  qs.push_back(makeQuestion(
      "Why split d_model into heads at all?",
      "So each head can form its own attention pattern over its own d_k features, several at once, for the "
      "cost of one",
      {"To cut the number of parameters by h", "Because the softmax only works on small vectors",
       "So that each token is only compared with h other tokens"},
      "One softmax can only make one weighted average per query. Heads let the layer look for several relations "
      "at once, each in its own d_k-wide subspace, for the parameters of one full-width head. Giving each head "
      "only d_k dimensions is not just about the budget: the narrow subspace pushes heads apart. Which roles they "
      "take is learned in training and differs between runs, and many trained heads turn out redundant: "
      "studies prune a large share of them with little loss.",
      n++));

  {
    const std::string rule = scalingRuleText(t.scale, static_cast<int>(d), static_cast<int>(h));
    qs.push_back(makeQuestion(
        "The standard rule divides the scores by sqrt(d_k) = " + num(std::sqrt(static_cast<double>(dk))) + ". Why?",
        "The standard deviation of q . k grows like sqrt(d_k); unscaled, a large d_k pushes the softmax towards "
        "one-hot",
        {"To turn the scores into probabilities", "To make every row sum to 1", "To keep the values V from growing"},
        "With independent zero-mean, unit-variance entries, q . k has mean 0 and variance d_k. Dividing by "
        "sqrt(d_k) brings its spread back to about 1 whatever the head size, so the softmax stays soft and its "
        "gradients stay large enough to learn quickly (small gradients slow learning; they do not stop it). "
        "The active rule here: scores are " + rule + ", i.e. multiplied by " + num(t.scaleFactor) + ".",
        n++));
  }

  qs.push_back(makeQuestion(
      "What does the causal mask do?",
      "Blocks every key after the query (k > q): those scores become -inf, so their weight is exactly 0",
      {"Sets the values of later tokens to zero", "Removes the padding tokens from the input",
       "Multiplies the weights of later tokens by 0 after the softmax"},
      "A query may only use tokens up to its own position. The blocked scores get -inf before the softmax, "
      "so exp gives exactly 0 and the remaining weights still sum to 1. Counting from 0, query t sees keys "
      "0 .. t, that is t + 1 keys: here query 0 sees 1 key and query " + std::to_string(Tq - 1) + " sees " +
      std::to_string(std::min(Tq, Tk)) + ".",
      n++));

  qs.push_back(makeQuestion(
      "In PyTorch's nn.MultiheadAttention, what does True in a boolean attn_mask or key_padding_mask mean?",
      "That query-key pair is blocked: its score becomes -inf",
      {"That pair is allowed (True = keep)", "The weight is set to 0 after the softmax",
       "The key's value vector is set to 0"},
      "PyTorch: True = blocked (a float mask is added to the scores instead). Conventions differ: much other "
      "code writes scores.masked_fill(mask == 0, -1e9), where 1 means keep and 0 blocked. With -1e9 or the "
      "dtype's minimum in place of -inf, a row with every key blocked gets uniform weights 1/T_k (here 1/" +
      std::to_string(Tk) + ") instead of NaN.",
      n++));

  {
    const std::int64_t i = std::min<std::int64_t>(1, h - 1);  // head index 1 when there is one
    const std::string I = std::to_string(i), first = std::to_string(i * dk), last = std::to_string((i + 1) * dk - 1);
    qs.push_back(makeQuestion(
        "Q = X W_q has d_model = " + D + " columns, numbered 0 .. " + std::to_string(d - 1) +
            ". Which of them does head " + I + " get (heads numbered 0 .. " + std::to_string(h - 1) + ")?",
        Choice("Columns " + first + " to " + last, columnSet(i * dk, 1, dk)),
        h > 1 ? std::vector<Choice>{
                    Choice("Every " + ordinal(h) + " column, starting at column " + I, columnSet(i, h, dk)),
                    Choice("Rows " + first + " to " + last + " of W_q (here (d_model in, d_model out), Q = X @ W_q)",
                           "rows"),
                    Choice("Columns " + first + " to " + last + " of the input X: a head reads only its own input "
                           "features", "input"),
                    Choice("All " + D + " columns: each head sees every column of Q", columnSet(0, 1, d)),
                    Choice("Column 0 only", columnSet(0, 1, 1))}
              // With one head, "all of X" and "all rows of W_q" would be true in their own way: not offered.
              : d >= 2 ? std::vector<Choice>{Choice("Column 0 only", columnSet(0, 1, 1)),
                                             Choice("Columns 0 to " + std::to_string(d / 2 - 1), columnSet(0, 1, d / 2)),
                                             Choice("None: with one head there is no split", "none")}
                       : std::vector<Choice>{Choice("None: with one head there is no split", "none")},
        "The view (B, T, h, d_k) cuts each token's row of Q into h consecutive blocks of d_k: head i owns columns "
        "i*d_k .. (i+1)*d_k - 1. Column j belongs to head floor(j / d_k), e.g. column " + last + " to head floor(" +
        last + " / " + DK + ") = " + I + ". The input X is not split: every head sees all of it through W_q. In "
        "PyTorch's storage (in_proj_weight, rows = outputs, Q = X @ W^T) the same block is rows " + first + " to " +
        last + " of the query part: rows there, columns of W_q here.",
        n++));
  }

  if (Tk >= 2) {
    // A live question: which key does a query attend to most in head 0 (batch item 0)?
    const int qi = static_cast<int>(Tq / 2);
    const float* row = t.tensor(StageId::Weights).ptr() + static_cast<std::int64_t>(qi) * Tk;  // b = 0, head 0
    std::vector<int> order(static_cast<std::size_t>(Tk));
    for (int k = 0; k < Tk; ++k) order[idx(k)] = k;
    std::stable_sort(order.begin(), order.end(), [row](int a, int b) { return row[a] > row[b]; });
    const bool fully = t.isFullyMasked(0, qi);
    const bool tie = !fully && row[order[1]] >= row[order[0]] - 1e-6f;  // no single answer: skip
    auto label = [&](int k) { return "'" + t.keyTokens[0][idx(k)] + "' (key " + std::to_string(k) + ")"; };
    if (!tie) {
      std::vector<Choice> others;
      for (std::size_t j = 1; j < order.size() && others.size() < 3; ++j) others.emplace_back(label(order[order.size() - j]));
      others.emplace_back("None: the weights are spread evenly over the keys");
      qs.push_back(makeQuestion(
          "In head 0, which key does the query '" + t.queryTokens[0][idx(qi)] + "' (query " + std::to_string(qi) +
              ") give the most weight?",
          fully ? Choice("None: every key is blocked") : Choice(label(order[0])), others,
          fully ? "Every key of this query is masked, so its weights row is all zeros."
                : "Read it off the weights heatmap of head 0: row " + std::to_string(qi) + " peaks at " +
                      label(order[0]) + " with weight " + num(row[order[0]], 3) + ".",
          n++));
    }
  }

  {
    // Row sums: every distractor is a number that is not 1 for this configuration.
    std::vector<Choice> sums;
    auto add = [&](const std::string& text, double value) {
      if (std::abs(value - 1.0) > 1e-12) sums.emplace_back(text, "v" + num(value, 12));
    };
    add(std::to_string(Tk) + " (T_k)", static_cast<double>(Tk));
    add("1 / T_k = " + num(1.0 / static_cast<double>(Tk), 3), 1.0 / static_cast<double>(Tk));
    add(DK + " (d_k)", static_cast<double>(dk));
    add(H + " (h, one per head)", static_cast<double>(h));
    add("1 / h = " + num(1.0 / static_cast<double>(h), 3), 1.0 / static_cast<double>(h));
    sums.emplace_back("No fixed value: the softmax leaves the sum free");
    qs.push_back(makeQuestion(
        "What does each row of a head's attention weights add up to?", "1 (0 if every key is masked)", sums,
        "The softmax turns one query's scores into a probability distribution over the keys; the head's output "
        "for that query is the matching weighted average of the values.",
        n++));
  }

  qs.push_back(makeQuestion(
      "Which step is the only one that mixes information ACROSS tokens?",
      "The weighted sum A V (with the weights from softmax(Q K^T))",
      {"The projections X W_q, X W_k, X W_v", "The output projection W_o", "Splitting into heads"},
      "Projections and W_o act on each token's row on its own (they mix features, not tokens). Only the "
      "attention weights combine the values of different tokens.",
      n++));

  qs.push_back(makeQuestion(
      "How many numbers does ONE head's score table hold for one batch item here?", numberChoice(Tq * Tk),
      numericDistractors(Tq * Tk, {Tq * dk, Tq + Tk, dk * dk, B * h * Tq * Tk}),
      "T_q x T_k = " + std::to_string(Tq) + " x " + std::to_string(Tk) + ": one score per (query, key) pair. "
      "That T^2 is why long sequences cost memory: B * h of these tables, " + std::to_string(B * h * Tq * Tk) +
      " numbers in all. Each table is (T_q, d_k) times (d_k, T_k), so its rank is at most d_k = " + DK + ".",
      n++));

  if (h > 1 && Tq > 1) {
    // With h = 1 or T_q = 1 the wrong merges below happen to give the right tensor: not asked then.
    qs.push_back(makeQuestion(
        "After A @ V the heads are (B, h, T_q, d_k) = (" + std::to_string(B) + ", " + H + ", " + std::to_string(Tq) +
            ", " + DK + "). Which line makes the (B, T_q, d_model) input of W_o?",
        "O.transpose(1, 2).reshape(B, T_q, d_model): the transpose makes the memory out of order, so this copies",
        {"O.reshape(B, T_q, d_model): no transpose needed", "O.transpose(1, 2).view(B, T_q, d_model): a free view",
         "O.sum(dim=1): add the heads up"},
        "transpose(1, 2) only swaps strides, so the numbers are no longer laid out as (B, T_q, h, d_k). view "
        "refuses such a tensor; reshape (or .contiguous().view(...)) copies it into order. Without the transpose "
        "the reshape would put head 0's rows for several tokens into one token's row. The split at the start "
        "was free: view on the contiguous (B, T, d_model) projection, then transpose.",
        n++));
  }

  {
    const CostSizes sizes = costSizesOf(t);
    const CostCrossover c = costCrossover(sizes);
    const auto cross = static_cast<std::int64_t>(std::llround(c.crossoverTokens));
    qs.push_back(makeQuestion(
        "With d_model = " + D + " and self-attention (T_q = T_k = T), from which T on do the attention matmuls "
            "(Q K^T and A V) cost more FLOPs than the four projections?",
        numberChoice(cross, "T > "), numericDistractors(cross, {d, dk, 4 * d, d * d}, "T > "),
        "The projections cost O(B*T*d_model^2), the attention matmuls O(B*T^2*d_model); they are equal at "
        "T = 2*d_model = " + std::to_string(cross) + ". With T_q = " + std::to_string(Tq) + " and T_k = " +
        std::to_string(Tk) + " here, " + costRatioPhrase(c) + ". Short sequences are dominated by the projections; the T^2 term wins only for "
        "long ones.",
        n++));
  }
  return questions;
}

}  // namespace mhascope
